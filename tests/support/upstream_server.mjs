// A small upstream MCP server for the code-mode tests (issue #45), made with the official SDKs:
// the 2025-11-25 era with the v1 SDK (@modelcontextprotocol/sdk: a Server on a session-keeping
// StreamableHTTPServerTransport), the 2026-07-28 era with the v2 server SDK
// (@modelcontextprotocol/server: createMcpHandler, modern requests only). It requires
// `Authorization: Bearer <token>` (401 otherwise), listens on an ephemeral loopback port and
// prints "test upstream listening on http://127.0.0.1:PORT/mcp" as its first line of stdout.
// What it observes from its client goes, one JSON object per line, to the events file: a
// cancelled `hang` (with the reason), the error its `ask` got back, the MCP headers of each call.
//
//   node upstream_server.mjs --era 2025|2026 --token-file FILE [--events FILE] [--modules DIR]
//                            [--tls DIR]
//
// --tls: serve HTTPS with DIR/server.pem and DIR/server.key (tests/support/test_tls.py makes
// them, signed by a throwaway CA).
// --modules: the node_modules holding the SDKs (default: tests/e2e/node_modules).
// Tools: echo {message}, hang (answers only when cancelled), big (a 10 MB text), ask (asks its
// client for input: elicitation/create), ask_again (2026-07-28: an input_required result), fail (an isError result), change (adds the tool
// `added` and sends notifications/tools/list_changed), forget (drops every 2025-era session, as
// a restart would), headers {region} (region is mirrored into
// Mcp-Param-Region in 2026-07-28).
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const era = option("era", "2025");
const token = fs.readFileSync(option("token-file"), "utf8").trim();
const eventsFile = option("events", "");
const modules = option(
  "modules",
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../e2e/node_modules"),
);
const require = createRequire(path.join(modules, "noop.js"));

const record = (event) => {
  if (eventsFile) fs.appendFileSync(eventsFile, JSON.stringify(event) + "\n");
};

// The tool list, shared by every session: `change` adds to it.
const tools = [
  {
    name: "echo",
    description: "Echoes its message",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  },
  { name: "hang", description: "Never answers (until cancelled)", inputSchema: { type: "object" } },
  { name: "big", description: "A 10 MB answer", inputSchema: { type: "object" } },
  { name: "ask", description: "Asks its client for input", inputSchema: { type: "object" } },
  { name: "ask_again", description: "Asks for input the 2026 way", inputSchema: { type: "object" } },
  { name: "fail", description: "Always fails", inputSchema: { type: "object" } },
  { name: "change", description: "Adds a tool", inputSchema: { type: "object" } },
  { name: "forget", description: "Forgets every session", inputSchema: { type: "object" } },
  {
    name: "headers",
    description: "Reports the MCP headers it was called with",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" } },
    },
  },
];

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError } : {}) });

// The v2 SDK's builder of an input_required result (2026-07-28 only).
let inputRequired = null;

// `forget` drops every 2025-era session without telling its client (as a restart would).
let forgetSessions = () => {};

// One tools/call. `ask(request)` sends a request to the client and resolves with its result;
// `notify(notification)` sends a notification on the call's stream; `signal` aborts on cancel.
async function callTool(name, args, { signal, ask, notify, headers }) {
  switch (name) {
    case "echo":
      return text(`Echo: ${args?.message}`);
    case "headers":
      return {
        ...text("headers"),
        structuredContent: {
          method: headers["mcp-method"] ?? null,
          name: headers["mcp-name"] ?? null,
          region: headers["mcp-param-region"] ?? null,
          version: headers["mcp-protocol-version"] ?? null,
        },
      };
    case "hang":
      return await new Promise((resolve) => {
        const aborted = () => {
          record({ event: "hang_aborted", reason: String(signal.reason ?? "") });
          resolve(text("cancelled"));
        };
        if (signal.aborted) aborted();
        else signal.addEventListener("abort", aborted, { once: true });
      });
    case "big":
      return text("x".repeat(10 * 1000 * 1000));
    case "ask":
      try {
        await ask({
          method: "elicitation/create",
          params: {
            mode: "form",
            message: "What is your name?",
            requestedSchema: { type: "object", properties: { name: { type: "string" } } },
          },
        });
        record({ event: "elicitation_answered" });
        return text("answered");
      } catch (e) {
        record({ event: "elicitation_refused", message: String(e?.message ?? e) });
        return text(`the client refused: ${e?.message ?? e}`, true);
      }
    case "fail":
      return text("it failed on purpose", true);
    case "change":
      if (!tools.some((t) => t.name === "added"))
        tools.push({ name: "added", description: "Added by change", inputSchema: { type: "object" } });
      await notify({ method: "notifications/tools/list_changed" });
      return text("changed");
    case "added":
      return text("added works");
    case "ask_again":
      // 2026-07-28's way to ask (multi round-trip): an input_required result.
      if (!inputRequired) return text("asks only in the 2026-07-28 era", true);
      record({ event: "input_required_sent" });
      return inputRequired({
        inputRequests: {
          name: inputRequired.elicit({
            message: "What is your name?",
            requestedSchema: { type: "object", properties: { name: { type: "string" } } },
          }),
        },
      });
    case "forget":
      forgetSessions();
      return text("forgotten");
    default:
      throw new Error(`unknown tool ${name}`);
  }
}

function authorized(req) {
  return req.headers.authorization === `Bearer ${token}`;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

// ---- 2025-11-25: the v1 SDK, one Server and transport per session.
function legacyHandler() {
  const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
  const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const types = require("@modelcontextprotocol/sdk/types.js");
  const sessions = new Map();
  forgetSessions = () => sessions.clear();
  return async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? JSON.parse((await readBody(req)) || "null") : undefined;
    let transport = sessionId ? sessions.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      const server = new Server({ name: "test-upstream", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
      server.oninitialized = () => record({ event: "initialized" });
      server.setRequestHandler(types.ListToolsRequestSchema, async () => {
        record({ event: "tools_list" });
        return { tools };
      });
      server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) =>
        callTool(request.params.name, request.params.arguments, {
          signal: extra.signal,
          ask: (r) => extra.sendRequest(r, types.ElicitResultSchema),
          notify: (n) => extra.sendNotification(n),
          headers: extra.requestInfo?.headers ?? {},
        }),
      );
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => {
        record({ event: "session_closed" });
        sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  };
}

// ---- 2026-07-28: the v2 server SDK's per-request handler, modern requests only.
function modernHandler() {
  const sdk = require("@modelcontextprotocol/server");
  const { Server, createMcpHandler } = sdk;
  inputRequired = sdk.inputRequired;
  const handler = createMcpHandler(
    () => {
      const server = new Server({ name: "test-upstream", version: "2.0.0" }, { capabilities: { tools: { listChanged: true } } });
      server.setRequestHandler("tools/list", async () => {
        record({ event: "tools_list" });
        return { tools };
      });
      server.setRequestHandler("tools/call", async (request, ctx) =>
        callTool(request.params.name, request.params.arguments, {
          signal: ctx.mcpReq.signal,
          ask: (r) => ctx.mcpReq.send(r),
          notify: (n) => ctx.mcpReq.notify(n),
          headers: currentHeaders,
        }),
      );
      return server;
    },
    { legacy: "reject" },
  );
  let currentHeaders = {};
  return async (req, res) => {
    const body = await readBody(req);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    currentHeaders = { ...req.headers };
    const controller = new AbortController();
    // The client closing its response stream is the cancellation of 2026-07-28.
    res.on("close", () => controller.abort());
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === "POST" ? body : undefined,
      signal: controller.signal,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (!response.body) return res.end();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
      }
    } catch {
      // The client went away.
    }
    res.end();
  };
}

const handle = era === "2026" ? modernHandler() : legacyHandler();
const tlsDir = option("tls", "");
const serve = (listener) =>
  tlsDir
    ? https.createServer(
        {
          cert: fs.readFileSync(path.join(tlsDir, "server.pem")),
          key: fs.readFileSync(path.join(tlsDir, "server.key")),
        },
        listener,
      )
    : http.createServer(listener);
const server = serve(async (req, res) => {
  try {
    if (!authorized(req)) {
      record({ event: "unauthorized" });
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
      res.end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    record({ event: "request", method: req.method, port: req.socket.remotePort });
    await handle(req, res);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(e?.message ?? e));
  }
});
server.listen(0, "127.0.0.1", () => {
  const scheme = tlsDir ? "https" : "http";
  process.stdout.write(`test upstream listening on ${scheme}://127.0.0.1:${server.address().port}/mcp\n`);
});
process.on("SIGTERM", () => process.exit(0));
