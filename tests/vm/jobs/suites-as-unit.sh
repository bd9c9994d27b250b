#!/usr/bin/env bash
# Guest job: the sandbox and integration suites on pure cgroup v2, each run as a systemd service
# with Delegate=yes — the way deploy/systemd/sandgate.service runs the gateway. The sandbox suite
# is itself a gateway (it makes sandboxes in-process), alone in its unit's cgroup. The
# integration suite starts gateway processes: each gets a cgroup of its own under the unit's
# (SANDGATE_TEST_CGROUP_PARENT), as a container would, while the runner sits in a leaf.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
require_pure_v2

unit() {  # unit NAME COMMAND...: a transient Delegate=yes service; its exit status is ours
  local name="$1"; shift
  # The guest has what these suites may otherwise skip without (tests/support/skip.hpp); it has
  # no cgroup v1, which may skip.
  systemd-run --quiet --unit="$name" --wait --pipe --collect -p Delegate=yes \
    -p OOMPolicy=continue -p Type=exec -p WorkingDirectory="$repo" \
    -E SANDGATE_TESTS_REQUIRE=root,sandboxes,landlock,cgroups,cgroup-kill,cgroup-v2,numpy "$@"
}

say "sandbox suite as a Delegate=yes unit"
# Figures, live output and hibernation's archives add no cgroup path of their own (matplotlib's
# import alone takes minutes under software emulation); they run natively in every other stage.
check "sandbox suite" unit sandgate-sandbox-suite "$build/tests/sandbox_tests" --order decl \
  "~[figures]~[live_output]~[hibernate]"

say "integration suite as a Delegate=yes unit, one cgroup per gateway"
# shellcheck disable=SC2016
check "integration suite" unit sandgate-integration-suite /bin/bash -c '
  own="/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)"
  # "0" moves the writer itself (writing $$ here was refused with EINVAL).
  mkdir "$own/runner" "$own/gateways" && echo 0 > "$own/runner/cgroup.procs" || exit 1
  for c in memory pids cpu; do echo "+$c" > "$own/cgroup.subtree_control" || exit 1; done
  for c in memory pids cpu; do echo "+$c" > "$own/gateways/cgroup.subtree_control" || exit 1; done
  # The HTTP client tests ([hostile]) hold wall-clock deadlines that software emulation
  # stretches. Those and the transport-only ones (HTTP hardening, TLS, replica forwarding, tasks,
  # live output, files in and out, session caps, hibernation, restarts, tenants, 2026-07-28
  # handles) make no sandbox or
  # cgroup of their own kind: they run natively in every other stage, and leaving them out here
  # keeps CI within its time. So are the spend-cap and budget tests: sized for native CPU
  # speed (under emulation Python'"'"'s start alone crosses them); the sandbox suite above meters
  # memory.peak (v2 only) here. And OAuth ([oauth]): token checks and a Python issuer signing
  # with RSA, nothing of cgroups. And the pool of ready sandboxes ([pool]): its tests preload the
  # data stack (minutes under emulation); its sandboxes are made like any other, and the unit and
  # pod jobs run with it on. And egress ([egress]): a proxy in the gateway and stock pip and npm
  # (which this guest does not carry), nothing of cgroups; the sandbox suite above runs the
  # egress sandbox checks here. And code mode ([upstream]): upstream MCP servers on Node 22 from
  # tests/e2e, nothing of cgroups; the sandbox suite above runs the tool channel checks here.
  SANDGATE_TEST_CGROUP_PARENT="$own/gateways" "$0" --order decl \
    "~[hostile]~[hardening]~[tls]~[replicas]~[tasks]~[live_output]~[files]~[session_cap]~[hibernate]~[restart]~[spend]~[budget]~[postgres]~[tenants]~[stateless]~[oauth]~[pool]~[egress]~[upstream]"
  rc=$?
  # The per-gateway cgroups (a SIGKILLed gateway leaves its leaf, as in a unit until systemd
  # removes the unit'"'"'s cgroup).
  find "$own/gateways" -depth -type d -exec rmdir {} + 2>/dev/null
  exit $rc' "$build/tests/integration_tests"

say "nothing left behind"
check "no sandgate cgroup, mount or process left" nothing_left
finish
