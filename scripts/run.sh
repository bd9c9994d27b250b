#!/usr/bin/env bash
# Installs, builds and starts sandgate on 127.0.0.1:8080. Without SANDGATE_TOKEN (or
# --token-file) it makes a token and prints it once. Extra arguments go to sandgate.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Only what serving needs: the server binary (scripts/test.sh builds the tests and benchmarks).
./scripts/build.sh dev sandgate
if [ -z "${SANDGATE_TOKEN:-}" ] && [[ " $* " != *" --token-file"* ]] && [[ " $* " != *" --no-auth"* ]]; then
  SANDGATE_TOKEN="$(openssl rand -hex 32)"
  export SANDGATE_TOKEN
  echo "Token for this run (send it as 'Authorization: Bearer <token>'): $SANDGATE_TOKEN"
fi
exec ./build/sandgate "$@"
