// The official SDK client across replicas: a session created on replica B, then used through
// replica A by a client that only knows A's URL and the session id, works unchanged.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startGateway } from "./gateway.mjs";

const TOKEN = "e2e-token";
const headers = { Authorization: `Bearer ${TOKEN}` };
let a, b;

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

before(async () => {
  const [pa, pb] = [await freePort(), await freePort()];
  const peers = `a=http://127.0.0.1:${pa},b=http://127.0.0.1:${pb}`;
  a = await startGateway(["--listen", `127.0.0.1:${pa}`, "--replica-name", "a", "--peers", peers]);
  b = await startGateway(["--listen", `127.0.0.1:${pb}`, "--replica-name", "b", "--peers", peers]);
});
after(async () => {
  await a.stop();
  await b.stop();
});

test("a session made on replica B is used through replica A by the SDK client", async () => {
  const onB = new StreamableHTTPClientTransport(b.url, { requestInit: { headers } });
  const first = new Client({ name: "e2e-b", version: "1.0.0" });
  await first.connect(onB);
  assert.match(onB.sessionId, /^b\./);
  await first.callTool({ name: "execute", arguments: { code: "echo from-b > /work/f", language: "bash" } });

  // Same session, other replica: the SDK resumes a known session id on a new transport.
  const onA = new StreamableHTTPClientTransport(a.url, { requestInit: { headers }, sessionId: onB.sessionId });
  const second = new Client({ name: "e2e-a", version: "1.0.0" });
  await second.connect(onA);
  const read = await second.callTool({ name: "execute", arguments: { code: "cat /work/f", language: "bash" } });
  assert.equal(read.structuredContent.stdout, "from-b\n");
  const { tools } = await second.listTools();
  assert.equal(tools[0].name, "execute");
  await onA.terminateSession();
  await first.close();
});
