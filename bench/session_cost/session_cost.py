#!/usr/bin/python3
"""What one open session without a sandbox costs the gateway: RSS before and after N initializes.

Usage: session_cost.py path/to/sandgate [N]   (root or a user that may run the gateway)
Starts its own gateway on a loopback port (--no-auth), so it measures nothing else's sessions.
"""
import http.client
import json
import subprocess
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    gw = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--no-auth", "--max-sessions", str(n + 10),
         "--max-sessions-per-tenant", str(n + 10), "--log-level", "warn"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = gw.stdout.readline().strip()  # "... http://127.0.0.1:PORT/mcp"
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "cost", "version": "1"}}})

        def initialize():
            conn.request("POST", "/mcp", body, headers)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"initialize answered {r.status}")

        for _ in range(200):  # warm up allocators and the connection before the baseline
            initialize()
        time.sleep(0.5)
        before = rss_kib(gw.pid)
        for _ in range(n):
            initialize()
        time.sleep(0.5)
        after = rss_kib(gw.pid)
        print(f"sessions={n} rss_before_kib={before} rss_after_kib={after} "
              f"bytes_per_session={(after - before) * 1024 / n:.0f}")
    finally:
        gw.terminate()
        gw.wait(timeout=30)


if __name__ == "__main__":
    main()
