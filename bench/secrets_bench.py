#!/usr/bin/python3
"""Egress through the terminating proxy (issue #44): a download and small kept-alive requests,
direct, through today's end-to-end tunnel, and through the TLS termination of a host carrying a
secret, side by side in one run, as ratios against the issue's targets.

A real HTTPS server (tests/support/package_index.py: its /big route, HTTP/1.1 kept alive) listens
on 127.0.0.2, its certificate for *.bench.sandgate.test and 127.0.0.2, by a test CA. The gateway
runs in a mount namespace of its own whose /etc/hosts gives h0…hN.bench.sandgate.test that
address (as tests/integration/egress_test.cpp does), with --egress-ca-file the test CA. Two
tenants: `tunnel` may reach *.bench.sandgate.test (no secret: the end-to-end tunnel with the
SNI check), `terminated` holds a secret for each hI (the proxy terminates its TLS, opens its own
verified TLS to the server and adds the header). The same Python client (http.client, the
standard library) measures, each in one call:
  - direct: on the host, straight to 127.0.0.2, no proxy;
  - tunnel / terminated: in a sandbox of that tenant, through the gateway's proxy (CONNECT by
    http.client's set_tunnel), timed inside the sandbox;
and per round, to a host that round alone uses (so the terminated side's first request issues a
leaf certificate):
  first   a new connection's first request (64 bytes) to that host (after one request to a
          host reached before, so that the client process's own first-connection set-up is
          not counted);
  second  a second new connection's first request to it (the leaf certificate now cached);
  kept    --kept more requests on that second connection, each timed (their median);
  MiB/s   a --mib download on a new connection.
Rounds rotate the order of the three; medians over rounds are reported. Run as root (the mount
namespace) on an idle machine:

    bench/secrets_bench.py --sandgate build/sandgate [--mib 32] [--rounds 15] [--kept 50]
                           [--out DIR]

Writes DIR/secrets.md and DIR/secrets.json (default bench/results)."""
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
DOMAIN = "bench.sandgate.test"
TOKENS = {"tunnel": "secrets-bench-tunnel", "terminated": "secrets-bench-terminated"}
# The terminated side may cache 32 leaves per tenant (egress/tls_termination.hpp): every round's
# host must be a new one.
MAX_ROUNDS = 30

# One round's measurements for one way of reaching the server, printed as JSON. argv: host to
# connect to (a name through the proxy, the address direct), port, SNI name, CA file ("" for
# the default store, i.e. SSL_CERT_FILE), download bytes, kept requests, "proxy" or "direct",
# and a host already reached (its leaf certificate cached) for the process's warm-up request.
CLIENT = r"""
import http.client, json, os, ssl, sys, time, urllib.parse
host, port, name, ca, size, kept, how, warm = sys.argv[1:9]
port, size, kept = int(port), int(size), int(kept)
context = ssl.create_default_context(cafile=ca or None)
proxy = urllib.parse.urlsplit(os.environ.get("HTTPS_PROXY", "")) if how == "proxy" else None

def connect(to=host):
    if proxy:
        c = http.client.HTTPSConnection(proxy.hostname, proxy.port, timeout=120, context=context)
        c.set_tunnel(to, port)
    else:
        c = http.client.HTTPSConnection(to, port, timeout=120, context=context)
    return c

def get(c, n, to=name):
    c.request("GET", "/big?bytes=%d" % n, headers={"Host": "%s:%d" % (to, port)})
    r = c.getresponse()
    got = 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    if r.status != 200 or got != n:
        raise SystemExit("GET answered %d with %d bytes" % (r.status, got))

# A first TLS connection costs a new process a few ms more than the next (lazy set-up in
# Python and OpenSSL): spent here, on a host every way has reached before, not on "first".
c = connect(warm); get(c, 64, warm); c.close()
out = {}
c = connect()
t = time.perf_counter(); get(c, 64); out["first"] = time.perf_counter() - t
c.close()
c = connect()
t = time.perf_counter(); get(c, 64); out["second"] = time.perf_counter() - t
times = []
for _ in range(kept):
    t = time.perf_counter(); get(c, 64); times.append(time.perf_counter() - t)
out["kept"] = sorted(times)[len(times) // 2]
c.close()
c = connect()
t = time.perf_counter(); get(c, size); out["download"] = time.perf_counter() - t
c.close()
print(json.dumps(out))
"""


def start_index(directory):
    json_file = os.path.join(directory, "index.json")
    # With TCP_NODELAY on its connections: the server writes an answer's head and body apart,
    # and Nagle's wait for the client's delayed ACK would add 40 ms to every small request.
    start = ("import runpy, socketserver, sys; "
             "socketserver.StreamRequestHandler.disable_nagle_algorithm = True; "
             "sys.path.insert(0, sys.argv[1].rsplit('/', 1)[0]); "
             "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    process = subprocess.Popen(
        ["/usr/bin/python3", "-c", start, str(INDEX), "--dir", directory, "--host", "127.0.0.2",
         "--name", "*." + DOMAIN, "--json-file", json_file],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    process.stdout.readline()  # "package index listening on …": the JSON file is whole
    return process, json.load(open(json_file))


def write_private(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def start_gateway(binary, directory, port, ca, hosts):
    """The gateway with its own /etc/hosts (unshare -m, as tests/integration's hosts_wrapper)."""
    key_file = os.path.join(directory, "api-key")
    write_private(key_file, "bench-key-value\n")
    secrets = os.path.join(directory, "secrets")
    write_private(secrets, "".join(f"s{i} host={h}:{port} header=X-Api-Key file={key_file}\n"
                                   for i, h in enumerate(hosts)))
    tokens = os.path.join(directory, "tokens")
    digest = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in TOKENS.items()}
    write_private(tokens,
                  # The loopback address the names resolve to must be on the lists too (the
                  # proxy refuses a name that resolves to loopback unless the literal is).
                  f"{digest['tunnel']} tunnel egress=*.{DOMAIN}:{port},127.0.0.2:{port}\n"
                  f"{digest['terminated']} terminated egress=127.0.0.2:{port} secrets="
                  + ",".join(f"s{i}" for i in range(len(hosts))) + "\n")
    hosts_file = os.path.join(directory, "hosts")
    with open(hosts_file, "w") as f:
        f.write("127.0.0.1 localhost\n127.0.0.2 " + " ".join(hosts) + "\n")
    os.chmod(hosts_file, 0o644)
    return launch_gateway(
        ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
         'mount --bind "$0" /etc/hosts && exec "$@"', hosts_file,
         binary, "--listen", "127.0.0.1:0", "--token-file", tokens, "--secrets-file", secrets,
         "--egress-ca-file", ca, "--pool-size", "0", "--log-level", "warn",
         "--egress-mb-per-call", "65536", "--egress-mb-per-sandbox", "1048576",
         "--spend-cap-usd", "1000"])


def client_args(host, port, name, ca, size, kept, how, warm):
    return [host, str(port), name, ca, str(size), str(kept), how, warm]


def direct(port, ca, size, kept):
    out = subprocess.run(
        ["/usr/bin/python3", "-c", CLIENT, *client_args("127.0.0.2", port, "127.0.0.2", ca, size,
                                                         kept, "direct", "127.0.0.2")],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def proxied(mcp, host, port, ca, size, kept, warm):
    quoted = " ".join(f"'{a}'"
                      for a in client_args(host, port, host, ca, size, kept, "proxy", warm))
    code = f"python3 - {quoted} <<'SANDGATE_CLIENT'\n{CLIENT}\nSANDGATE_CLIENT\n"
    return json.loads(mcp.bash(code).strip().splitlines()[-1])


def ms(seconds):
    return seconds * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandgate", required=True)
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--kept", type=int, default=50)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds must be 1..{MAX_ROUNDS} (a new host each, and a warm-up)")
    size = args.mib << 20
    hosts = [f"h{i}.{DOMAIN}" for i in range(args.rounds + 1)]
    ways = ("direct", "tunnel", "terminated")
    samples = {way: [] for way in ways}
    with tempfile.TemporaryDirectory() as directory:
        index, announced = start_index(directory)
        port, ca = announced["port"], announced["ca"]
        gateway, gateway_port = start_gateway(args.sandgate, directory, port, ca, hosts)
        try:
            mcps = {way: Mcp(gateway_port, TOKENS[way], "secrets_bench") for way in ("tunnel", "terminated")}
            for mcp in mcps.values():
                mcp.start()
            # The tunnel's client trusts the test CA (end to end); the terminated one the
            # sandbox's bundle (SSL_CERT_FILE: the system's store and the gateway CA).
            mcps["tunnel"].bash("cat > /work/ca.pem <<'SANDGATE_CA'\n" + open(ca).read() +
                                "SANDGATE_CA\n")
            trust = {"tunnel": "/work/ca.pem", "terminated": ""}

            def measure(way, host):
                if way == "direct":
                    return direct(port, ca, size, args.kept)
                return proxied(mcps[way], host, port, trust[way], size, args.kept, hosts[-1])

            for way in ways:  # warm every path once (sandboxes started, code paged in)
                measure(way, hosts[-1])
            for r in range(args.rounds):
                order = ways[r % 3:] + ways[:r % 3]
                for way in order:
                    samples[way].append(measure(way, hosts[r]))
        finally:
            gateway.terminate()
            gateway.wait(timeout=60)
            index.terminate()
            index.wait(timeout=30)

    def median(way, key):
        return statistics.median(s[key] for s in samples[way])

    results = {way: {"first_ms": ms(median(way, "first")), "second_ms": ms(median(way, "second")),
                     "kept_ms": ms(median(way, "kept")),
                     "mib_per_s": args.mib / median(way, "download")} for way in ways}
    term, tunnel, direct_ = results["terminated"], results["tunnel"], results["direct"]
    targets = {
        "throughput_terminated_over_direct": (term["mib_per_s"] / direct_["mib_per_s"], ">=", 0.5),
        "kept_terminated_minus_tunnel_ms": (term["kept_ms"] - tunnel["kept_ms"], "<=", 1.0),
        "first_terminated_minus_tunnel_ms": (term["first_ms"] - tunnel["first_ms"], "<=", 10.0),
        "second_terminated_minus_tunnel_ms": (term["second_ms"] - tunnel["second_ms"], "<=",
                                              10.0),
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "secrets.json"), "w") as f:
        json.dump({"mib": args.mib, "rounds": args.rounds, "kept": args.kept, "results": results,
                   "targets": {k: {"value": v, "want": f"{op} {t}"}
                               for k, (v, op, t) in targets.items()},
                   "samples": samples}, f, indent=1)
    lines = [f"# Egress through the terminating proxy: {args.mib} MiB downloads, {args.kept} "
             f"kept-alive requests, {args.rounds} rounds, direct / tunnel / terminated rotating "
             "(bench/secrets_bench.py)", "",
             "| way | first request to a new host (ms) | first request, new connection, leaf "
             "cached (ms) | request on a kept connection (ms) | download MiB/s |",
             "|---|---|---|---|---|"]
    for way in ways:
        r = results[way]
        lines.append(f"| {way} | {r['first_ms']:.2f} | {r['second_ms']:.2f} | "
                     f"{r['kept_ms']:.3f} | {r['mib_per_s']:.0f} |")
    lines += ["", "| target | measured | wanted | met |", "|---|---|---|---|"]
    for name, (value, op, want) in targets.items():
        met = value >= want if op == ">=" else value <= want
        lines.append(f"| {name} | {value:.3f} | {op} {want} | {'yes' if met else 'NO'} |")
    with open(os.path.join(args.out, "secrets.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
