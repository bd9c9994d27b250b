#!/usr/bin/env bash
# Installs, builds and runs every test: unit, sandbox, integration, the official SDK client
# end-to-end tests and the MCP conformance suite. `scripts/test.sh asan-ubsan` runs the same
# suite, less the benchmark smoke run and the Node-driven e2e runs (the integration suite drives
# the same gateway paths over raw HTTP), on the ASan+UBSan build. `scripts/test.sh tsan` runs, on
# the ThreadSanitizer build, the unit tests, the soak (many clients at once, hostile ones among
# them) and the integration tests that drive the gateway's threads against each other: shutdown
# under load, cancellation, queues and fair shares, tasks, replicas, hibernation, restarts (the
# tsan test preset's filter names them). Needs root (apt, and sandboxes with distinct host uids).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
[[ -n "${SANDGATE_DEPS_INSTALLED:-}" ]] || ./scripts/install-deps.sh
# A sanitizer build makes only what its test preset runs (no benchmarks, no conformance fixtures
# server; for tsan no sandbox suite): each is a build of its own in CI.
case "$preset" in
  asan-ubsan) targets=(sandgate exec_with unit_tests sandbox_tests integration_tests soak_driver) ;;
  tsan) targets=(sandgate exec_with unit_tests integration_tests soak_driver) ;;
  *) targets=() ;;
esac
./scripts/build.sh "$preset" "${targets[@]}"
# Exact versions from the committed lockfile.
(cd tests/e2e && npm ci --no-audit --no-fund)
(cd bench/peers && npm ci --no-audit --no-fund)
ctest --preset "$preset"
