// The official SDK client through a gateway restart: one Client, one transport, one session;
// the gateway is stopped (SIGTERM) and started again on the same port with the same
// --state-dir and --replica-name, and the client's next call finds its session and its files,
// told once that the sandbox was resumed. No re-initialize, no 404.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startGateway } from "./gateway.mjs";

const TOKEN = "e2e-token";
const headers = { Authorization: `Bearer ${TOKEN}` };

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

test("an SDK client's session continues across a gateway restart with its files", async () => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "sandgate-e2e-restart-"));
  const port = await freePort();
  const args = ["--listen", `127.0.0.1:${port}`, "--state-dir", path.join(stateDir, "state"),
                "--replica-name", "r1"];
  let gateway = await startGateway(args);
  const transport = new StreamableHTTPClientTransport(gateway.url, { requestInit: { headers } });
  const client = new Client({ name: "e2e-restart", version: "1.0.0" });
  try {
    await client.connect(transport);
    const session = transport.sessionId;
    await client.callTool({ name: "execute", arguments: { code: "echo before > /work/f", language: "bash" } });
    assert.equal(await gateway.stop(), 0);

    gateway = await startGateway(args);
    const after = await client.callTool({ name: "execute", arguments: { code: "cat /work/f", language: "bash" } });
    assert.equal(transport.sessionId, session);
    assert.equal(after.isError, false);
    assert.equal(after.structuredContent.stdout, "before\n");
    assert.match(after.content[0].text, /resumed from hibernation: files in \/work are kept/);
    const again = await client.callTool({ name: "execute", arguments: { code: "echo again", language: "bash" } });
    assert.equal(again.structuredContent.resumed, undefined);
  } finally {
    await client.close().catch(() => {});
    await gateway.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
});
