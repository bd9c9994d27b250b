#!/usr/bin/python3
"""Egress throughput (issue #30): a download through a sandbox's egress proxy against the same
download straight from the host, side by side in one run, as a ratio.

A real index (tests/support/package_index.py) serves N bytes on 127.0.0.2, over plain HTTP and
over HTTPS. The same Python client (urllib, the standard library) downloads them:
  - direct: on the host, no proxy;
  - proxied: in a sandbox of a tenant allowed that index, through the gateway's proxy (the
    sandbox's HTTP(S)_PROXY), timed inside the sandbox.
Rounds alternate direct and proxied; medians are reported. Run as root on an idle machine:

    bench/egress_bench.py --sandgate build-release/sandgate [--mib 10] [--rounds 15] [--out DIR]

Writes DIR/egress.md and DIR/egress.json (default bench/results)."""
import argparse
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from bench_gateway import Mcp, launch_gateway

ROOT = pathlib.Path(__file__).resolve().parent.parent
INDEX = ROOT / "tests" / "support" / "package_index.py"
TOKEN = "egress-bench-token"

# Downloads `url` `count` times, prints each duration in seconds as JSON.
CLIENT = r"""
import json, ssl, sys, time, urllib.request
url, count, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
context = ssl.create_default_context(cafile=ca)
times = []
for _ in range(count):
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120, context=context) as r:
        while r.read(1 << 20):
            pass
    times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def start_index(directory):
    json_file = os.path.join(directory, "index.json")
    process = subprocess.Popen(
        ["/usr/bin/python3", str(INDEX), "--dir", directory, "--host", "127.0.0.2",
         "--plain-http-port", "0", "--json-file", json_file],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    process.stdout.readline()  # "package index listening on …": the JSON file is whole
    return process, json.load(open(json_file))


def start_gateway(binary, tokens):
    return launch_gateway(
        [binary, "--listen", "127.0.0.1:0", "--token-file", tokens, "--pool-size", "0",
         "--log-level", "warn", "--egress-mb-per-call", "65536", "--egress-mb-per-sandbox",
         "1048576", "--spend-cap-usd", "1000"])


def direct(url, count, ca):
    out = subprocess.run(["/usr/bin/python3", "-c", CLIENT, url, str(count), ca],
                         capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def proxied(mcp, url, count):
    code = ("python3 - '%s' %d /work/ca.pem <<'SANDGATE_CLIENT'\n%s\nSANDGATE_CLIENT\n"
            % (url, count, CLIENT))
    return json.loads(mcp.bash(code).strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandgate", required=True)
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    size = args.mib << 20
    with tempfile.TemporaryDirectory() as directory:
        index, announced = start_index(directory)
        tokens = os.path.join(directory, "tokens")
        digest = hashlib.sha256(TOKEN.encode()).hexdigest()
        with open(tokens, "w") as f:
            f.write(f"{digest} bench egress=127.0.0.2:{announced['port']},"
                    f"127.0.0.2:{announced['plain_port']}\n")
        os.chmod(tokens, 0o600)
        gateway, port = start_gateway(args.sandgate, tokens)
        try:
            mcp = Mcp(port, TOKEN, "egress_bench")
            mcp.start()
            ca = open(announced["ca"]).read()
            mcp.bash("cat > /work/ca.pem <<'SANDGATE_CA'\n" + ca + "SANDGATE_CA\n")
            urls = {"http": f"http://127.0.0.2:{announced['plain_port']}/big?bytes={size}",
                    "https": f"https://127.0.0.2:{announced['port']}/big?bytes={size}"}
            results = {}
            for scheme, url in urls.items():
                direct(url, 1, announced["ca"])  # warm both paths once
                proxied(mcp, url, 1)
                times = {"direct": [], "proxied": []}
                for _ in range(args.rounds):
                    times["direct"] += direct(url, 1, announced["ca"])
                    times["proxied"] += proxied(mcp, url, 1)
                medians = {k: statistics.median(v) for k, v in times.items()}
                mib_s = {k: args.mib / v for k, v in medians.items()}
                results[scheme] = {"median_s": medians, "mib_per_s": mib_s,
                                   "proxied_over_direct": mib_s["proxied"] / mib_s["direct"],
                                   "samples": times}
        finally:
            gateway.terminate()
            gateway.wait(timeout=60)
            index.terminate()
            index.wait(timeout=30)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "egress.json"), "w") as f:
        json.dump({"mib": args.mib, "rounds": args.rounds, "results": results}, f, indent=1)
    lines = [f"# Egress throughput: {args.mib} MiB, {args.rounds} rounds, direct and proxied "
             "alternating (bench/egress_bench.py)", "",
             "| scheme | direct MiB/s | through the sandbox's proxy MiB/s | proxied / direct |",
             "|---|---|---|---|"]
    for scheme, r in results.items():
        lines.append(f"| {scheme} | {r['mib_per_s']['direct']:.0f} | "
                     f"{r['mib_per_s']['proxied']:.0f} | {r['proxied_over_direct']:.2f} |")
    with open(os.path.join(args.out, "egress.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
