// The seccomp allowlist on real sandboxes: what the runtimes do must still work under it, and
// what is not on it is refused with the errno its group is given.
#include <linux/filter.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "sandbox/inside/seccomp_filter.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;
using sandgate::sandbox::RunResult;

namespace {

// The heavy imports (numpy, pandas, matplotlib's font cache on a fresh HOME) take seconds on a
// busy machine: a generous bound, never an assertion on how long it took.
constexpr std::chrono::seconds kSlow{120};

void require_ok(const RunResult& r, const std::string& expected_stdout) {
  INFO("stderr: " << r.stderr_text);
  CHECK(r.outcome == RunOutcome::completed);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == expected_stdout);
}

// The most instructions any one system call can run through: classic BPF jumps only
// forward, so the longest path is found walking the program backwards.
std::size_t longest_path(const std::vector<sock_filter>& code) {
  std::vector<std::size_t> depth(code.size() + 1, 0);
  for (std::size_t i = code.size(); i-- > 0;) {
    const sock_filter& in = code[i];
    std::size_t next = depth[std::min(i + 1, code.size())];
    if (BPF_CLASS(in.code) == BPF_RET) {
      depth[i] = 1;
    } else if (BPF_CLASS(in.code) == BPF_JMP && BPF_OP(in.code) == BPF_JA) {
      depth[i] = 1 + depth[std::min(i + 1 + in.k, code.size())];
    } else if (BPF_CLASS(in.code) == BPF_JMP) {
      depth[i] = 1 + std::max(depth[std::min(i + 1 + in.jt, code.size())],
                              depth[std::min(i + 1 + in.jf, code.size())]);
    } else {
      depth[i] = 1 + next;
    }
  }
  return depth[0];
}

}  // namespace

TEST_CASE("python: numpy, pandas and a matplotlib PNG run under the allowlist",
          "[sandbox][seccomp]") {
  sandgate::test::SandboxFixture f;
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python, R"py(
import numpy as np, pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
df = pd.DataFrame({"a": np.arange(1000), "b": np.random.default_rng(1).normal(size=1000)})
df["c"] = df.a * 2 + df.b
groups = df.groupby(df.a % 7).agg({"b": ["mean", "std"], "c": "sum"})
inverse = np.linalg.inv(np.eye(50) * 3 + np.ones((50, 50)))
df.to_csv("/work/df.csv")
back = pd.read_csv("/work/df.csv")
fig, ax = plt.subplots()
ax.plot(df.a, df.c)
fig.savefig("/work/plot.png")
print(len(back), len(groups), round(float((inverse @ (np.eye(50) * 3 + np.ones((50, 50)))).trace())))
print(open("/work/plot.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n")
)py",
                 kSlow);
  require_ok(r, "1000 7 50\nTrue\n");
}

TEST_CASE("python: subprocess, threads and multiprocessing pools run under the allowlist",
          "[sandbox][seccomp]") {
  sandgate::test::SandboxFixture f;
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Every start method of multiprocessing: fork, spawn (a fresh interpreter re-importing this
  // file) and forkserver (an AF_UNIX server); their locks live in /dev/shm. In the persistent
  // interpreter there is no file to re-import, so a function defined in a call reaches only
  // forked workers (as in a notebook): spawn and forkserver are a fresh process's.
  const std::string methods = f.fresh ? R"(("fork", "spawn", "forkserver"))" : R"(("fork",))";
  auto r = f.run(sb, Language::python, R"py(
import concurrent.futures, multiprocessing, subprocess, sys, threading
def square(x):
    return x * x
if __name__ == "__main__":
    print(subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip())
    print(subprocess.run("ls / | grep -c usr", shell=True, capture_output=True, text=True).stdout.strip())
    print(subprocess.check_output([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"],
                                  input=b"abc").decode().strip())
    p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    print(len(p.communicate(b"x" * 100000)[0]))
    try:
        subprocess.run(["sleep", "30"], timeout=0.5)
    except subprocess.TimeoutExpired:
        print("timeout")
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(square(i))) for i in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(sum(results))
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        print(sum(ex.map(square, range(10))))
    for method in )py" + methods + R"py(:
        with multiprocessing.get_context(method).Pool(2) as pool:
            print(method, sum(pool.map(square, range(10))))
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        print(sum(ex.map(square, range(10))))
)py",
                 kSlow);
  require_ok(r, std::string("hi\n1\nABC\n100000\ntimeout\n140\n285\nfork 285\n") +
                    (f.fresh ? "spawn 285\nforkserver 285\n" : "") + "285\n");
}

TEST_CASE("node: worker threads, child processes, fs, timers and crypto run under the allowlist",
          "[sandbox][seccomp]") {
  sandgate::test::SandboxFixture f;
  // In the interpreter the script's last expression is its async main's promise: the call
  // waits for it, as node waits for a script's pending work before it exits.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::javascript, R"js(
const { Worker } = require('worker_threads');
const cp = require('child_process'), fs = require('fs'), crypto = require('crypto');
const net = require('net'), zlib = require('zlib');
const once = (emitter, event) => new Promise((res, rej) => { emitter.on(event, res); emitter.on('error', rej); });
(async () => {
  const sums = await Promise.all([1000, 2000].map(n => once(new Worker(
      'const { parentPort, workerData } = require("worker_threads");' +
      'let s = 0; for (let i = 0; i < workerData; i++) s += i; parentPort.postMessage(s);',
      { eval: true, workerData: n }), 'message')));
  console.log('workers', sums.join(','));
  console.log('execSync', cp.execSync('echo hi | tr a-z A-Z').toString().trim());
  const cat = cp.spawn('cat');
  let bytes = 0;
  cat.stdout.on('data', d => bytes += d.length);
  cat.stdin.end('x'.repeat(70000));
  await once(cat, 'close');
  console.log('spawn', bytes);
  fs.writeFileSync('/work/child.js', 'process.send("child-ok")');
  const child = cp.fork('/work/child.js');
  console.log('fork', await once(child, 'message'));
  fs.mkdirSync('/work/d/e', { recursive: true });
  await fs.promises.writeFile('/work/d/e/n.txt', 'hello');
  await fs.promises.appendFile('/work/d/e/n.txt', ' world');
  console.log('fs', await fs.promises.readFile('/work/d/e/n.txt', 'utf8'));
  fs.rmSync('/work/d', { recursive: true });
  const watcher = fs.watch('/work');
  watcher.close();
  await new Promise(res => setTimeout(res, 10));
  await new Promise(res => setImmediate(res));
  console.log('sha256', crypto.createHash('sha256').update('x').digest('hex').slice(0, 8));
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  console.log('verify', crypto.verify(null, Buffer.from('m'), publicKey,
                                      crypto.sign(null, Buffer.from('m'), privateKey)));
  const key = await new Promise((res, rej) =>
      crypto.pbkdf2('p', 's', 1000, 32, 'sha256', (e, k) => e ? rej(e) : res(k)));
  console.log('pbkdf2', key.length, crypto.randomBytes(8).length);
  console.log('zlib', zlib.gunzipSync(zlib.gzipSync('abc')).toString());
  const server = net.createServer(c => c.end('pong')).listen('/tmp/s.sock');
  await once(server, 'listening');
  console.log('unix', (await once(net.connect('/tmp/s.sock'), 'data')).toString());
  server.close();
})().catch(e => { console.error('FAIL', e); process.exit(1); });
)js",
                 kSlow);
  require_ok(r,
             "workers 499500,1999000\nexecSync HI\nspawn 70000\nfork child-ok\n"
             "fs hello world\nsha256 2d711642\nverify true\npbkdf2 32 8\nzlib abc\nunix pong\n");
}

TEST_CASE("bash: a coreutils pipeline runs under the allowlist", "[sandbox][seccomp]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash, R"sh(
set -eo pipefail
mkdir -p t/a
for i in $(seq 1 50); do echo "line $i" > t/a/f$i.txt; done
ls -la t/a | grep -c 'f.*\.txt'
cat t/a/*.txt | sort -k2 -n | grep -E 'line [0-9]+' | sed 's/line/L/' | awk '{s+=$2} END {print s}'
find t -name '*.txt' -type f | wc -l
tar czf t.tgz t && rm -rf t && tar xzf t.tgz && ls t/a | wc -l
gzip -k t/a/f1.txt && gunzip -c t/a/f1.txt.gz
echo abc | tr a-z A-Z | rev | cut -c1-2
head -c 1000 /dev/urandom | sha256sum | wc -c
cp -r t t2 && mv t2 t3 && ln -s t3 t4 && readlink t4 && rm -rf t3 t4
(sleep 0.1 & wait) && id -u
)sh",
                 kSlow);
  require_ok(r, "50\n1275\n50\n50\nline 1\nCB\n68\nt3\n1000\n");
}

TEST_CASE("what the allowlist leaves out is refused, with its group's errno",
          "[sandbox][seccomp]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Raw system calls through ctypes, so no libc wrapper hides or translates the answer. Each
  // line: the call, then the errno (0 when it succeeded).
  auto r = f.run(sb, Language::python, R"py(
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(128)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if name == "clone_newuser" and r == 0:
        os._exit(0)  # a child, should the refusal ever fail
    print(name, ctypes.get_errno() if r < 0 else 0)
call("modify_ldt", 154, 0, ctypes.addressof(buf), 128)
call("personality_per_linux32", 135, 0x0008)
call("personality_addr_no_randomize", 135, 0x0040000)
call("personality_query", 135, 0xffffffff)
call("personality_per_linux", 135, 0)
call("memfd_secret", 447, 0)
call("userfaultfd", 323, 0)
call("set_mempolicy_home_node", 450, 0, 0, 0, 0)
call("mseal", 462, 0, 0, 0)
call("unknown_1000", 1000)
call("clone3", 435, ctypes.addressof(buf), 88)
call("io_uring_setup", 425, 1, ctypes.addressof(buf))
call("clone_newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
call("socket_inet", 41, 2, 1, 0)
call("socket_unix", 41, 1, 1, 0)
# An x32 system call number (getpid | 0x40000000): another ABI, so the process is killed.
print("x32", subprocess.run([sys.executable, "-c",
      "import ctypes; ctypes.CDLL(None).syscall(0x40000027)"]).returncode)
)py");
  // EPERM (1): refused outright. ENOSYS (38): not on the list, as from a kernel without the
  // call. set_mempolicy_home_node (5.17) exists on Debian 12's 6.1 kernel, so its ENOSYS is the
  // filter's; mseal (6.10) does not, so its ENOSYS shows the filter only on a newer kernel.
  require_ok(r,
             "modify_ldt 1\n"
             "personality_per_linux32 38\n"
             "personality_addr_no_randomize 38\n"
             "personality_query 0\n"
             "personality_per_linux 0\n"
             "memfd_secret 1\n"
             "userfaultfd 1\n"
             "set_mempolicy_home_node 38\n"
             "mseal 38\n"
             "unknown_1000 38\n"
             "clone3 38\n"
             "io_uring_setup 38\n"
             "clone_newuser 1\n"
             "socket_inet 97\n"
             "socket_unix 0\n"
             "x32 -31\n");
}

TEST_CASE("the seccomp program stays small and shallow", "[sandbox][seccomp]") {
  // Every system call of a sandboxed program runs the filter: a binary tree of syscall numbers
  // (SCMP_FLTATR_CTL_OPTIMIZE 2) keeps the path short. The kernel's limit is 4096
  // instructions; a linear list of this allowlist would run over 300 for its last entry.
  auto program = sandgate::sandbox::SeccompProgram::compile();
  INFO("instructions " << program.code().size() << ", longest path "
                       << longest_path(program.code()));
  CHECK(program.code().size() <= 1024);
  CHECK(longest_path(program.code()) <= 64);
}
