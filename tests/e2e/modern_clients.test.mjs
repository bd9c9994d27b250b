// End-to-end: clients of the 2026-07-28 protocol revision (stateless, no session) against the real
// gateway and sandboxes — the v2 TypeScript SDK client, the AI SDK's MCP client and the MCP
// Inspector CLI — plus the v2 client in its legacy (2025 session) mode, which must keep working.
// In the stateless era the sandbox is named by a handle: `execute` without `sandbox_id` makes a
// new sandbox and returns its handle in structuredContent.sandbox_id; later calls pass it back.
//
// Run with Node 22 (the AI SDK client and the Inspector need it): from tests/e2e,
//   node_modules/.bin/node --test modern_clients.test.mjs
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createMCPClient } from "@ai-sdk/mcp";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { startGateway, waitForProcess } from "./gateway.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const TOKEN = "e2e-token";
const MODERN = "2026-07-28";
let gateway;

// versionNegotiation: { pin: MODERN } speaks only 2026-07-28 (server/discover, no fallback);
// "auto" probes discover and falls back to initialize; "legacy" passes no versionNegotiation at
// all, the client's default: the 2025 initialize handshake with a session.
// `fetch` lets a test watch the HTTP responses under the client.
async function connect({ mode = { pin: MODERN }, token = TOKEN, url = gateway.url, fetch } = {}) {
  const options = mode === "legacy" ? {} : { versionNegotiation: { mode } };
  const client = new Client({ name: "sandgate-e2e-modern", version: "1.0.0" }, options);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    ...(fetch ? { fetch } : {}),
  });
  await client.connect(transport);
  return { client, transport };
}

const execute = (client, args, options) => client.callTool({ name: "execute", arguments: args }, options);
const endSandbox = (client, sandbox_id) =>
  client.callTool({ name: "end_sandbox", arguments: sandbox_id === undefined ? {} : { sandbox_id } });

// A call that ran in a handle-named sandbox must say which one, in structuredContent and in the
// text block (the JSON of structuredContent, for clients that only read text).
function handleOf(result) {
  assert.equal(result.isError, false, JSON.stringify(result));
  const handle = result.structuredContent.sandbox_id;
  assert.equal(typeof handle, "string");
  assert.ok(handle.length > 0);
  assert.equal(JSON.parse(result.content[0].text).sandbox_id, handle);
  return handle;
}

// The tool error for an ended, unknown or foreign handle tells the model how to recover.
function assertGoneHandleError(result) {
  assert.equal(result.isError, true, JSON.stringify(result));
  const text = result.content.map((c) => c.text ?? "").join("\n");
  assert.match(text, /ended|unknown/i);
  assert.match(text, /omit/i);
  assert.match(text, /sandbox_id/);
}

// Prints a line every 200 ms for 2 s: a client following the call sees each as it comes.
const TICKING = "import time\nfor i in range(10):\n    print('tick', i)\n    time.sleep(0.2)\n";

before(async () => {
  assert.ok(Number(process.versions.node.split(".")[0]) >= 22, "run with Node 22: node_modules/.bin/node --test");
  // --task-after 1: a call from a client that declares the tasks extension becomes a task after
  // 1 s (only the ext-tasks test below declares it).
  gateway = await startGateway(["--progress-interval", "1", "--task-after", "1"]);
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
});

describe("the v2 SDK client pinned to 2026-07-28", () => {
  test("negotiates the modern era and lists execute then end_sandbox", async () => {
    const { client } = await connect();
    assert.equal(client.getProtocolEra(), "modern");
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "end_sandbox"]);
    assert.ok(tools[0].inputSchema.properties.sandbox_id, "execute takes an optional sandbox_id");
    assert.ok(!(tools[0].inputSchema.required ?? []).includes("sandbox_id"));
    assert.ok(tools[1].inputSchema.properties.sandbox_id, "end_sandbox names the sandbox to end");
    await client.close();
  });

  test("a handle reaches the same sandbox again; no handle means a new sandbox", async () => {
    const { client } = await connect();
    const first = await execute(client, { code: "open('/work/note.txt','w').write('kept')" });
    const handle = handleOf(first);

    const again = await execute(client, { code: "cat /work/note.txt", language: "bash", sandbox_id: handle });
    assert.equal(handleOf(again), handle);
    assert.equal(again.structuredContent.stdout, "kept");

    // Stateless: nothing ties this call to the first, so it gets a sandbox of its own.
    const fresh = await execute(client, { code: "import os; print(os.listdir('/work'))" });
    const other = handleOf(fresh);
    assert.notEqual(other, handle);
    assert.equal(fresh.structuredContent.stdout, "[]\n");

    await endSandbox(client, handle);
    await endSandbox(client, other);
    await client.close();
  });

  test("variables persist in the handle's interpreter; a new handle starts empty", async () => {
    const { client } = await connect();
    const handle = handleOf(await execute(client, { code: "rows = [{'n': i, 'sq': i * i} for i in range(5)]" }));
    const use = await execute(client, { code: "sum(r['sq'] for r in rows)", sandbox_id: handle });
    assert.equal(handleOf(use), handle);
    assert.equal(use.structuredContent.stdout, "30\n");
    const js = await execute(client, { code: "const total = [1, 2, 3].reduce((a, b) => a + b); total", language: "javascript", sandbox_id: handle });
    assert.equal(js.structuredContent.stdout, "6\n");
    const jsAgain = await execute(client, { code: "total * 7", language: "javascript", sandbox_id: handle });
    assert.equal(jsAgain.structuredContent.stdout, "42\n");
    const elsewhere = await execute(client, { code: "print('rows' in globals())" });
    assert.equal(elsewhere.structuredContent.stdout, "False\n");
    await endSandbox(client, handle);
    await endSandbox(client, handleOf(elsewhere));
    await client.close();
  });

  test("a matplotlib figure left open comes back as image content", async () => {
    const { client } = await connect();
    const result = await execute(client, { code: "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2), dpi=64)\nplt.bar(['a', 'b'], [2, 3])" });
    const handle = handleOf(result);
    const images = result.content.filter((c) => c.type === "image");
    assert.equal(images.length, 1);
    assert.equal(images[0].mimeType, "image/png");
    const png = Buffer.from(images[0].data, "base64");
    assert.equal(png.toString("latin1", 1, 4), "PNG");
    assert.equal(png.readUInt32BE(16), 128);
    assert.equal(png.readUInt32BE(20), 128);
    assert.equal(result.structuredContent.images[0].bytes, png.length);
    await endSandbox(client, handle);
    await client.close();
  });

  test("closing the response stream cancels the call; the sandbox stays usable", { timeout: 90_000 }, async () => {
    const { client } = await connect();
    const handle = handleOf(await execute(client, { code: "open('/work/kept','w').write('1')" }));

    // A sandbox runs one call at a time, so the program's start is seen from the host instead
    // of through the same handle. timeout_seconds is far beyond this test's timeout: only the
    // cancel can end the program before the test gives up.
    const controller = new AbortController();
    const long = execute(
      client,
      {
        code: "touch /work/started; exec -a sandgate-e2e-stream-cancel-marker sleep 300",
        language: "bash",
        timeout_seconds: 300,
        sandbox_id: handle,
      },
      { signal: controller.signal },
    );
    await waitForProcess("sandgate-e2e-stream-cancel-marker 300");
    controller.abort("test cancels");
    await assert.rejects(long);

    // The next call with the handle runs only once the cancelled program is gone (otherwise it
    // waits behind it until the client's 60 s request timeout); it sees /work (both files) and
    // no `sleep 300` (by its marker name) left in the sandbox. (Programs run from a file, /code/cell-N.*, so this
    // checker's own command line cannot match.)
    const stillHeld = (e) => {
      throw new Error(`the call after the cancel did not complete; is the cancelled program still running? (${e.message})`);
    };
    const check = await execute(client, {
      code: [
        "import os",
        "left = []",
        "for p in os.listdir('/proc'):",
        "    if p.isdigit():",
        "        try: args = open(f'/proc/{p}/cmdline','rb').read().split(b'\\0')",
        "        except OSError: continue",
        "        if args[:2] == [b'sandgate-e2e-stream-cancel-marker', b'300']: left.append(p)",
        "print(sorted(os.listdir('/work')), left)",
      ].join("\n"),
      sandbox_id: handle,
    }).catch(stillHeld);
    assert.equal(handleOf(check), handle);
    assert.equal(check.structuredContent.stdout, "['kept', 'started'] []\n");
    await endSandbox(client, handle);
    await client.close();
  });

  test("end_sandbox ends it; the ended handle is a tool error saying to omit sandbox_id", async () => {
    const { client } = await connect();
    const handle = handleOf(await execute(client, { code: "print(1)" }));
    const ended = await endSandbox(client, handle);
    assert.equal(ended.isError, false, JSON.stringify(ended));
    assert.match(ended.content[0].text, /end/i);
    assertGoneHandleError(await execute(client, { code: "print(1)", sandbox_id: handle }));
    await client.close();
  });

  test("a handle the gateway never issued is the same tool error; so is a malformed one", async () => {
    const { client } = await connect();
    // The shape of a real handle ("sbx_" and 128 random bits in hex), but never issued.
    const neverIssued = `sbx_${"0123456789abcdef".repeat(2)}`;
    assertGoneHandleError(await execute(client, { code: "print(1)", sandbox_id: neverIssued }));
    const malformed = await execute(client, { code: "print(1)", sandbox_id: "no such sandbox" });
    assert.equal(malformed.isError, true, JSON.stringify(malformed));
    assert.match(malformed.content[0].text, /omit/i);
    assert.match(malformed.content[0].text, /sandbox_id/);
    await client.close();
  });

  test("progress notifications arrive while a long call runs", async () => {
    const { client } = await connect();
    const seen = [];
    const result = await execute(
      client,
      { code: "sleep 3; echo done", language: "bash" },
      { onprogress: (p) => seen.push(p) },
    );
    assert.equal(result.structuredContent.stdout, "done\n");
    assert.ok(seen.length >= 1, "at least one progress notification before the result");
    await endSandbox(client, handleOf(result));
    await client.close();
  });

  test("a call's output arrives live in its progress notifications, before the result", async () => {
    const { client } = await connect();
    let handle;
    for (const fresh of [false, true]) {
      const messages = [];
      const args = { code: TICKING, fresh, ...(handle ? { sandbox_id: handle } : {}) };
      const result = await execute(client, args, { onprogress: (p) => messages.push(p.message ?? "") });
      handle = handleOf(result);
      const shown = messages.filter((m) => !m.startsWith("running for "));
      assert.ok(shown.length >= 3, `several output notifications (fresh: ${fresh}): ${JSON.stringify(messages)}`);
      let at = 0;
      const text = shown.join("");
      for (let i = 0; i < 10; i++) {
        const found = text.indexOf(`tick ${i}\n`, at);
        assert.ok(found >= at, `tick ${i} shown live, in order: ${JSON.stringify(text)}`);
        at = found;
      }
      assert.equal(result.structuredContent.stdout, Array.from({ length: 10 }, (_, i) => `tick ${i}\n`).join(""));
    }
    await endSandbox(client, handle);
    await client.close();
  });

  test("no session id is ever minted; a quick call is plain JSON, a long one with progress streams", async () => {
    const seen = []; // [method, Mcp-Session-Id response header, content type]
    const watch = async (url, init) => {
      const response = await fetch(url, init);
      const method = JSON.parse(init.body).method;
      seen.push([method, response.headers.get("mcp-session-id"), response.headers.get("content-type")]);
      return response;
    };
    const { client } = await connect({ fetch: watch });
    await client.listTools();
    const quick = await execute(client, { code: "print(1)" });
    const handle = handleOf(quick);
    const typeOfLastCall = () => seen.filter(([m]) => m === "tools/call").at(-1)[2];
    assert.match(typeOfLastCall(), /^application\/json/);
    await execute(client, { code: "sleep 2.5", language: "bash", sandbox_id: handle }, { onprogress: () => {} });
    assert.match(typeOfLastCall(), /^text\/event-stream/);
    assert.deepEqual(seen.filter(([, id]) => id !== null), [], "no response carries Mcp-Session-Id");
    assert.deepEqual([...new Set(seen.map(([m]) => m))], ["server/discover", "tools/list", "tools/call"]);
    await endSandbox(client, handle);
    await client.close();
  });

  test("files go in, come back, and a large one is read through its resource link", async () => {
    const { client } = await connect();
    const made = await execute(client, {
      code: "open('big.txt','w').write(open('seed.txt').read() * 100000)",
      language: "python",
      files: [{ path: "seed.txt", content: "abc\n" }],
      return_files: ["seed.txt", "big.txt"],
    });
    const handle = handleOf(made);
    assert.equal(made.content.find((c) => c.type === "resource").resource.text, "abc\n");
    const link = made.content.find((c) => c.type === "resource_link");
    assert.equal(link.size, 400000);
    const read = await client.readResource({ uri: link.uri });
    assert.equal(read.contents[0].text.length, 400000);
    await endSandbox(client, handle);
    await assert.rejects(client.readResource({ uri: link.uri }, { cacheMode: "bypass" }), /Resource not found/);
    await client.close();
  });

  test("a wrong token is refused with 401 (pinned: no other era is tried)", async () => {
    await assert.rejects(connect({ token: "not-the-token" }), /401/);
  });
});

describe("the v2 SDK client in other modes", () => {
  test("auto mode negotiates the modern era", async () => {
    const { client } = await connect({ mode: "auto" });
    assert.equal(client.getProtocolEra(), "modern");
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    const result = await execute(client, { code: "print(6*7)" });
    assert.equal(result.structuredContent.stdout, "42\n");
    await endSandbox(client, handleOf(result));
    await client.close();
  });

  test("auto mode with a wrong token gets the 401, not a fallback to the 2025 handshake", async () => {
    await assert.rejects(connect({ mode: "auto", token: "not-the-token" }), /401/);
  });

  test("legacy mode (the default) still gets a 2025 session whose files persist without a handle", async () => {
    const { client, transport } = await connect({ mode: "legacy" });
    assert.equal(client.getProtocolEra(), "legacy");
    assert.equal(client.getNegotiatedProtocolVersion(), "2025-11-25");
    assert.ok(transport.sessionId, "a session id was minted");
    const wrote = await execute(client, { code: "echo session > /work/s.txt", language: "bash" });
    assert.equal(wrote.isError, false);
    assert.equal("sandbox_id" in wrote.structuredContent, false, "the session's own sandbox has no handle");
    const read = await execute(client, { code: "cat /work/s.txt", language: "bash" });
    assert.equal(read.structuredContent.stdout, "session\n");
    await transport.terminateSession();
    await client.close();
  });

  test("a 2025 session can run in a handle's sandbox by naming it, and its own sandbox is untouched", async () => {
    const modern = await connect();
    const handle = handleOf(await execute(modern.client, { code: "echo made-by-modern > /work/h.txt", language: "bash" }));
    const { client, transport } = await connect({ mode: "legacy" });
    const viaHandle = await execute(client, { code: "cat /work/h.txt", language: "bash", sandbox_id: handle });
    assert.equal(handleOf(viaHandle), handle);
    assert.equal(viaHandle.structuredContent.stdout, "made-by-modern\n");
    const own = await execute(client, { code: "ls -A /work", language: "bash" });
    assert.equal(own.structuredContent.stdout, "");
    assert.equal("sandbox_id" in own.structuredContent, false);
    await endSandbox(client, handle);
    assertGoneHandleError(await execute(modern.client, { code: "print(1)", sandbox_id: handle }));
    await transport.terminateSession();
    await client.close();
    await modern.client.close();
  });

  test("in a 2025 session end_sandbox without sandbox_id gives the session a fresh sandbox", async () => {
    const { client, transport } = await connect({ mode: "legacy" });
    await execute(client, { code: "echo x > /work/old.txt", language: "bash" });
    const ended = await endSandbox(client);
    assert.equal(ended.isError, false, JSON.stringify(ended));
    const next = await execute(client, { code: "ls -A /work", language: "bash" });
    assert.equal(next.isError, false);
    assert.equal(next.structuredContent.stdout, "");
    await transport.terminateSession();
    await client.close();
  });
});

// The official tasks extension client (@modelcontextprotocol/ext-tasks) over the v2 client. Its
// 2026-07-28 path sends each request through a host-owned dispatcher: this one frames it, sets
// the routing headers, and gives up after 2 s — a client whose requests time out long before the
// program ends.
function rawDispatchTo(url, token, timeoutMs) {
  let nextId = 0;
  return async (request) => {
    const params = request.params ?? {};
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${token}`,
      "MCP-Protocol-Version": MODERN,
      "Mcp-Method": request.method,
    };
    if (request.method === "tools/call") headers["Mcp-Name"] = params.name;
    if (request.method.startsWith("tasks/")) headers["Mcp-Name"] = params.taskId;
    const res = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++nextId, ...request }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream"))
      return text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)))
        .find((m) => m.id !== undefined && (m.result || m.error));
    return JSON.parse(text);
  };
}

test("the ext-tasks client runs a program longer than its request timeout as a task", async () => {
  const { client } = await connect();
  const session = createTaskSessionFromClient(client, {
    endpointId: "sandgate-e2e",
    rawDispatch: rawDispatchTo(gateway.url, TOKEN, 2000),
    v2RequestFraming: {
      protocolVersion: MODERN,
      clientInfo: { name: "sandgate-e2e-tasks", version: "1.0.0" },
      clientCapabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } },
    },
  });
  try {
    const execution = await session.callTool("execute", {
      code: "import time\ntime.sleep(4)\nprint('task done')",
      timeout_seconds: 30,
    });
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result.structuredContent.stdout, "task done\n");
  } finally {
    await session.close();
    await client.close();
  }
});

test("a handle from one tenant is refused to another tenant", async () => {
  // Possession of a handle is not authorization: the gateway checks (handle, tenant) per call.
  const dir = await mkdtemp(path.join(os.tmpdir(), "sandgate-tenants-"));
  const sha = (t) => createHash("sha256").update(t).digest("hex");
  const tokens = path.join(dir, "tokens");
  await writeFile(tokens, `${sha("token-a")} tenant-a\n${sha("token-b")} tenant-b\n`, { mode: 0o600 });
  const twoTenants = await startGateway(["--token-file", tokens], {});
  try {
    const a = await connect({ token: "token-a", url: twoTenants.url });
    const b = await connect({ token: "token-b", url: twoTenants.url });
    const handle = handleOf(await execute(a.client, { code: "echo secret > /work/a.txt", language: "bash" }));
    assertGoneHandleError(await execute(b.client, { code: "cat /work/a.txt", language: "bash", sandbox_id: handle }));
    const notEnded = await endSandbox(b.client, handle);
    assert.equal(notEnded.isError, true, JSON.stringify(notEnded));
    // B's attempts did not end it: A still reaches its file.
    const mine = await execute(a.client, { code: "cat /work/a.txt", language: "bash", sandbox_id: handle });
    assert.equal(mine.structuredContent.stdout, "secret\n");
    await a.client.close();
    await b.client.close();
  } finally {
    assert.equal(await twoTenants.stop(), 0);
    await rm(dir, { recursive: true, force: true });
  }
});

test("@ai-sdk/mcp speaks 2026-07-28 and round-trips a handle", async () => {
  const client = await createMCPClient({
    transport: { type: "http", url: gateway.url.href, headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  assert.equal(client.initializeResult.protocolVersion, MODERN);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["execute", "end_sandbox"]);
  const first = await client.callTool({ name: "execute", arguments: { code: "open('/work/ai.txt','w').write('sdk')" } });
  const handle = handleOf(first);
  const back = await client.callTool({ name: "execute", arguments: { code: "cat /work/ai.txt", language: "bash", sandbox_id: handle } });
  assert.equal(back.structuredContent.stdout, "sdk");
  const ended = await client.callTool({ name: "end_sandbox", arguments: { sandbox_id: handle } });
  assert.equal(ended.isError, false);
  await client.close();
});

describe("the MCP Inspector CLI", () => {
  // The Inspector needs Node >= 22.19 and a writable HOME (it stores client and OAuth state there).
  const node22 = path.join(here, "node_modules/.bin/node");
  const inspector = path.join(here, "node_modules/.bin/mcp-inspector");
  async function inspect(era, ...args) {
    const home = await mkdtemp(path.join(os.tmpdir(), "inspector-home-"));
    try {
      const { stdout } = await promisify(execFile)(
        node22,
        [inspector, "--cli", gateway.url.href, "--transport", "http", "--header", `Authorization: Bearer ${TOKEN}`,
          "--protocol-era", era, "--format", "json", ...args],
        { env: { HOME: home, PATH: process.env.PATH } },
      );
      return JSON.parse(stdout).result;
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  for (const era of ["modern", "legacy"]) {
    test(`--protocol-era ${era}: tools/list shows execute; tools/call execute prints the program's stdout`, async () => {
      const list = await inspect(era, "--method", "tools/list");
      assert.ok(list.tools.some((t) => t.name === "execute"));
      const call = await inspect(era, "--method", "tools/call", "--tool-name", "execute", "--tool-arg", "code=print(6*7)");
      assert.equal(call.isError, false);
      assert.equal(call.structuredContent.stdout, "42\n");
    });
  }
});
