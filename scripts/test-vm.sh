#!/usr/bin/env bash
# The pure cgroup v2 stage: boots a Debian 12 guest under qemu (tests/vm) and runs, on the dev
# build that scripts/test.sh made, the sandbox and integration suites as a systemd service with
# Delegate=yes, then the gateway in pods as Kubernetes runs it (podman/crun and runc) with a
# read-only cgroup fs, and the pod-limit OOM with memory.oom.group=1. Needs root. Each job
# prints PASS/FAIL lines; the stage fails when any job does.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/sandgate && -x build/tests/integration_tests ]] || {
  echo "test-vm: build the dev preset first (scripts/test.sh)" >&2; exit 2; }
[[ -d tests/e2e/node_modules ]] || (cd tests/e2e && npm ci --no-audit --no-fund)
tests/vm/build-guest.sh
failed=()
ran=0
for job in ${SANDGATE_VM_JOBS:-suites-as-unit service-unit pods-podman pods-runc}; do
  [[ -f "tests/vm/jobs/$job.sh" ]] || { echo "test-vm: no job tests/vm/jobs/$job.sh" >&2; exit 2; }
  ran=$((ran + 1))
  echo "=== VM job $job"
  start=$SECONDS
  if ! tests/vm/run-in-guest.sh "$PWD" "tests/vm/jobs/$job.sh" --timeout 1800; then failed+=("$job"); fi
  echo "=== VM job $job took $((SECONDS - start)) s"
done
# The plain closing line: one per job.
echo "vm: $((ran - ${#failed[@]})) passed, ${#failed[@]} failed"
((${#failed[@]} == 0)) || { echo "test-vm: failed: ${failed[*]}" >&2; exit 1; }
