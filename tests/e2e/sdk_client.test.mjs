// End-to-end: the official MCP TypeScript SDK client against the real gateway and sandboxes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startGateway, waitForProcess } from "./gateway.mjs";

const TOKEN = "e2e-token";
let gateway;

async function connect(token = TOKEN) {
  const transport = new StreamableHTTPClientTransport(gateway.url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "sandgate-e2e", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

const run = (client, args, options) =>
  client.callTool({ name: "execute", arguments: args }, undefined, options);

// Prints a line every 200 ms for 2 s: a client following the call sees each as it comes.
const TICKING = "import time\nfor i in range(10):\n    print('tick', i)\n    time.sleep(0.2)\n";
const EXPECTED_TICKS = Array.from({ length: 10 }, (_, i) => `tick ${i}\n`).join("");
function assertTicksInOrder(text) {
  let at = 0;
  for (let i = 0; i < 10; i++) {
    const found = text.indexOf(`tick ${i}\n`, at);
    assert.ok(found >= at, `tick ${i} shown live, in order: ${JSON.stringify(text)}`);
    at = found;
  }
}

before(async () => {
  gateway = await startGateway(["--progress-interval", "1"]);
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
});

describe("the official SDK client", () => {
  test("lists execute, with its schemas, then end_sandbox", async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "end_sandbox"]);
    assert.ok(tools[0].outputSchema);
    assert.equal(tools[0].annotations.openWorldHint, false);
    await client.close();
  });

  test("runs python, javascript and bash", async () => {
    const { client } = await connect();
    const py = await run(client, { code: "print(sum(range(10)))" });
    assert.equal(py.isError, false);
    assert.equal(py.structuredContent.stdout, "45\n");
    const js = await run(client, { code: "console.log([1,2,3].map(x => x * 2).join(','))", language: "javascript" });
    assert.equal(js.structuredContent.stdout, "2,4,6\n");
    const sh = await run(client, { code: "seq 3 | paste -sd+ | bc 2>/dev/null || echo $((1+2+3))", language: "bash" });
    assert.equal(sh.structuredContent.stdout.trim(), "6");
    await client.close();
  });

  test("a file written in one call is read in the next; another session cannot see it", async () => {
    const a = await connect();
    await run(a.client, { code: "open('/work/shared.txt','w').write('only mine')" });
    const back = await run(a.client, { code: "cat /work/shared.txt", language: "bash" });
    assert.equal(back.structuredContent.stdout, "only mine");
    const b = await connect();
    const other = await run(b.client, { code: "import os; print(os.listdir('/work'))" });
    assert.equal(other.structuredContent.stdout, "[]\n");
    await a.client.close();
    await b.client.close();
  });

  test("a matplotlib plot comes back as image content, in the interpreter and in a fresh process", async () => {
    const { client } = await connect();
    const plot = "import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2), dpi=100)\nplt.plot([1, 3, 2])\nplt.show()\nprint('plotted')";
    for (const fresh of [false, true]) {
      const result = await run(client, { code: plot, fresh });
      assert.equal(result.isError, false, JSON.stringify(result.structuredContent));
      assert.equal(result.structuredContent.stdout, "plotted\n");
      const images = result.content.filter((c) => c.type === "image");
      assert.equal(images.length, 1, `fresh: ${fresh}`);
      assert.equal(images[0].mimeType, "image/png");
      const png = Buffer.from(images[0].data, "base64");
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.equal(png.toString("latin1", 12, 16), "IHDR");
      assert.equal(png.readUInt32BE(16), 300);
      assert.equal(png.readUInt32BE(20), 200);
      // structuredContent lists it without its bytes.
      assert.deepEqual(result.structuredContent.images, [
        { name: "figure-1.png", mimeType: "image/png", width: 300, height: 200, bytes: png.length },
      ]);
    }
  });

  test("files go in before the code runs and come back as image, text and a link read with readResource", async () => {
    const { client } = await connect();
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
    const result = await run(client, {
      code: "data = open('in.csv').read()\nopen('out.txt','w').write(data.upper())\nopen('big.bin','wb').write(b'x' * 300000)",
      files: [{ path: "in.csv", content: "a,b\n1,2\n" }, { path: "/work/pic.png", content: png, encoding: "base64" }],
      return_files: ["out.txt", "pic.png", "big.bin"],
    });
    assert.equal(result.isError, false, JSON.stringify(result));
    const text = result.content.find((c) => c.type === "resource");
    assert.equal(text.resource.text, "A,B\n1,2\n");
    const image = result.content.find((c) => c.type === "image");
    assert.equal(image.mimeType, "image/png");
    assert.equal(image.data, png);
    const link = result.content.find((c) => c.type === "resource_link");
    assert.equal(link.size, 300000);
    assert.deepEqual(result.structuredContent.files.map((f) => f.returned), ["text", "image", "link"]);
    const read = await client.readResource({ uri: link.uri });
    assert.equal(read.contents[0].text.length, 300000);  // text: it is valid UTF-8
    await client.callTool({ name: "end_sandbox", arguments: {} });
    await assert.rejects(client.readResource({ uri: link.uri }), /Resource not found/);
    await client.close();
  });

  test("a non-zero exit is a normal result; a timeout is a tool error", async () => {
    const { client } = await connect();
    const failed = await run(client, { code: "import sys; print('bad', file=sys.stderr); sys.exit(3)" });
    assert.equal(failed.isError, false);
    assert.equal(failed.structuredContent.exit_code, 3);
    assert.equal(failed.structuredContent.stderr, "bad\n");
    const slow = await run(client, { code: "echo partial; sleep 30", language: "bash", timeout_seconds: 1 });
    assert.equal(slow.isError, true);
    assert.equal(slow.content[0].text, "Stopped after 1 s, its timeout.");
    assert.match(slow.content[1].text, /partial/);
    await client.close();
  });

  test("python and javascript keep their variables between calls, like notebook cells", async () => {
    const { client } = await connect();
    const define = await run(client, { code: "import statistics\ndata = [3, 1, 4, 1, 5]\ndef spread(xs):\n    return max(xs) - min(xs)" });
    assert.equal(define.isError, false);
    const use = await run(client, { code: "print(statistics.mean(data))\nspread(data)" });
    assert.equal(use.structuredContent.stdout, "2.8\n4\n");
    assert.equal(use.structuredContent.state_lost, undefined);
    const js1 = await run(client, { code: "const seen = new Map([['a', 1]]); let n = 2", language: "javascript" });
    assert.equal(js1.isError, false);
    const js2 = await run(client, { code: "const n2 = await Promise.resolve(n * 21); seen.set('b', n2); seen", language: "javascript" });
    assert.equal(js2.structuredContent.stdout, "Map(2) { 'a' => 1, 'b' => 42 }\n");
    // A fresh process sees none of it; the interpreter still has it afterwards.
    const fresh = await run(client, { code: "print('data' in globals())", fresh: true });
    assert.equal(fresh.structuredContent.stdout, "False\n");
    await client.close();
  });

  test("an exception keeps the state; an exit, an ignored interrupt and the memory limit lose it, and say so", async () => {
    const { client } = await connect();
    await run(client, { code: "kept = 'yes'" });
    const raised = await run(client, { code: "raise ValueError('bad value')" });
    assert.equal(raised.isError, false);
    assert.equal(raised.structuredContent.exit_code, 1);
    assert.match(raised.structuredContent.stderr, /ValueError: bad value/);
    assert.equal((await run(client, { code: "kept" })).structuredContent.stdout, "'yes'\n");
    const timeout = await run(client, { code: "import time\ntime.sleep(30)", timeout_seconds: 1 });
    assert.equal(timeout.isError, true);
    assert.match(timeout.content[0].text, /interrupted and keeps its state/);
    assert.equal((await run(client, { code: "kept" })).structuredContent.stdout, "'yes'\n");
    const exited = await run(client, { code: "import sys\nsys.exit(7)" });
    assert.equal(exited.isError, false);
    assert.equal(exited.structuredContent.exit_code, 7);
    assert.equal(exited.structuredContent.state_lost, "the interpreter exited with code 7");
    assert.match(exited.content[0].text, /restarted/);
    assert.equal((await run(client, { code: "print('kept' in globals())" })).structuredContent.stdout, "False\n");
    await run(client, { code: "kept = 'again'" });
    const stuck = await run(client, { code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", timeout_seconds: 1 });
    assert.equal(stuck.isError, true);
    assert.match(stuck.structuredContent.state_lost, /did not stop/);
    await run(client, { code: "kept = 'once more'" });
    const oom = await run(client, { code: "x = bytearray(2 << 30)\nx[::4096] = b'a' * (len(x) // 4096)" });
    assert.equal(oom.structuredContent.oom_killed, true);
    assert.equal(oom.structuredContent.state_lost, "the memory limit killed the interpreter");
    assert.equal((await run(client, { code: "print('kept' in globals())" })).structuredContent.stdout, "False\n");
    await client.close();
  });

  test("invalid arguments are a tool error saying what is wrong", async () => {
    const { client } = await connect();
    const bad = await run(client, { code: "print(1)", language: "cobol" });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /language/);
    await client.close();
  });

  test("progress notifications stream while a long call runs", async () => {
    const { client } = await connect();
    const seen = [];
    const result = await run(client, { code: "sleep 2.5; echo done", language: "bash" }, { onprogress: (p) => seen.push(p.progress) });
    assert.equal(result.structuredContent.stdout, "done\n");
    assert.ok(seen.length >= 1, "at least one progress notification");
    await client.close();
  });

  test("a call's output arrives live in its progress notifications, before the result", async () => {
    const { client } = await connect();
    for (const fresh of [false, true]) {
      const messages = [];
      const result = await run(
        client,
        { code: TICKING, fresh },
        { onprogress: (p) => messages.push(p.message ?? "") },
      );
      const shown = messages.filter((m) => !m.startsWith("running for "));
      assert.ok(shown.length >= 3, `several output notifications (fresh: ${fresh}): ${JSON.stringify(messages)}`);
      assertTicksInOrder(shown.join(""));
      assert.equal(result.structuredContent.stdout, EXPECTED_TICKS);
    }
    await client.close();
  });

  test("aborting a call cancels it and kills its program", async () => {
    const { client } = await connect();
    const controller = new AbortController();
    const marker = "sandgate-e2e-abort-marker 30";
    const call = run(
      client,
      { code: "touch /work/started; (exec -a sandgate-e2e-abort-marker sleep 30); touch /work/finished", language: "bash" },
      { signal: controller.signal },
    );
    await waitForProcess(marker);
    controller.abort("test");
    await assert.rejects(call);
    // The program is killed (not left to finish): gone long before its 30 s.
    await waitForProcess(marker, false, 20_000);
    const files = await run(client, { code: "ls /work", language: "bash" });
    assert.equal(files.structuredContent.stdout, "started\n");
    await client.close();
  });

  test("after terminateSession the session is gone (404)", async () => {
    const { client, transport } = await connect();
    await run(client, { code: "print(1)" });
    const id = transport.sessionId;
    await transport.terminateSession();
    const res = await fetch(gateway.url, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Session-Id": id },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(res.status, 404);
  });

  test("a program longer than the client's request timeout runs as a task and its result comes back", async () => {
    // The client gives up on any request after 3 s; the program takes 6 s. As a task the call is
    // answered at once, polled with tasks/get and fetched with tasks/result, each quick.
    const { client } = await connect();
    const stream = client.experimental.tasks.callToolStream(
      { name: "execute", arguments: { code: "import time\ntime.sleep(6)\nprint('long done')", timeout_seconds: 30 } },
      undefined,
      { task: { ttl: 120000 }, timeout: 3000 },
    );
    const seen = [];
    let result;
    for await (const message of stream) {
      seen.push(message.type);
      if (message.type === "result") result = message.result;
      if (message.type === "error") assert.fail(String(message.error));
    }
    assert.equal(seen[0], "taskCreated");
    assert.ok(seen.filter((t) => t === "taskStatus").length >= 1, seen.join(","));
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result.structuredContent.stdout, "long done\n");
    const { tasks } = await client.experimental.tasks.listTasks();
    assert.ok(tasks.some((t) => t.status === "completed"));
    await client.close();
  });

  test("a wrong token is refused with 401", async () => {
    await assert.rejects(connect("not-the-token"), /401|Unauthorized/);
  });
});
