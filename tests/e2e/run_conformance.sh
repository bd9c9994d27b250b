#!/usr/bin/env bash
# Runs the official MCP conformance suite's scenarios that apply to an execute-only server
# against the real gateway: five with a bearer token, dns-rebinding-protection with auth off
# on loopback (the scenario sends raw requests without a token). Fails on any failed check.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${SANDGATE_BINARY:-$here/../../build/sandgate}"
node22="$here/node_modules/.bin/node"       # the suite needs Node >= 22 (npm package node@22)
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
token="conformance-$$-$RANDOM"
failures=0

start_gateway() {  # prints the MCP URL; the PID goes to $gateway_pid
  local out; out="$(mktemp)"
  "$binary" --listen 127.0.0.1:0 --log-level warn "$@" > "$out" &
  gateway_pid=$!
  for _ in $(seq 200); do
    grep -q "listening on" "$out" 2>/dev/null && break
    sleep 0.05
  done
  gateway_url="$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$out")"
  rm -f "$out"
  [ -n "$gateway_url" ] || { echo "gateway did not start"; exit 1; }
}

run_scenario() {  # url scenario
  local log; log="$(mktemp)"
  if PATH="$(dirname "$node22"):$PATH" "$node22" "$cli" server --url "$1" --scenario "$2" > "$log" 2>&1 \
     && grep -Eq "Passed: ([0-9]+)/\1, 0 failed" "$log"; then
    echo "conformance $2: passed"
  else
    echo "conformance $2: FAILED"; cat "$log"; failures=$((failures + 1))
  fi
  rm -f "$log"
}

SANDGATE_TOKEN="$token" start_gateway
for scenario in server-initialize ping tools-list server-sse-multiple-streams logging-set-level; do
  SANDGATE_E2E_TOKEN="$token" NODE_OPTIONS="--import $here/add-auth.mjs" run_scenario "$gateway_url" "$scenario"
done
kill -TERM "$gateway_pid"; wait "$gateway_pid"

start_gateway --no-auth
run_scenario "$gateway_url" dns-rebinding-protection
kill -TERM "$gateway_pid"; wait "$gateway_pid"

total=6
echo "$((total - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
