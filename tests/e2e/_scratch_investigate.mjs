import http from "node:http";
import { once } from "node:events";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as h from "./_scratch_helpers.mjs";
import { startGateway } from "./gateway.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TV2 } from "@modelcontextprotocol/client";

const STATIC = "e2e-static-token";
const proxyPort = await h.freePort();
const gwPort = await h.freePort();
const resource = `http://127.0.0.1:${proxyPort}/mcp`;
const as = await h.startAuthorizationServer(resource);
h.setIssuer(as);
const asLog = [];
as.provider.use(async (ctx, next) => { const a = ctx.get("authorization"); await next(); asLog.push(`${ctx.method} ${ctx.path} ${ctx.status} auth=${a ? (a.includes(STATIC) ? "STATIC" : a.split(" ")[0]) : "-"}`); });
const gw = await startGateway(["--listen", `127.0.0.1:${gwPort}`, "--oauth-issuer", as.url, "--resource-url", resource, "--oauth-scopes", "sandgate:execute"], { SANDGATE_TOKEN: STATIC });
h.setGateway(gw);
const log = [];
const proxy = http.createServer((req, res) => {
  const a = req.headers.authorization;
  const kind = !a ? "-" : a === `Bearer ${STATIC}` ? "STATIC" : /^Bearer ey/.test(a) ? "JWT" : a.startsWith("Bearer ") ? "BADSTATIC" : "other";
  const up = http.request({ host: "127.0.0.1", port: gwPort, method: req.method, path: req.url, headers: req.headers }, (r) => {
    log.push(`${req.method} ${req.url} ${r.statusCode} auth=${kind}${req.headers["mcp-method"] ? " " + req.headers["mcp-method"] : ""}`);
    res.writeHead(r.statusCode, r.headers); r.pipe(res);
  });
  req.pipe(up);
}).listen(proxyPort, "127.0.0.1");
await once(proxy, "listening");
const url = new URL(resource);
async function scenario(name, fn) {
  log.length = 0; asLog.length = 0;
  let outcome;
  try { outcome = "OK " + (await fn() ?? ""); } catch (e) { outcome = `ERR ${e.constructor.name}: ${String(e.message).slice(0, 160)}`; }
  console.log(`\n### ${name}\n  -> ${outcome}\n  RS: ${log.join("\n      ")}\n  AS: ${asLog.join("\n      ")}`);
}
const hdr = (t) => ({ Authorization: `Bearer ${t}` });
const call = async (c) => (await c.callTool({ name: "execute", arguments: { code: "print(6*7)" } })).structuredContent.stdout.trim();

for (const tok of [STATIC, "revoked-static"]) {
  await scenario(`v1 requestInit only, token=${tok}`, async () => { const c = new Client({ name: "x", version: "1" }); await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: hdr(tok) } })); const r = await call(c); await c.close(); return r; });
  for (const mode of [{ pin: "2026-07-28" }, "auto", "legacy"]) {
    await scenario(`v2 requestInit only (${JSON.stringify(mode)}), token=${tok}`, async () => { const c = new ClientV2({ name: "x", version: "1" }, mode === "legacy" ? {} : { versionNegotiation: { mode } }); await c.connect(new TV2(url, { requestInit: { headers: hdr(tok) } })); const r = await call(c); await c.close(); return r; });
  }
  await scenario(`v1 requestInit + authProvider, token=${tok}`, async () => {
    const o = new h.InMemoryOAuthClient("v1both"); const t = new StreamableHTTPClientTransport(url, { requestInit: { headers: hdr(tok) }, authProvider: o });
    const c = new Client({ name: "x", version: "1" });
    try { await c.connect(t); } catch (e) { if (!o.callbacks.length) throw e; await t.finishAuth(o.callbacks[0].get("code")); const c2 = new Client({ name: "x", version: "1" }); await c2.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: hdr(tok) }, authProvider: o })); const r = await call(c2); await c2.close(); return "after oauth " + r; }
    const r = await call(c); await c.close(); return r;
  });
  await scenario(`v2 requestInit + authProvider (pin modern), token=${tok}`, async () => {
    const o = new h.InMemoryOAuthClient("v2both"); const mk = () => new TV2(url, { requestInit: { headers: hdr(tok) }, authProvider: o }); const t = mk();
    const c = new ClientV2({ name: "x", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    try { await c.connect(t); } catch (e) { if (!o.callbacks.length) throw e; await t.finishAuth(o.callbacks[0]); const c2 = new ClientV2({ name: "x", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } }); await c2.connect(mk()); const r = await call(c2); await c2.close(); return "after oauth " + r; }
    const r = await call(c); await c.close(); return r;
  });
  if (Number(process.versions.node.split(".")[0]) >= 22) {
    const { createMCPClient } = await import("@ai-sdk/mcp");
    await scenario(`ai-sdk headers only, token=${tok}`, async () => { const c = await createMCPClient({ transport: { type: "http", url: resource, headers: hdr(tok) } }); const r = await c.callTool({ name: "execute", arguments: { code: "print(6*7)" } }); await c.close(); return r.structuredContent.stdout.trim(); });
    for (const era of ["modern", "legacy"]) {
      await scenario(`inspector cli --header (${era}), token=${tok}`, async () => {
        const home = await mkdtemp(path.join(os.tmpdir(), "insp-"));
        try {
          const { stdout, stderr } = await promisify(execFile)("node_modules/.bin/node", ["node_modules/.bin/mcp-inspector", "--cli", resource, "--transport", "http", "--header", `Authorization: Bearer ${tok}`, "--protocol-era", era, "--format", "json", "--method", "tools/call", "--tool-name", "execute", "--tool-arg", "code=print(6*7)"], { env: { HOME: home, PATH: process.env.PATH }, timeout: 30000 });
          return JSON.parse(stdout).result.structuredContent.stdout.trim();
        } catch (e) { throw new Error(`exit ${e.code} ${e.stderr?.slice(0, 400)} ${e.stdout?.slice(0, 300)}`); } finally { await rm(home, { recursive: true, force: true }); }
      });
    }
  }
}
proxy.closeAllConnections(); proxy.close();
await gw.stop(); await as.stop();
