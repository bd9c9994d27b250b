#!/usr/bin/env bash
# Builds the release preset and runs the benchmarks, writing bench/results/. Run as root on an
# otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release > /dev/null
cmake --build --preset release --target sandbox_bench
./build-release/bench/sandbox_bench "${1:-300}" bench/results
