// End-to-end: the official MCP TypeScript SDK's stdio client transport spawning `sandgate
// --stdio` (issue #47), as Claude Code, Claude Desktop, Cursor and VS Code start a stdio server.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { binary } from "./gateway.mjs";

// The `sandgate --stdio` processes of this build still running (its sandboxes' supervisors die
// with it: a parent-death signal).
function sandgateProcesses() {
  const out = execFileSync("/usr/bin/pgrep", ["-f", "-x", `${binary} --stdio.*`], { encoding: "utf8" }).trim();
  return out ? out.split("\n") : [];
}
function sandgateProcessesOrNone() {
  try {
    return sandgateProcesses();
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

test("the SDK's stdio client: calls keep state, a non-zero exit is a result, closing ends it", async () => {
  const stderr = [];
  const transport = new StdioClientTransport({
    command: binary,
    args: ["--stdio", "--pool-size", "0", "--log-level", "info"],
    env: { PATH: "/usr/bin:/bin" },
    stderr: "pipe",
  });
  transport.stderr.on("data", (chunk) => stderr.push(chunk.toString()));
  const client = new Client({ name: "sandgate-e2e-stdio", version: "1.0.0" });
  await client.connect(transport);
  const pid = transport.pid;
  assert.ok(pid > 0);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["execute", "end_sandbox"]);
  const first = await client.callTool({ name: "execute", arguments: { code: "x = 41\nprint('set')" } });
  assert.equal(first.isError, false, JSON.stringify(first));
  const second = await client.callTool({ name: "execute", arguments: { code: "print(x + 1)" } });
  assert.equal(second.structuredContent.stdout, "42\n");
  const exited = await client.callTool({ name: "execute", arguments: { code: "exit 3", language: "bash" } });
  assert.equal(exited.isError, false);
  assert.equal(exited.structuredContent.exit_code, 3);

  // Closing the client closes sandgate's stdin: the gateway and its sandbox go.
  await client.close();
  for (let i = 0; i < 400; i++) {
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.throws(() => process.kill(pid, 0), "the gateway has exited");
  const log = stderr.join("");
  assert.match(log, /mode: /, "the isolation report is on stderr");
  assert.match(log, /"event":"stdio_closed"/);
  // No stdio gateway of this build is left.
  const leftover = sandgateProcessesOrNone().filter((p) => Number(p) !== process.pid);
  assert.deepEqual(leftover, [], `processes left: ${leftover}`);
});
