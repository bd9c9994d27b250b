#!/usr/bin/env bash
# Installs, builds and runs every test: unit, sandbox, integration, the official SDK client
# end-to-end tests and the MCP conformance suite. `scripts/test.sh asan-ubsan` (or `tsan`) runs
# the same suite, less the benchmark smoke run (tsan: and less the Node-driven e2e runs), on that
# sanitizer build. Needs root (apt, and
# sandboxes with distinct host uids).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
[[ -n "${SANDGATE_DEPS_INSTALLED:-}" ]] || ./scripts/install-deps.sh
./scripts/build.sh "$preset"
# Exact versions from the committed lockfile.
(cd tests/e2e && npm ci --no-audit --no-fund)
(cd bench/peers && npm ci --no-audit --no-fund)
ctest --preset "$preset"
