#!/usr/bin/env bash
# Runs every benchmark and writes bench/results/: the sandbox against the bare floor
# (sandbox.{md,json}), sandgate against the TypeScript SDK peer and the floor over real
# loopback HTTP (gateway.{md,json}), and the token-check timing statistic
# (token_timing.{md,json}), an OAuth access token against a tokens-file token on warm calls
# (auth.{md,json}), and warm calls with the usage ledger off, on SQLite and on PostgreSQL
# (ledger.{md,json}), and a new session's first call with the pool of ready sandboxes on and off
# (pool.{md,json}), and a download through a sandbox's egress proxy against a direct one
# (egress.{md,json}), downloads and kept-alive requests direct, through the tunnel and through
# the TLS termination of a host carrying a secret (secrets.{md,json}), environments: a first call
# warm against cold, a burst of new sessions, the build against its setup (environments.{md,json}),
# and a warm call over `sandgate --stdio` against the same over HTTP, both from the official SDK
# client (stdio.{md,json}). Release build; run as root on an otherwise idle machine.
#
#   bench/run.sh [--quick]     --quick: every workload with small counts (a smoke run)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build --preset release --target sandgate sandbox_bench gateway_bench token_timing \
  auth_bench ledger_bench pool_bench
(cd bench/peers && npm ci --no-audit --no-fund)
(cd tests/e2e && npm ci --no-audit --no-fund)  # the official SDK client of stdio_bench.mjs
if [[ "${1:-}" == "--quick" ]]; then
  out=$(mktemp -d)
  ./build-release/bench/sandbox_bench 20 "$out"
  ./build-release/bench/gateway_bench --sandgate build-release/sandgate --quick --out "$out"
  ./build-release/bench/token_timing 2000 "$out" || echo "(a quick run has too few samples for a timing verdict)"
  ./build-release/bench/auth_bench --sandgate build-release/sandgate \
    --issuer-script tests/support/test_issuer.py --calls 50 --out "$out"
  ./build-release/bench/ledger_bench --sandgate build-release/sandgate --calls 50 --seconds 2 \
    --out "$out"
  ./build-release/bench/pool_bench --sandgate build-release/sandgate --samples 2 --out "$out"
  /usr/bin/python3 bench/egress_bench.py --sandgate build-release/sandgate --mib 2 --rounds 2 \
    --out "$out"
  /usr/bin/python3 bench/secrets_bench.py --sandgate build-release/sandgate --mib 2 --rounds 2 \
    --kept 5 --out "$out"
  /usr/bin/python3 bench/environment_bench.py --sandgate build-release/sandgate --samples 2 \
    --burst 4 --out "$out"
  node bench/stdio_bench.mjs --sandgate build-release/sandgate --calls 5 --rounds 2 --out "$out"
  rm -rf "$out"
else
  ./build-release/bench/sandbox_bench 400 bench/results
  ./build-release/bench/gateway_bench --sandgate build-release/sandgate --out bench/results
  ./build-release/bench/token_timing 200000 bench/results
  ./build-release/bench/auth_bench --sandgate build-release/sandgate \
    --issuer-script tests/support/test_issuer.py --out bench/results
  ./build-release/bench/ledger_bench --sandgate build-release/sandgate --out bench/results
  ./build-release/bench/pool_bench --sandgate build-release/sandgate --out bench/results
  /usr/bin/python3 bench/egress_bench.py --sandgate build-release/sandgate --out bench/results
  /usr/bin/python3 bench/secrets_bench.py --sandgate build-release/sandgate --out bench/results
  /usr/bin/python3 bench/environment_bench.py --sandgate build-release/sandgate --out bench/results
  node bench/stdio_bench.mjs --sandgate build-release/sandgate --out bench/results
fi
