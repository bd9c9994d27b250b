#!/usr/bin/env bash
# Runs the conformance suite's tasks-* scenarios (the 2026-07-28 tasks extension; the suite marks
# them [extension] and scores none of them for a revision, so run_conformance.sh does not run
# them) against the fixtures build, whose task fixture tools they call (greet, slow_compute,
# failing_job, protocol_error_job, and confirm_delete, multi_input and test_tool_with_task, which
# wait for input). Each scenario must pass but for the checks listed, with why, in
# conformance-expected-failures-tasks.yml; a listed check that passes is stale and fails the run
# too.
#
# Environment: SANDGATE_BINARY (default ../../build/tests/conformance/sandgate_conformance_server).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${SANDGATE_BINARY:-$here/../../build/tests/conformance/sandgate_conformance_server}"
node22="$here/node_modules/.bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
expected="$here/conformance-expected-failures-tasks.yml"
scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
  tasks-required-task-error tasks-mrtr-input tasks-mrtr-composition)

results="$(mktemp -d)"
out="$(mktemp)"
token="conformance-tasks-$$-$RANDOM"
SANDGATE_TOKEN="$token" "$binary" --listen 127.0.0.1:0 --log-level warn > "$out" &
gateway_pid=$!
trap 'kill -KILL "$gateway_pid" 2>/dev/null || true; rm -rf "$results" "$out"' EXIT
for _ in $(seq 200); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
url="$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$out")"
[ -n "$url" ] || { echo "gateway did not start: $binary"; exit 1; }

failures=0
for scenario in "${scenarios[@]}"; do
  status=0
  SANDGATE_E2E_TOKEN="$token" NODE_OPTIONS="--import $here/add-auth.mjs" PATH="$(dirname "$node22"):$PATH" \
    "$node22" "$cli" server --url "$url" --scenario "$scenario" --spec-version 2026-07-28 --force \
    --expected-failures "$expected" -o "$results" > "$results/$scenario.log" 2>&1 || status=$?
  summary="$(sed -e 's/\x1b\[[0-9;]*m//g' -n -e 's/^Passed: //p' "$results/$scenario.log" | tail -1)"
  if [ "$status" -eq 0 ]; then
    echo "$scenario: passed ($summary)"
  else
    echo "$scenario: FAILED (exit $status; $summary)"
    sed -e 's/\x1b\[[0-9;]*m//g' "$results/$scenario.log" | grep -E "FAILURE|WARNING|stale|not in" | head -10
    failures=$((failures + 1))
  fi
done
# A clean stop exits 0; anything else (a crash, a sanitizer report) fails the run.
kill -TERM "$gateway_pid"
rc=0; wait "$gateway_pid" || rc=$?
[ "$rc" -eq 0 ] || { echo "gateway exited with status $rc"; failures=$((failures + 1)); }
echo "tasks scenarios: $(( ${#scenarios[@]} - failures )) passed, $failures failed"
[ "$failures" -eq 0 ]
