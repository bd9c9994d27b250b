#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against the real gateway, once per protocol revision, with exactly the scenarios
# that revision requires (`--requirements`): 2025-11-25 (initialize + Mcp-Session-Id) and
# 2026-07-28 (stateless: server/discover, _meta envelope, MCP-* headers). Auth stays on: every
# request the suite makes gets a bearer token from add-auth.mjs.
#
# The production gateway has only the `execute` and `end_sandbox` tools, so the scenarios that
# need the suite's fixture tools, resources and prompts fail; each revision's expected failures
# are listed, per check and with the reason, in conformance-expected-failures-<revision>.yml. The
# run fails on any other failed check (and on a WARNING: the suite counts one as a failure when
# a baseline is given), and on a listed check that now passes (a stale entry: remove it).
#
# Usage: run_conformance.sh [REVISION...]       (default: 2025-11-25 2026-07-28)
# Environment:
#   SANDGATE_BINARY   gateway binary to start (default: ../../build/sandgate). It is started as
#                     `$SANDGATE_BINARY --listen 127.0.0.1:0 --log-level warn $SANDGATE_ARGS`
#                     with SANDGATE_TOKEN set, and must print "listening on <url>".
#   SANDGATE_ARGS     extra arguments for the binary (word-split).
#   CONFORMANCE_URL   test a server that is already running at this URL instead of starting one;
#                     its token comes from SANDGATE_E2E_TOKEN (unset: no Authorization header).
#   CONFORMANCE_EXPECTED_FAILURES
#                     unset: conformance-expected-failures-<revision>.yml next to this script.
#                     "none": no expected failures: every failed check of a scored scenario fails
#                       the run (WARNINGs then do not) — for a server that has the fixtures:
#                       SANDGATE_BINARY=../../build/tests/conformance/sandgate_conformance_server \
#                         CONFORMANCE_EXPECTED_FAILURES=none ./run_conformance.sh
#                     any other value: a file path; "{rev}" in it is replaced by the revision.
#   CONFORMANCE_OUTPUT_DIR
#                     keep the per-check results (<dir>/<revision>/server-<scenario>-<time>/checks.json)
#                     here; by default they go to a temporary directory that is removed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${SANDGATE_BINARY:-$here/../../build/sandgate}"
default_expected="$here/conformance-expected-failures-{rev}.yml"
expected_pattern="${CONFORMANCE_EXPECTED_FAILURES:-$default_expected}"
node22="$here/node_modules/.bin/node"       # the suite needs Node >= 22 (npm package node@22)
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
revisions=("$@")
[ ${#revisions[@]} -gt 0 ] || revisions=(2025-11-25 2026-07-28)

if [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ]; then
  results="$CONFORMANCE_OUTPUT_DIR"; mkdir -p "$results"
else
  results="$(mktemp -d)"
fi
gateway_pid=""
cleanup() {
  [ -z "$gateway_pid" ] || kill -TERM "$gateway_pid" 2>/dev/null || true
  [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ] || rm -rf "$results"
}
trap cleanup EXIT

start_gateway() {  # sets $gateway_url and $gateway_pid
  local out; out="$(mktemp)"
  # shellcheck disable=SC2086  # SANDGATE_ARGS is a list of arguments
  SANDGATE_TOKEN="$token" "$binary" --listen 127.0.0.1:0 --log-level warn ${SANDGATE_ARGS:-} > "$out" &
  gateway_pid=$!
  for _ in $(seq 200); do
    grep -q "listening on" "$out" 2>/dev/null && break
    sleep 0.05
  done
  gateway_url="$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$out")"
  rm -f "$out"
  [ -n "$gateway_url" ] || { echo "gateway did not start: $binary"; exit 1; }
}

stop_gateway() {
  [ -n "$gateway_pid" ] || return 0
  # A clean stop exits 0; anything else (a crash, a sanitizer report) fails the run.
  local rc=0
  kill -TERM "$gateway_pid"; wait "$gateway_pid" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "gateway exited with status $rc"; failures=$((failures + 1)); fi
  gateway_pid=""
}

# After a failed run: the message of every FAILURE/WARNING check of a scenario the revision
# scores that the baseline does not list (the suite itself names them, without the why). The
# scenarios it also runs but does not score (extensions, pending ones) are left out.
explain() {  # revision results-dir expected-file|none
  local scored
  scored="$("$node22" "$cli" list --server --requirements "$1" | sed -n '/Server scenarios/,/Client scenarios/s/^  - //p')"
  # shellcheck disable=SC2016  # the single-quoted program is JavaScript (template literals)
  (cd "$here" && "$node22" --input-type=module -e '
    import { readFileSync, readdirSync, existsSync } from "node:fs";
    import { parse } from "yaml";
    const [scored, dir, file] = process.argv.slice(1);
    const required = new Set(scored.split("\n"));
    const listed = new Set(file === "none" ? [] : (parse(readFileSync(file, "utf8"))?.server ?? []));
    let expected = 0;
    for (const run of readdirSync(dir).sort()) {
      const path = `${dir}/${run}/checks.json`;
      const scenario = run.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
      if (!existsSync(path) || !required.has(scenario)) continue;
      for (const c of JSON.parse(readFileSync(path, "utf8"))) {
        if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
        if (listed.has(scenario) || listed.has(`${scenario}:${c.id}`)) { expected++; continue; }
        const why = (c.errorMessage ?? "").replace(/\s+/g, " ").slice(0, 300);
        console.log(`  ${scenario}:${c.id} ${c.status}: ${why}`);
      }
    }
    if (expected) console.log(`  (and ${expected} expected, listed in ${file})`);' "$scored" "$2" "$3")
}

failures=0
for rev in "${revisions[@]}"; do
  if [ -n "${CONFORMANCE_URL:-}" ]; then
    token="${SANDGATE_E2E_TOKEN:-}"; gateway_url="$CONFORMANCE_URL"
  else
    token="conformance-$$-$RANDOM"; start_gateway
  fi
  args=(server --url "$gateway_url" --requirements "$rev" -o "$results/$rev")
  expected="none"
  if [ "$expected_pattern" != "none" ]; then
    expected="${expected_pattern//\{rev\}/$rev}"
    [ -f "$expected" ] || { echo "no expected-failures file $expected"; exit 1; }
    args+=(--expected-failures "$expected")
  fi
  log="$results/$rev.log"
  status=0
  SANDGATE_E2E_TOKEN="$token" NODE_OPTIONS="--import $here/add-auth.mjs" PATH="$(dirname "$node22"):$PATH" \
    "$node22" "$cli" "${args[@]}" > "$log" 2>&1 || status=$?
  stop_gateway
  # The summary and the baseline verdict (the suite prints ANSI colours even into a file).
  sed -e 's/\x1b\[[0-9;]*m//g' -n -e '/=== SUMMARY ===/,$p' "$log"
  if [ "$status" -eq 0 ]; then
    echo "conformance $rev: passed"
  else
    echo "conformance $rev: FAILED (exit $status); unexpected failed checks:"
    if [ -d "$results/$rev" ]; then
      explain "$rev" "$results/$rev" "$expected"
    else  # the suite stopped before writing results: show all it printed
      sed -e 's/\x1b\[[0-9;]*m//g' "$log"
    fi
    failures=$((failures + 1))
  fi
done

echo "$(( ${#revisions[@]} - failures )) revision(s) passed, $failures failed"
[ "$failures" -eq 0 ]
