// Acceptance checks of a running gateway through the official SDK client, for deployments the
// test suite does not start itself (the VM stage's pods and units):
//   node pod_check.mjs URL TOKEN            the acceptance checks in one session
//   node pod_check.mjs URL TOKEN pressure   two sessions that together outgrow the memory the
//                                           sandboxes share: a sandbox program must be the one
//                                           killed, and the gateway must go on serving
//   node pod_check.mjs URL TOKEN keep       a session that writes a file to /work and is left
//                                           open; prints `session=ID`
//   node pod_check.mjs URL TOKEN resume ID  that session, after the pod was replaced: the same
//                                           session, its file, told once it was resumed
// Prints PASS/FAIL per check and exits non-zero when any failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, mode = "checks", resumeId] = process.argv.slice(2);
let failed = 0;
const check = (what, ok, detail = "") => {
  ok = Boolean(ok);
  console.log(`${ok ? "PASS" : "FAIL"}: ${what}${ok || !detail ? "" : ` (${detail})`}`);
  if (!ok) failed++;
};

// With `sessionId` the client carries on with that session (no initialize), as an SDK client
// does whose gateway was restarted under it.
async function session(sessionId = undefined) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    sessionId,
  });
  const client = new Client({ name: "sandgate-pod-check", version: "1.0.0" });
  await client.connect(transport);
  const run = async (code, language = "python", timeout = 60) => {
    const r = await client.callTool({ name: "execute", arguments: { code, language, timeout_seconds: timeout } }, undefined, {
      timeout: 300_000,
    });
    return { ...(r.structuredContent ?? {}), isError: r.isError, text: r.content?.[0]?.text ?? "" };
  };
  const end = async () => {
    await transport.terminateSession();
    await client.close();
  };
  return { run, end, id: () => transport.sessionId };
}

const finish = () => {
  console.log(`pod checks: ${failed} failed`);
  process.exit(failed ? 1 : 0);
};

if (mode === "keep") {
  const s = await session();
  const wrote = await s.run("echo kept-across-pods > /work/kept", "bash");
  check("the file is written", wrote.isError === false && wrote.exit_code === 0, JSON.stringify(wrote).slice(0, 300));
  console.log(`session=${s.id()}`);
  finish();
}

if (mode === "resume") {
  const s = await session(resumeId);
  // The session id is the one given (only initialize sets another): an unknown one is a 404,
  // which throws here.
  const read = await s.run("cat /work/kept", "bash");
  check("the session's file is back", read.stdout === "kept-across-pods\n", JSON.stringify(read).slice(0, 300));
  check("told that its sandbox was resumed with its files",
    /resumed from hibernation: files in \/work are kept/.test(read.text), read.text.slice(0, 300));
  const next = await s.run("echo again", "bash");
  check("told only once", next.stdout === "again\n" && !/resumed from hibernation/.test(next.text),
    next.text.slice(0, 300));
  await s.end();
  finish();
}

if (mode === "pressure") {
  // Each program grows to 1000 MiB in 50 MiB steps, touching every page; two of them do not fit
  // a budget below 2000 MiB, so the kernel must kill one inside the sandboxes' cgroup.
  const grow = "import time\nheld = []\nfor _ in range(20):\n held.append(bytearray(50 << 20))\n time.sleep(0.2)\nprint('grew')";
  const sessions = await Promise.all([session(), session()]);
  const results = await Promise.all(sessions.map((s) => s.run(grow, "python", 240)));
  console.log(JSON.stringify(results.map(({ stdout, oom_killed, isError, text }) => ({ stdout, oom_killed, isError, text: text.slice(0, 200) }))));
  check("a sandbox program was the one killed", results.some((r) => r.oom_killed === true));
  check("every call was answered as a result, not a gateway failure", results.every((r) => r.isError === false));
  const after = await sessions[0].run("print('still here')");
  check("the gateway serves the next call", after.stdout === "still here\n", JSON.stringify(after).slice(0, 300));
  for (const s of sessions) await s.end();
  finish();
}

const { run, end } = await session();

const np = await run("import numpy; print(int(numpy.arange(4).sum()))");
check("python with numpy runs", np.stdout === "6\n", JSON.stringify(np).slice(0, 400));
await run("echo kept > /work/f", "bash");
check("/work is kept between calls", (await run("cat /work/f", "bash")).stdout === "kept\n");
const net = await run(
  "import socket\ntry:\n socket.create_connection(('10.0.2.2', 80), 3); print('open')\nexcept OSError: print('blocked')",
);
check("no network", net.stdout === "blocked\n", net.stdout);
const shadow = await run("cat /etc/shadow 2>&1; id -u", "bash");
check("host files stay out of reach", !(shadow.stdout ?? "root:").includes("root:") && shadow.stdout.trim().endsWith("1000"), shadow.stdout);
const bomb = await run("b = bytearray(3 << 30)\nprint(len(b))");
check("the memory limit holds (oom_killed)", bomb.oom_killed === true && bomb.isError === false, JSON.stringify(bomb).slice(0, 300));
// The call times out, which ends its whole process tree (background forks included).
const forks = await run(":(){ :|:& };: ; sleep 60", "bash", 5);
check("a fork bomb is contained", forks.timed_out === true, JSON.stringify(forks).slice(0, 300));
const alive = await run("print('alive')");
check("the sandbox still serves after the bombs", alive.stdout === "alive\n", JSON.stringify(alive).slice(0, 300));
const busy = await run("import time\nt = time.time()\nwhile time.time() - t < 1.5: pass\nprint('ok')");
check("spend is metered", busy.spend_usd > 0, JSON.stringify(busy).slice(0, 300));
const threads = await run(
  "import os, time\nfor _ in range(3):\n if os.fork() == 0:\n  t = time.time()\n  while time.time() - t < 2: pass\n  os._exit(0)\nt0 = os.times()\nfor _ in range(3): os.wait()\nt1 = os.times()\nprint(round((t1.children_user + t1.children_system) - (t0.children_user + t0.children_system), 2))",
);
// Three busy processes for 2 s wall each under a 1-vCPU quota: about 2 s of CPU, not 6.
const cpu = Number(threads.stdout);
check("the CPU quota holds (3 busy processes get about one vCPU)", cpu > 0 && cpu < 4.5, `cpu seconds=${threads.stdout}`);
await end();
finish();
