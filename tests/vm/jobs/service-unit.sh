#!/usr/bin/env bash
# Guest job: the gateway as the shipped systemd unit (deploy/systemd/sandgate.service) on pure
# cgroup v2 — its Delegate=yes, OOMPolicy=continue and KillMode=mixed as written; only the
# binary's path and the token come from the test (a drop-in). Then the same with MemoryMax on
# the unit: sandboxes that outgrow it lose a program, the service keeps its main process.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
require_pure_v2
token="vm-unit-token"
url="http://127.0.0.1:8080/mcp"

install -m 0644 "$repo/deploy/systemd/sandgate.service" /etc/systemd/system/sandgate.service
mkdir -p /etc/sandgate /etc/systemd/system/sandgate.service.d
printf '%s default\n' "$(printf %s "$token" | sha256sum | cut -d' ' -f1)" > /etc/sandgate/tokens
chmod 0600 /etc/sandgate/tokens
install -m 0755 "$build/sandgate" /usr/local/bin/sandgate

start_unit() {  # start_unit [extra [Service] lines]
  # The pool's preload: one stdlib module instead of the data stack, whose import (matplotlib's
  # alone) takes minutes under software emulation; the pool itself is on, as shipped.
  printf '[Service]\nEnvironment=SANDGATE_POOL_PRELOAD=json\n%s\n' "$*" \
    > /etc/systemd/system/sandgate.service.d/test.conf
  systemctl daemon-reload
  systemctl start sandgate || return 1
  for _ in $(seq 240); do
    curl -fs http://127.0.0.1:8080/readyz > /dev/null 2>&1 && return 0
    systemctl is-active -q sandgate || break
    sleep 1
  done
  journalctl -u sandgate --no-pager | tail -5
  curl -s http://127.0.0.1:8080/readyz; echo
  return 1
}

stop_unit() {  # SIGTERM to the gateway (KillMode=mixed); it must exit 0
  systemctl stop sandgate
  local status; status="$(systemctl show -p ExecMainStatus --value sandgate)"
  [[ "$status" == 0 ]] || { echo "ExecMainStatus=$status"; return 1; }
}

say "the shipped unit, as written"
if check "the service becomes ready with full isolation" start_unit; then
  cg="/sys/fs/cgroup/system.slice/sandgate.service"
  check "the gateway sits in its leaf, sandboxes in an instance cgroup" \
    test -d "$cg/sandgate-gateway" -a -n "$(find "$cg" -maxdepth 1 -name 'sandgate-[0-9]*')"
  check "the acceptance checks pass through the SDK client" \
    node "$repo/tests/e2e/pod_check.mjs" "$url" "$token"
  check "SIGTERM (systemctl stop): the gateway exits 0" stop_unit
  check "nothing left after the service" nothing_left
fi

say "the shipped unit with MemoryMax=1536M: sandboxes outgrow it, the service lives"
if check "the service becomes ready" start_unit "MemoryMax=1536M"; then
  main_pid="$(systemctl show -p MainPID --value sandgate)"
  check "a sandbox program is the OOM victim" node "$repo/tests/e2e/pod_check.mjs" "$url" "$token" pressure
  check "the service is active with the same main process" \
    test "$(systemctl is-active sandgate) $(systemctl show -p MainPID --value sandgate)" == "active $main_pid"
  check "SIGTERM (systemctl stop): the gateway exits 0" stop_unit
  check "nothing left after the service" nothing_left
fi
finish
