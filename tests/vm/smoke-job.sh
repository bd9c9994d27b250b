#!/usr/bin/env bash
# Example job for tests/vm/run-in-guest.sh that proves the guest is what the VM tests rely on:
# systemd as init, a pure cgroup v2 hierarchy with the controllers sandgate uses, the container
# runtimes and sandbox interpreters installed, transient units with delegation, and a writable
# share. Runs every check, prints each result, exits non-zero if any failed.
#
#   tests/vm/run-in-guest.sh "$PWD" tests/vm/smoke-job.sh
set -euo pipefail
failures=0
check() {  # check DESCRIPTION COMMAND...: runs COMMAND, shows its output, counts a failure
  local what="$1"
  shift
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  if ((rc == 0)); then
    echo "ok   $what${out:+: $(head -c 300 <<< "$out" | tr '\n' ' ')}"
  else
    echo "FAIL $what (exit $rc)${out:+: $(head -c 300 <<< "$out" | tr '\n' ' ')}"
    failures=$((failures + 1))
  fi
}

echo "kernel $(uname -r); command line: $(cat /proc/cmdline)"
check "pid 1 is systemd" bash -c '[[ "$(readlink /proc/1/exe)" == */systemd ]] && readlink /proc/1/exe'
check "the job runs in its own unit" \
  bash -c 'grep -x "0::/system.slice/sandgate-vm-job.service" /proc/self/cgroup'
check "/sys/fs/cgroup is cgroup2fs" bash -c '[[ "$(stat -fc %T /sys/fs/cgroup)" == cgroup2fs ]] && stat -fc %T /sys/fs/cgroup'
check "root controllers include memory pids cpu" bash -c '
  c=" $(cat /sys/fs/cgroup/cgroup.controllers) "; echo "$c"
  [[ $c == *" memory "* && $c == *" pids "* && $c == *" cpu "* ]]'
check "no cgroup v1 hierarchy is mounted" bash -c '! awk '\''$3 == "cgroup"'\'' /proc/mounts | grep .'
check "podman" podman --version
check "crun" crun --version
check "containerd" containerd --version
check "runc" runc --version
check "python3 with numpy" /usr/bin/python3 -c 'import numpy; print(numpy.__version__)'
check "node" bash -c 'node -e 0 && node --version'
# --pipe brings the unit's output back here; Delegate=yes must give it a cgroup of its own.
check "systemd-run a delegated unit" bash -c '
  out="$(systemd-run --quiet --wait --pipe -p Delegate=yes /bin/cat /proc/self/cgroup)"; echo "$out"
  [[ "$out" == "0::/system.slice/run-"*".service" ]]'
# A sandgate built on the host (if the share has one) must find all its libraries here.
bin="${SANDGATE_SHARE:-$PWD}/build/sandgate"
if [[ -x "$bin" ]]; then
  check "the host-built sandgate links" bash -c '! ldd "$1" | grep "not found"' _ "$bin"
fi
probe="${SANDGATE_SHARE:-$PWD}/tests/vm/.smoke-write.$$"
check "write a file into the share" bash -c '
  echo hello-from-guest > "$1" && [[ "$(cat "$1")" == hello-from-guest ]]; rc=$?; rm -f "$1"; exit $rc' _ "$probe"

if ((failures)); then
  echo "smoke-job: $failures check(s) failed"
  exit 1
fi
echo "smoke-job: all checks passed"
