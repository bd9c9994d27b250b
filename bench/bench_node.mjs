// What the Node benches share (bench/code_mode_bench.mjs, stdio_bench.mjs): their options, the
// official SDK loaded from tests/e2e's node_modules, and a process started and waited for until
// its stdout names its URL.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// `--name value` from the command line, else `fallback`.
export function option(name, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
}

// A module of tests/e2e's node_modules (npm ci there), by its package path.
const require = createRequire(path.join(root, "tests/e2e/node_modules", "noop.js"));
export const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

// `command` started; resolves once its stdout names an http://127.0.0.1:PORT/mcp URL.
export function startListening(command, argv, env = process.env) {
  const child = spawn(command, argv, { env, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (d) => {
      seen += d;
      const m = seen.match(/(http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) resolve({ child, url: m[1] });
    });
    child.on("exit", (code) => reject(new Error(`${command} exited with ${code}`)));
  });
}
