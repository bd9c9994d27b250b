// The container image as a stdio server (issue #47), for the VM stage, where a container engine
// runs: the official SDK's stdio client transport spawns COMMAND exactly as Claude Code, Claude
// Desktop, Cursor and VS Code spawn a configured server (`podman run -i --rm … --stdio`), then
//   node stdio_container_check.mjs COMMAND [ARGS...]
// checks: initialize and tools/list answered; two execute calls share the sandbox (a Python
// variable and a file in /work); a non-zero exit is a normal result; no network in the sandbox;
// stdout carries nothing but protocol (the SDK reports any other line as an error); the
// isolation report is on stderr; closing the client ends the container's process.
// Prints PASS/FAIL per check and exits non-zero when any failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
let failed = 0;
const check = (what, ok, detail = "") => {
  ok = Boolean(ok);
  console.log(`${ok ? "PASS" : "FAIL"}: ${what}${ok || !detail ? "" : ` (${detail})`}`);
  if (!ok) failed++;
};

const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
const stderr = [];
transport.stderr.on("data", (d) => stderr.push(d.toString()));
const client = new Client({ name: "sandgate-stdio-container-check", version: "1.0.0" });
const errors = [];
client.onerror = (e) => errors.push(String(e?.message ?? e));
// Under software emulation a first sandbox takes many seconds.
const slow = { timeout: 300_000 };
const run = async (code, language = "python") => {
  const r = await client.callTool({ name: "execute", arguments: { code, language, timeout_seconds: 60 } },
                                  undefined, slow);
  return { ...(r.structuredContent ?? {}), isError: r.isError, text: r.content?.[0]?.text ?? "" };
};

try {
  await client.connect(transport, slow);
  check("initialize is answered over stdin/stdout", client.getServerVersion()?.name);
  const { tools } = await client.listTools(undefined, slow);
  check("tools/list names execute", tools.some((t) => t.name === "execute"), JSON.stringify(tools.map((t) => t.name)));
  const first = await run("x = 41\nopen('/work/f', 'w').write('kept')\nprint('set')");
  check("a call runs", first.isError === false && first.stdout === "set\n", JSON.stringify(first).slice(0, 300));
  const second = await run("print(x + 1, open('/work/f').read())");
  check("the next call has its variable and its file", second.stdout === "42 kept\n", JSON.stringify(second).slice(0, 300));
  const exited = await run("echo out; exit 3", "bash");
  check("a non-zero exit is a result", exited.isError === false && exited.exit_code === 3, JSON.stringify(exited).slice(0, 300));
  const net = await run(
    "import socket\ntry:\n    socket.create_connection(('10.0.2.2', 80), timeout=3)\n    print('connected')\n" +
      "except OSError as e:\n    print('refused', e.errno)");
  check("no network in the sandbox", net.stdout?.startsWith("refused"), JSON.stringify(net).slice(0, 300));
} catch (e) {
  check("the session ran", false, e.message);
}
const pid = transport.pid;
await client.close();
let gone = false;
for (let i = 0; i < 600 && !gone; i++) {
  try {
    process.kill(pid, 0);
    await new Promise((r) => setTimeout(r, 100));
  } catch {
    gone = true;
  }
}
check("closing the client ends the container's process", gone);
check("stdout carried nothing but protocol", errors.length === 0, errors.join("; ").slice(0, 300));
const log = stderr.join("");
check("the isolation report is on stderr, mode full", /^mode: full/m.test(log), log.slice(0, 600));
console.log(log.split("\n").filter((l) => /^(mode|lacking):/.test(l)).map((l) => `  ${l}`).join("\n"));
console.log(`stdio container checks: ${failed} failed`);
process.exit(failed ? 1 : 0);
