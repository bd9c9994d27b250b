#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, the copy installed
# in tests/e2e) against sandgate_conformance_server — the gateway plus the suite's fixture
# tools, resources and prompts — once per protocol revision with exactly the scenarios that
# revision scores (`--requirements`): 2025-11-25 and 2026-07-28. Auth stays on: every request
# the suite makes gets a bearer token from tests/e2e/add-auth.mjs.
#
# No expected failures: the run fails on any FAILURE check of a scored scenario (the suite's
# exit code). Scenarios the suite runs without scoring them (extensions such as tasks-*, and
# pending ones) never fail the run; their failed checks are listed, marked "not scored".
#
# Usage: run_fixtures.sh [REVISION...]       (default: 2025-11-25 2026-07-28)
# Environment:
#   SANDGATE_CONFORMANCE_SERVER  the fixture server binary (default:
#                                ../../build/tests/conformance/sandgate_conformance_server). It is
#                                started as `$binary --listen 127.0.0.1:0 --log-level warn` with
#                                SANDGATE_TOKEN set, and must print "listening on <url>".
#   CONFORMANCE_E2E_DIR          where the suite is installed (default: ../e2e; needs
#                                node_modules/.bin/node (Node >= 22) and
#                                node_modules/@modelcontextprotocol/conformance).
#   CONFORMANCE_OUTPUT_DIR       keep the per-check results
#                                (<dir>/<revision>/server-<scenario>-<time>/checks.json) here;
#                                by default they go to a temporary directory that is removed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${SANDGATE_CONFORMANCE_SERVER:-$here/../../build/tests/conformance/sandgate_conformance_server}"
e2e="${CONFORMANCE_E2E_DIR:-$here/../e2e}"
node22="$e2e/node_modules/.bin/node"
cli="$e2e/node_modules/@modelcontextprotocol/conformance/dist/index.js"
preload="$e2e/add-auth.mjs"
revisions=("$@")
[ ${#revisions[@]} -gt 0 ] || revisions=(2025-11-25 2026-07-28)

for needed in "$binary" "$node22" "$cli" "$preload"; do
  [ -e "$needed" ] || { echo "run_fixtures.sh: missing $needed"; exit 1; }
done

if [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ]; then
  results="$CONFORMANCE_OUTPUT_DIR"; mkdir -p "$results"
else
  results="$(mktemp -d)"
fi
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || kill -TERM "$server_pid" 2>/dev/null || true
  [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ] || rm -rf "$results"
}
trap cleanup EXIT

start_server() {  # sets $server_url and $server_pid
  local out; out="$(mktemp)"
  SANDGATE_TOKEN="$token" "$binary" --listen 127.0.0.1:0 --log-level warn > "$out" &
  server_pid=$!
  for _ in $(seq 200); do
    grep -q "listening on" "$out" 2>/dev/null && break
    sleep 0.05
  done
  server_url="$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$out")"
  rm -f "$out"
  [ -n "$server_url" ] || { echo "fixture server did not start: $binary"; exit 1; }
}

stop_server() {
  [ -n "$server_pid" ] || return 0
  # A clean stop exits 0; anything else (a crash, a sanitizer report) fails the run.
  local rc=0
  kill -TERM "$server_pid"; wait "$server_pid" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "fixture server exited with status $rc"; failures=$((failures + 1)); fi
  server_pid=""
}

# Every FAILURE/WARNING check of a scenario the revision scores, with its message; with
# CONFORMANCE_SHOW_UNSCORED=1 also those of the scenarios it runs without scoring (tasks-*,
# pending ones), marked so.
explain() {  # revision results-dir
  local scored
  scored="$("$node22" "$cli" list --server --requirements "$1" | sed -n '/Server scenarios/,/Client scenarios/s/^  - //p')"
  # shellcheck disable=SC2016  # the single-quoted program is JavaScript (template literals)
  "$node22" --input-type=module -e '
    import { readFileSync, readdirSync, existsSync } from "node:fs";
    const [scored, dir, showUnscored] = process.argv.slice(1);
    const required = new Set(scored.split("\n"));
    let hidden = 0;
    for (const run of readdirSync(dir).sort()) {
      const path = `${dir}/${run}/checks.json`;
      if (!existsSync(path)) continue;
      const scenario = run.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
      const mark = required.has(scenario) ? "" : " (not scored)";
      for (const c of JSON.parse(readFileSync(path, "utf8"))) {
        if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
        if (mark && showUnscored !== "1") { hidden++; continue; }
        const why = (c.errorMessage ?? "").replace(/\s+/g, " ").slice(0, 300);
        console.log(`  ${scenario}:${c.id} ${c.status}${mark}: ${why}`);
      }
    }
    if (hidden) console.log(`  (${hidden} failed check(s) of scenarios not scored; CONFORMANCE_SHOW_UNSCORED=1 lists them)`);
    ' "$scored" "$2" "${CONFORMANCE_SHOW_UNSCORED:-0}"
}

failures=0
for rev in "${revisions[@]}"; do
  token="fixtures-$$-$RANDOM"
  start_server
  log="$results/$rev.log"
  status=0
  SANDGATE_E2E_TOKEN="$token" NODE_OPTIONS="--import $preload" PATH="$(dirname "$node22"):$PATH" \
    "$node22" "$cli" server --url "$server_url" --requirements "$rev" -o "$results/$rev" \
    > "$log" 2>&1 || status=$?
  stop_server
  # The suite prints ANSI colours even into a file.
  sed -e 's/\x1b\[[0-9;]*m//g' -n -e '/=== SUMMARY ===/,$p' "$log"
  if [ -d "$results/$rev" ]; then
    echo "failed or warning checks ($rev):"
    explain "$rev" "$results/$rev"
  else  # the suite stopped before writing results: show all it printed
    sed -e 's/\x1b\[[0-9;]*m//g' "$log"
  fi
  if [ "$status" -eq 0 ]; then
    echo "conformance fixtures $rev: passed"
  else
    echo "conformance fixtures $rev: FAILED (exit $status)"
    failures=$((failures + 1))
  fi
done

echo "$(( ${#revisions[@]} - failures )) revision(s) passed, $failures failed"
[ "$failures" -eq 0 ]
