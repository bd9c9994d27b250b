// Starts the real sandgate binary on a free loopback port for a test, and stops it after.
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const binary = process.env.SANDGATE_BINARY ?? path.resolve(here, "../../build/sandgate");

export async function startGateway(args = [], env = { SANDGATE_TOKEN: "e2e-token" }) {
  // Without the pool of ready sandboxes unless a test asks for it (a later --pool-size wins):
  // the suites start many gateways side by side on a small machine.
  const child = spawn(binary, ["--listen", "127.0.0.1:0", "--log-level", "warn", "--pool-size", "0", ...args], {
    env: { PATH: "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let buffered = "";
  const url = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`sandgate exited with ${code} before listening`)));
    child.stdout.on("data", (chunk) => {
      buffered += chunk;
      const match = buffered.match(/listening on (\S+)/);
      if (match) resolve(match[1]);
    });
  });
  // Ready means a probe sandbox has run a program.
  const base = url.replace(/\/mcp$/, "");
  for (let i = 0; i < 200; i++) {
    const ready = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url: new URL(url),
    base,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      return code;
    },
  };
}

// Waits until a process whose command line is exactly `cmdline` (arguments joined by spaces)
// runs on this host (`running` true) or no longer does: a test waits for the state it needs,
// not for a time a loaded machine may not keep. Sandboxed programs are host processes too;
// tests give theirs distinctive names (bash's `exec -a NAME`).
export async function waitForProcess(cmdline, running = true, limitMs = 60_000) {
  const { readdir, readFile } = await import("node:fs/promises");
  const deadline = Date.now() + limitMs;
  for (;;) {
    let found = false;
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const text = await readFile(`/proc/${entry}/cmdline`, "latin1").catch(() => "");
      if (text.replace(/\0$/, "").replaceAll("\0", " ") === cmdline) {
        found = true;
        break;
      }
    }
    if (found === running) return;
    if (Date.now() > deadline) throw new Error(`"${cmdline}" still ${running ? "absent" : "running"} after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
