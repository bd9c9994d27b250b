#!/usr/bin/env node
// Code mode (issue #45): one tool call made by sandboxed code through the gateway, against the
// same call made by the official SDK client directly to the upstream — side by side in one run,
// rounds alternated, reported as ratios. The upstream is @modelcontextprotocol/server-everything
// (its `echo`), on loopback; through the gateway the call is timed inside the sandbox around each
// `sandgate_tools` call (Python and JavaScript), 200 calls in one execute call. Run on an idle
// machine:
//
//   node bench/code_mode_bench.mjs --sandgate build-release/sandgate [--calls 200] [--rounds 3]
//                                  [--out DIR]
//
// Needs tests/e2e's node_modules (npm ci there). Writes DIR/code_mode.md and DIR/code_mode.json
// (default bench/results).
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { load, option, root, startListening as start } from "./bench_node.mjs";

const sandgate = path.resolve(option("sandgate", path.join(root, "build-release/sandgate")));
const calls = Number(option("calls", "200"));
const rounds = Number(option("rounds", "3"));
const out = path.resolve(option("out", path.join(root, "bench/results")));
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function connect(url, token) {
  const client = new Client({ name: "code-mode-bench", version: "1" });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const stats = (ms) => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p90: at(0.9), mean: s.reduce((a, b) => a + b, 0) / s.length };
};

// The SDK client's own calls, each timed.
async function direct(client) {
  for (let i = 0; i < 20; i++) await client.callTool({ name: "echo", arguments: { message: "w" } });
  const ms = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await client.callTool({ name: "echo", arguments: { message: `m${i}` } });
    ms.push(performance.now() - t);
  }
  return ms;
}

const PYTHON = (n) => `import json, time, sandgate_tools as t
for i in range(20):
    t.everything.echo(message='w')
ms = []
for i in range(${n}):
    s = time.perf_counter()
    t.everything.echo(message='m%d' % i)
    ms.append((time.perf_counter() - s) * 1000)
print(json.dumps(ms))
`;
const JAVASCRIPT = (n) => `const t = require('sandgate_tools');
(async () => {
  for (let i = 0; i < 20; i++) await t.everything.echo({message: 'w'});
  const ms = [];
  for (let i = 0; i < ${n}; i++) {
    const s = performance.now();
    await t.everything.echo({message: 'm' + i});
    ms.push(performance.now() - s);
  }
  console.log(JSON.stringify(ms));
})();
`;

async function through(client, language) {
  const code = language === "python" ? PYTHON(calls) : JAVASCRIPT(calls);
  const r = await client.callTool({ name: "execute", arguments: { code, language, timeout_seconds: 300 } });
  const stdout = r.structuredContent?.stdout ?? "";
  if (r.isError || !stdout.trim()) throw new Error(`execute failed: ${JSON.stringify(r).slice(0, 500)}`);
  return JSON.parse(stdout.trim().split("\n").pop());
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "sandgate-code-mode-bench-"));
const upstream = await start(process.execPath, [path.join(root, "tests/support/everything_server.mjs")]);
const token = "code-mode-bench-token";
fs.writeFileSync(path.join(work, "tokens"),
                 `${crypto.createHash("sha256").update(token).digest("hex")} bench upstreams=everything\n`,
                 { mode: 0o600 });
fs.writeFileSync(path.join(work, "upstreams.json"), JSON.stringify({ everything: { url: upstream.url } }));
const gateway = await start(sandgate, ["--listen", "127.0.0.1:0", "--token-file", path.join(work, "tokens"),
                                       "--upstreams", path.join(work, "upstreams.json"), "--log-level", "warn",
                                       "--pool-size", "0"]);
const results = { calls, rounds, direct: [], python: [], javascript: [] };
try {
  const directClient = await connect(upstream.url);
  const gatewayClient = await connect(gateway.url, token);
  for (let r = 0; r < rounds; r++) {
    results.direct.push(...(await direct(directClient)));
    results.python.push(...(await through(gatewayClient, "python")));
    results.javascript.push(...(await through(gatewayClient, "javascript")));
  }
  await directClient.close();
  await gatewayClient.close();
} finally {
  gateway.child.kill("SIGTERM");
  upstream.child.kill("SIGTERM");
}

const d = stats(results.direct);
const summary = {};
for (const lang of ["python", "javascript"]) {
  const g = stats(results[lang]);
  summary[lang] = { ...g, ratio_median: g.median / d.median, extra_ms_median: g.median - d.median };
}
summary.direct = d;
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "code_mode.json"), JSON.stringify({ summary, results }, null, 1));
const f = (x) => x.toFixed(3);
const signed = (x) => (x >= 0 ? "+" : "") + f(x);
const md = `# Code mode: a tool call from the sandbox against the SDK client's own (issue #45)

\`node bench/code_mode_bench.mjs\`: server-everything's \`echo\` on loopback; the official SDK
client (v1, 2025-11-25) calling it directly, against sandboxed code calling it through the
gateway (\`sandgate_tools\`: the channel's unix socket, then the gateway's MCP client), ${calls}
calls per round in one execute call, ${rounds} rounds alternated, each call timed where it is made.
Milliseconds per call.

| path | median | p90 | mean | median ratio to direct | median extra |
|---|---|---|---|---|---|
| SDK client, direct | ${f(d.median)} | ${f(d.p90)} | ${f(d.mean)} | 1 | 0 |
| Python in the sandbox | ${f(summary.python.median)} | ${f(summary.python.p90)} | ${f(summary.python.mean)} | ${f(summary.python.ratio_median)} | ${signed(summary.python.extra_ms_median)} |
| JavaScript in the sandbox | ${f(summary.javascript.median)} | ${f(summary.javascript.p90)} | ${f(summary.javascript.mean)} | ${f(summary.javascript.ratio_median)} | ${signed(summary.javascript.extra_ms_median)} |

Target (issue #45): at most 1.5× the direct call, or within +2 ms.
`;
fs.writeFileSync(path.join(out, "code_mode.md"), md);
console.log(md);
fs.rmSync(work, { recursive: true, force: true });
