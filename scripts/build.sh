#!/usr/bin/env bash
# Configures and builds one CMake preset (default: dev, into build/; the server is build/sandgate),
# all of it or only the targets named after the preset.
#
#   scripts/build.sh [preset] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
shift || true
cmake --preset "$preset"
if (($# > 0)); then
  cmake --build --preset "$preset" --target "$@"
else
  cmake --build --preset "$preset"
fi
