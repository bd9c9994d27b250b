#!/usr/bin/env bash
# Configures and builds one CMake preset (default: dev, into build/; the server is build/sandgate).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
cmake --preset "$preset"
cmake --build --preset "$preset"
