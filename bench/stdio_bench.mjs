#!/usr/bin/env node
// stdio against HTTP (issue #47, target: no slower): the official TypeScript SDK client making
// the same warm execute calls over its StdioClientTransport spawning `sandgate --stdio` and over
// its StreamableHTTPClientTransport to a `sandgate` on loopback with a token. Both gateways run
// the same binary with the same settings (the pool off, logs at warn), each session is warmed
// first (its sandbox and interpreter started), then rounds alternate which transport goes first.
// Each call is timed by the client around callTool. Two calls: bash `true` and a Python `pass`.
// Run on an idle machine:
//
//   node bench/stdio_bench.mjs --sandgate build-release/sandgate [--calls 200] [--rounds 10]
//                              [--out DIR]
//
// Needs tests/e2e's node_modules (npm ci there). Writes DIR/stdio.md and DIR/stdio.json (default
// bench/results). Every call must succeed (exit code 0) or the bench fails: its smoke run in
// tests/CMakeLists.txt asserts only that, never a timing.
import crypto from "node:crypto";
import { setMaxListeners } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { load, option, root, startListening } from "./bench_node.mjs";

const sandgate = path.resolve(option("sandgate", path.join(root, "build-release/sandgate")));
const calls = Number(option("calls", "200"));
const rounds = Number(option("rounds", "10"));
const out = path.resolve(option("out", path.join(root, "bench/results")));
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js");

// The settings both gateways share.
const common = ["--pool-size", "0", "--log-level", "warn"];
const env = { PATH: "/usr/bin:/bin" };

// `sandgate` on loopback: its first stdout line names its URL.
const startHttp = (tokenFile) =>
  startListening(sandgate, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, ...common], env);

// The execute calls, and a ping: the transport's own cost, with no sandbox in it.
const WORKLOADS = {
  "bash true": { code: "true", language: "bash" },
  "python pass": { code: "pass", language: "python" },
  "ping (no call)": null,
};

async function call(client, workload) {
  if (!WORKLOADS[workload]) return void (await client.ping());
  const r = await client.callTool({ name: "execute", arguments: WORKLOADS[workload] });
  if (r.isError || r.structuredContent?.exit_code !== 0)
    throw new Error(`${workload} failed: ${JSON.stringify(r).slice(0, 500)}`);
}

async function timed(client, workload) {
  const ms = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await call(client, workload);
    ms.push(performance.now() - t);
  }
  return ms;
}

const stats = (ms) => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p90: at(0.9), mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
};

const loadBefore = os.loadavg()[0];
const work = fs.mkdtempSync(path.join(os.tmpdir(), "sandgate-stdio-bench-"));
const token = crypto.randomBytes(24).toString("hex");
const tokenFile = path.join(work, "tokens");
fs.writeFileSync(tokenFile, `${crypto.createHash("sha256").update(token).digest("hex")} bench\n`,
                 { mode: 0o600 });
const http = await startHttp(tokenFile);
// Its stderr (the isolation report, warnings) is shown only if the bench fails.
const stdioTransport = new StdioClientTransport({ command: sandgate, args: ["--stdio", ...common], env,
                                                  stderr: "pipe" });
const stdioLog = [];
stdioTransport.stderr.on("data", (d) => stdioLog.push(d));
const clients = {
  stdio: new Client({ name: "stdio-bench", version: "1" }),
  http: new Client({ name: "stdio-bench", version: "1" }),
};
const samples = {};
for (const transport of Object.keys(clients))
  for (const workload of Object.keys(WORKLOADS)) samples[`${transport}/${workload}`] = [];
try {
  await clients.stdio.connect(stdioTransport);
  const httpTransport = new StreamableHTTPClientTransport(
      new URL(http.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await clients.http.connect(httpTransport);
  // The SDK passes its transport-wide abort signal to every POST's fetch, which leaves a listener
  // on it per request (thousands here, and Node warns at 1,500). Per-round medians show no drift
  // from it; the warning is silenced, the client left as it is.
  if (httpTransport._abortController) setMaxListeners(0, httpTransport._abortController.signal);
  // Warm: each session's sandbox and both interpreters started, and the paths exercised.
  for (const client of Object.values(clients))
    for (const workload of Object.keys(WORKLOADS))
      for (let i = 0; i < 10; i++) await call(client, workload);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["stdio", "http"] : ["http", "stdio"];
    for (const workload of Object.keys(WORKLOADS))
      for (const transport of order)
        samples[`${transport}/${workload}`].push(...(await timed(clients[transport], workload)));
  }
} catch (e) {
  process.stderr.write(Buffer.concat(stdioLog));
  throw e;
} finally {
  await clients.stdio.close().catch(() => {});
  await clients.http.close().catch(() => {});
  http.child.kill("SIGTERM");
  fs.rmSync(work, { recursive: true, force: true });
}

const summary = {};
for (const workload of Object.keys(WORKLOADS)) {
  const s = stats(samples[`stdio/${workload}`]);
  const h = stats(samples[`http/${workload}`]);
  // Each round's p50 too: a drift over the run (a leak on either side) would show here.
  const rounds_p50 = (t) => Array.from({ length: rounds },
                                       (_, r) => stats(samples[`${t}/${workload}`].slice(r * calls, (r + 1) * calls)).p50);
  summary[workload] = { stdio: s, http: h, ratio_p50: s.p50 / h.p50, ratio_p90: s.p90 / h.p90,
                        stdio_rounds_p50: rounds_p50("stdio"), http_rounds_p50: rounds_p50("http") };
}
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "stdio.json"),
                 JSON.stringify({ calls, rounds, cpus: os.cpus().length,
                                 load: [loadBefore, os.loadavg()[0]], summary }, null, 1));
const f = (x) => x.toFixed(3);
const rows = Object.entries(summary)
  .map(([w, s]) => [
    `| ${w} | HTTP | ${f(s.http.p50)} | ${f(s.http.p90)} | ${f(s.http.mean)} | 1 | 1 |`,
    `| ${w} | stdio | ${f(s.stdio.p50)} | ${f(s.stdio.p90)} | ${f(s.stdio.mean)} | ${f(s.ratio_p50)} | ${f(s.ratio_p90)} |`,
  ].join("\n"))
  .join("\n");
const md = `# stdio against HTTP: a warm call (issue #47)

\`node bench/stdio_bench.mjs\`: the official TypeScript SDK client (v1) making the same warm
\`execute\` calls over its StdioClientTransport spawning \`sandgate --stdio\` and over its
StreamableHTTPClientTransport to \`sandgate\` on loopback with a bearer token; the same binary and
settings (\`--pool-size 0 --log-level warn\`), one warm session each, ${calls} calls per transport
and workload per round, ${rounds} rounds alternating which transport goes first, each call timed
by the client around \`callTool\`. ${os.cpus().length} CPUs; 1-minute load average ${loadBefore.toFixed(2)} before
the run, ${os.loadavg()[0].toFixed(2)} after (other work on the machine shows here). Milliseconds per call.

| call | transport | p50 | p90 | mean | p50 ratio to HTTP | p90 ratio to HTTP |
|---|---|---|---|---|---|---|
${rows}

Target (issue #47): stdio no slower than HTTP (ratio ≤ 1).
`;
fs.writeFileSync(path.join(out, "stdio.md"), md);
console.log(md);
