// @modelcontextprotocol/server-everything (pinned in tests/e2e/package.json) serving Streamable
// HTTP at /mcp, for the code-mode tests (issue #45), on a free loopback port: it prints
// "server-everything listening on http://127.0.0.1:PORT/mcp" as its first line of stdout once
// the port answers (its own output goes to stderr, so that line is the first).
//
//   node everything_server.mjs [--modules DIR]   (default: tests/e2e/node_modules)
import net from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const i = args.indexOf("--modules");
const modules =
  i >= 0 ? args[i + 1] : path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../e2e/node_modules");

// server-everything reads its port from $PORT: a free one, found by listening on port 0. Another
// process could take it in between; the wait below then fails and the test says so.
const port = await new Promise((resolve, reject) => {
  const probe = net.createServer();
  probe.once("error", reject);
  probe.listen(0, "127.0.0.1", () => {
    const { port: p } = probe.address();
    probe.close(() => resolve(p));
  });
});
process.env.PORT = String(port);
console.log = (...a) => console.error(...a);
await import(pathToFileURL(path.join(modules, "@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js")).href);

const deadline = Date.now() + 30000;
for (;;) {
  const up = await new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => (s.end(), resolve(true)));
    s.once("error", () => resolve(false));
  });
  if (up) break;
  if (Date.now() > deadline) {
    console.error("server-everything did not listen within 30 s");
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 50));
}
process.stdout.write(`server-everything listening on http://127.0.0.1:${port}/mcp\n`);
