// The official SDK clients across replicas: a session created on replica B, then used through
// replica A by a client that only knows A's URL and the session id, works unchanged; and a
// 2026-07-28 (stateless) sandbox handle made on one replica works through the others.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { startGateway } from "./gateway.mjs";

const TOKEN = "e2e-token";
const headers = { Authorization: `Bearer ${TOKEN}` };
let a, b, c;

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

before(async () => {
  const [pa, pb, pc] = [await freePort(), await freePort(), await freePort()];
  const peers = `a=http://127.0.0.1:${pa},b=http://127.0.0.1:${pb},c=http://127.0.0.1:${pc}`;
  a = await startGateway(["--listen", `127.0.0.1:${pa}`, "--replica-name", "a", "--peers", peers]);
  b = await startGateway(["--listen", `127.0.0.1:${pb}`, "--replica-name", "b", "--peers", peers]);
  c = await startGateway(["--listen", `127.0.0.1:${pc}`, "--replica-name", "c", "--peers", peers]);
});
after(async () => {
  await a.stop();
  await b.stop();
  await c.stop();
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

// A 2026-07-28 client has no session: each request may land on any replica (a load balancer
// with no stickiness). The handle names the replica that holds the sandbox, and the gateway
// forwards a request carrying it there.
test("a sandbox handle made on replica A works through replicas B and C (v2 client, 2026-07-28)", async () => {
  const modern = async (replica) => {
    const client = new ClientV2({ name: "e2e-modern", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new TransportV2(replica.url, { requestInit: { headers } }));
    assert.equal(client.getProtocolEra(), "modern");
    return client;
  };
  const execute = (client, args) => client.callTool({ name: "execute", arguments: args });

  const onA = await modern(a);
  const made = await execute(onA, { code: "echo from-a > /work/f", language: "bash" });
  assert.equal(made.isError, false, JSON.stringify(made));
  const handle = made.structuredContent.sandbox_id;
  assert.match(handle, /^a\./);

  for (const replica of [b, c]) {
    const client = await modern(replica);
    const read = await execute(client, { code: "cat /work/f", language: "bash", sandbox_id: handle });
    assert.equal(read.isError, false, JSON.stringify(read));
    assert.equal(read.structuredContent.stdout, "from-a\n");
    assert.equal(read.structuredContent.sandbox_id, handle);
    await client.close();
  }

  const onC = await modern(c);
  const ended = await onC.callTool({ name: "end_sandbox", arguments: { sandbox_id: handle } });
  assert.equal(ended.isError, false, JSON.stringify(ended));
  // Ended on A (its owner), so A itself now refuses the handle.
  const gone = await execute(onA, { code: "print(1)", sandbox_id: handle });
  assert.equal(gone.isError, true);
  assert.match(gone.content[0].text, /sandbox_id/);
  await onC.close();
  await onA.close();
});
