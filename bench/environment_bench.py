#!/usr/bin/python3
"""Environments (issue #43): a new session's first call that imports an environment's own
package, warm (its ready sandbox has it preloaded) against cold (the same layer, no ready
sandbox, no preload); a burst of 20 new sessions in 2 s with the pool sized by demand (the first
burst, and the same again 45 s later) against a fixed pool of two; and the build's time against its setup script's own time in a plain sandbox.
Side by side in one run, as ratios. Run as root on an idle machine:

    bench/environment_bench.py --sandgate build-release/sandgate [--samples 10] [--out DIR]

The environment's package is made by its setup (no network): 300 modules that each build a
table when imported, so that importing it costs what a data-science package's import does
(about a second), and the layer is real files on disk mounted at /env; the setup also spends
about two seconds of CPU, as an install's unpacking and compiling would.

Writes DIR/environments.md and DIR/environments.json (default bench/results)."""
import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

from bench_gateway import Mcp, launch_gateway

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKENS = {"warm": "env-bench-warm", "cold": "env-bench-cold", "fixed": "env-bench-fixed",
          "plain": "env-bench-plain"}

# The environment's package: D is /env in the build, another directory for the setup's own run.
SETUP = r"""
D=${SANDGATE_LAYER:-/env}
mkdir -p $D/python/heavypkg
python3 - "$D/python/heavypkg" <<'PY'
import os, sys
target = sys.argv[1]
for i in range(300):
    with open(os.path.join(target, f"m{i}.py"), "w") as f:
        f.write("TABLE = {k: [j * j for j in range(60)] for k in range(300)}\n")
        f.write("".join(f"def f{j}(x):\n    return x * {j} + {i}\n" for j in range(40)))
with open(os.path.join(target, "__init__.py"), "w") as f:
    f.write("".join(f"from . import m{i}\n" for i in range(300)))
    f.write("VALUE = 'heavy'\n")
PY
# What an install spends besides writing files (unpacking, compiling): about two seconds of CPU.
python3 -c 'sum(i * i for i in range(3 * 10**7))'
"""
VERIFY = "python3 -c 'import heavypkg; assert heavypkg.VALUE == \"heavy\"'"
FIRST_CALL = "import heavypkg\nprint(heavypkg.VALUE)"


def definitions():
    # Three layers of the same content: environments that share a layer share its ready
    # sandboxes, so each workload gets a layer of its own (a verify that differs by a comment).
    def named(tag):
        return {"setup": SETUP, "verify": VERIFY + " # " + tag}
    return {"heavy": dict(named("by demand"), preload=["heavypkg"], pool={"min": 2, "max": 20}),
            "heavy_fixed": dict(named("fixed"), preload=["heavypkg"], pool={"min": 2, "max": 2}),
            "heavy_cold": dict(named("cold"), pool={"min": 0, "max": 0})}


def first_call(port, tenant):
    """A new session's first call importing the package: seconds, end to end."""
    mcp = Mcp(port, TOKENS[tenant], "environment_bench")
    mcp.start()
    started = time.perf_counter()
    out = mcp.run(FIRST_CALL)
    seconds = time.perf_counter() - started
    assert "heavy" in out["stdout"], out
    mcp.end()
    return seconds


def start_gateway(binary, directory):
    tokens = os.path.join(directory, "tokens")
    environments = {"warm": "heavy", "fixed": "heavy_fixed", "cold": "heavy_cold",
                    "plain": "base"}
    with open(tokens, "w") as f:
        for tenant, token in TOKENS.items():
            f.write(f"{hashlib.sha256(token.encode()).hexdigest()} {tenant} "
                    f"environments={environments[tenant]} max_sessions=100\n")
    os.chmod(tokens, 0o600)
    definitions_file = os.path.join(directory, "environments.json")
    with open(definitions_file, "w") as f:
        json.dump(definitions(), f)
    log = open(os.path.join(directory, "gateway.log"), "w")
    # Builds first: /readyz answers 200 once every environment is built or failed.
    process, port = launch_gateway(
        [binary, "--listen", "127.0.0.1:0", "--token-file", tokens, "--pool-size", "0",
         "--environments", definitions_file, "--state-dir", os.path.join(directory, "state"),
         "--log-level", "info", "--max-sandboxes", "64", "--spend-cap-usd", "1000"],
        stderr=log, ready_within_s=600)
    return process, port, log.name


def build_seconds(log_path):
    for line in open(log_path):
        if '"environment_ready"' in line:
            return json.loads(line)["seconds"]
    raise RuntimeError("no environment_ready in the gateway's log")


def setup_own_seconds(port, rounds):
    """The setup script run as an ordinary call in a warm plain sandbox, timed inside it."""
    mcp = Mcp(port, TOKENS["plain"], "environment_bench")
    mcp.start()
    mcp.run("print('warm')")
    times = []
    for i in range(rounds):
        script = ("rm -rf /work/layer; start=$(date +%s.%N)\n"
                  f"SANDGATE_LAYER=/work/layer bash <<'SETUP'\n{SETUP}\nSETUP\n"
                  "end=$(date +%s.%N); echo \"$start $end\"")
        out = mcp.run(script, "bash")["stdout"].split()
        times.append(float(out[-1]) - float(out[-2]))
    mcp.end()
    return times


def pool_settled(port, seconds=8):
    time.sleep(seconds)  # the ready sandboxes refill at a background share after the last take


def burst(port, tenant, sessions=20, over_s=2.0):
    with concurrent.futures.ThreadPoolExecutor(max_workers=sessions) as pool:
        futures = []
        for i in range(sessions):
            futures.append(pool.submit(first_call, port, tenant))
            time.sleep(over_s / sessions)
        return sorted(f.result() for f in futures)


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandgate", required=True)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        gateway, port, log = start_gateway(args.sandgate, directory)
        try:
            build = build_seconds(log)
            setup = setup_own_seconds(port, 3)
            pool_settled(port)
            first = {"warm": [], "cold": []}
            for _ in range(args.samples):
                first["warm"].append(first_call(port, "warm"))
                first["cold"].append(first_call(port, "cold"))
                pool_settled(port, 4)
            pool_settled(port)
            bursts = {"by_demand": burst(port, "warm", args.burst)}
            # The same burst again 45 s later (traffic that comes in bursts): the pool sized by
            # the first one's demand has refilled meanwhile.
            pool_settled(port, 45)
            bursts["by_demand_again"] = burst(port, "warm", args.burst)
            pool_settled(port, 20)
            bursts["fixed_two"] = burst(port, "fixed", args.burst)
        finally:
            gateway.terminate()
            gateway.wait(timeout=120)
    cold = statistics.median(first["cold"])
    results = {
        "first_call_s": {k: statistics.median(v) for k, v in first.items()},
        "first_call_warm_over_cold": statistics.median(first["warm"]) / cold,
        "burst_s": {k: {"p50": quantile(v, 0.5), "p90": quantile(v, 0.9)}
                    for k, v in bursts.items()},
        "burst_p90_over_cold": {k: quantile(v, 0.9) / cold for k, v in bursts.items()},
        "build_s": build, "setup_own_s": statistics.median(setup),
        "build_over_setup": build / statistics.median(setup),
        "samples": {"first": first, "bursts": bursts, "setup": setup},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "environments.json"), "w") as f:
        json.dump(results, f, indent=1)
    r = results
    lines = [f"# Environments: {args.samples} first calls each way, bursts of {args.burst} new "
             "sessions in 2 s (bench/environment_bench.py)", "",
             "| measure | value |", "|---|---|",
             f"| first call importing the package, warm (preloaded ready sandbox) | "
             f"{r['first_call_s']['warm'] * 1000:.0f} ms |",
             f"| the same, cold (new sandbox, import at the call) | {cold * 1000:.0f} ms |",
             f"| warm / cold | {r['first_call_warm_over_cold']:.2f} (target <= 0.15) |"]
    for k, v in r["burst_s"].items():
        lines.append(f"| burst, pool {k.replace('_', ' ')}: p50 / p90 | {v['p50'] * 1000:.0f} / "
                     f"{v['p90'] * 1000:.0f} ms; p90 / cold {r['burst_p90_over_cold'][k]:.2f} |")
    lines += [f"| build (setup, seal, verify) | {build:.2f} s |",
              f"| the setup's own run in a plain sandbox | {r['setup_own_s']:.2f} s |",
              f"| build / setup | {r['build_over_setup']:.2f} (target <= 1.1) |"]
    with open(os.path.join(args.out, "environments.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
