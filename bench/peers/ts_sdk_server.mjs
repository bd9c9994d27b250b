// The benchmark's peer: what a user would otherwise pick. A Streamable HTTP MCP server on the
// official TypeScript SDK — one McpServer and transport per session, as the SDK's examples do —
// whose `execute` tool runs code with child_process.spawn and no isolation at all. It keeps the
// same output contract as sandgate (1 MiB of stdout+stderr kept, the rest read and discarded)
// so the output flood compares like with like.
//
//   node ts_sdk_server.mjs <port> <token>   prints "... listening on http://127.0.0.1:PORT/mcp"
import { randomUUID, timingSafeEqual, createHash } from "node:crypto";
import { spawn } from "node:child_process";
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const port = Number(process.argv[2] ?? 0);
const tokenDigest = createHash("sha256").update(process.argv[3] ?? "").digest();
const OUTPUT_MAX = 1 << 20;
const RUNTIMES = {
  bash: (code) => ["/usr/bin/bash", ["-c", code]],
  python: (code) => ["/usr/bin/python3", ["-c", code]],
  javascript: (code) => ["/usr/bin/node", ["-e", code]],
};
const SCRUBBED_ENV = { PATH: "/usr/bin:/bin", HOME: "/tmp", LANG: "C.UTF-8" };

function runProgram({ code, language, timeout_seconds = 60 }) {
  return new Promise((resolve) => {
    const [file, args] = RUNTIMES[language](code);
    const child = spawn(file, args, { env: SCRUBBED_ENV, stdio: ["ignore", "pipe", "pipe"] });
    const kept = { stdout: [], stderr: [] };
    let keptBytes = 0;
    let truncated = false;
    const collect = (name) => (chunk) => {
      const room = OUTPUT_MAX - keptBytes;
      if (room <= 0) return void (truncated = true);
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
      truncated ||= piece.length < chunk.length;
      kept[name].push(piece);
      keptBytes += piece.length;
    };
    child.stdout.on("data", collect("stdout"));
    child.stderr.on("data", collect("stderr"));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout_seconds * 1000);
    child.on("close", (exitCode, signal) => {
      clearTimeout(timer);
      const result = {
        exit_code: exitCode ?? -1,
        signal: signal ?? null,
        stdout: Buffer.concat(kept.stdout).toString("utf8"),
        stderr: Buffer.concat(kept.stderr).toString("utf8"),
        truncated,
      };
      resolve({
        content: [{ type: "text", text: JSON.stringify(result) }],
        structuredContent: result,
      });
    });
  });
}

function newServer() {
  const server = new McpServer({ name: "ts-sdk-peer", version: "1.0.0" });
  server.registerTool(
    "execute",
    {
      description: "Run code (bash, python, javascript) on the host, without isolation.",
      inputSchema: {
        code: z.string(),
        language: z.enum(["bash", "python", "javascript"]),
        timeout_seconds: z.number().int().min(1).max(300).optional(),
      },
    },
    async (args) => runProgram(args),
  );
  return server;
}

function authorized(req) {
  const header = req.headers.authorization ?? "";
  const token = header.startsWith("Bearer ") ? header.slice(7) : "";
  return timingSafeEqual(createHash("sha256").update(token).digest(), tokenDigest);
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const transports = new Map();

const httpServer = http.createServer(async (req, res) => {
  try {
    if (req.url !== "/mcp") return void res.writeHead(404).end();
    if (!authorized(req)) return void res.writeHead(401).end();
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (req.method === "POST") {
      const body = await readJson(req);
      if (!transport && !sessionId && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: true,
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => transports.delete(transport.sessionId);
        await newServer().connect(transport);
      }
      if (!transport) return void res.writeHead(sessionId ? 404 : 400).end();
      return void (await transport.handleRequest(req, res, body));
    }
    if (!transport) return void res.writeHead(sessionId ? 404 : 400).end();
    await transport.handleRequest(req, res);
  } catch {
    if (!res.headersSent) res.writeHead(400).end();
  }
});

httpServer.keepAliveTimeout = 60_000;
httpServer.listen(port, "127.0.0.1", () => {
  console.log(`ts-sdk-peer listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
});
process.on("SIGTERM", () => process.exit(0));
