// End-to-end: the v2 TypeScript SDK client over stdio, spawning `sandgate --stdio` (issue #47),
// in each way it negotiates: pinned to 2026-07-28 (server/discover, a sandbox handle passed back),
// "auto", and its legacy default (the 2025 initialize handshake, a session).
// Node 22, as modern_clients.test.mjs: from tests/e2e, node_modules/.bin/node --test modern_stdio.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { binary } from "./gateway.mjs";

for (const mode of [{ pin: "2026-07-28" }, "auto", "legacy"]) {
  test(`the v2 client over stdio, negotiation ${JSON.stringify(mode)}: state kept between calls`, async () => {
    const transport = new StdioClientTransport({
      command: binary,
      args: ["--stdio", "--pool-size", "0", "--log-level", "warn"],
      env: { PATH: "/usr/bin:/bin" },
      stderr: "ignore",
    });
    const client = new Client({ name: "sandgate-e2e-v2-stdio", version: "1.0.0" },
      mode === "legacy" ? {} : { versionNegotiation: { mode } });
    await client.connect(transport);
    const first = await client.callTool({ name: "execute", arguments: { code: "x = 41\nprint('set')" } });
    assert.equal(first.isError, false, JSON.stringify(first));
    // 2026-07-28 names the sandbox by the handle the result returns; a 2025 session has its own.
    const handle = first.structuredContent.sandbox_id;
    assert.equal(Boolean(handle), mode !== "legacy");
    const second = await client.callTool({
      name: "execute",
      arguments: { code: "print(x + 1)", ...(handle ? { sandbox_id: handle } : {}) },
    });
    assert.equal(second.structuredContent.stdout, "42\n");
    const pid = transport.pid;
    await client.close();
    for (let i = 0; i < 400; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return; // the gateway exited when its stdin closed
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail("sandgate --stdio still runs after the client closed");
  });
}
