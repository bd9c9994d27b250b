# Shared by the guest jobs: where the repository and its builds are, and checks every job ends
# with. Sourced, not run.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
build="${SANDGATE_VM_BUILD:-$repo/build}"
failures=0

say() { printf '\n=== %s\n' "$*"; }
pass() { printf 'PASS: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
check() {  # check "what" command...: PASS or FAIL, and the command's status
  local what="$1"; shift
  if "$@"; then pass "$what"; else fail "$what"; return 1; fi
}

# The guest must be what production nodes are: cgroup v2 only, with the controllers we use.
require_pure_v2() {
  [[ "$(stat -fc %T /sys/fs/cgroup)" == cgroup2fs ]] || { echo "not cgroup v2" >&2; exit 1; }
  if grep -q ' cgroup ' /proc/mounts; then echo "a cgroup v1 hierarchy is mounted" >&2; exit 1; fi
}

# No sandgate cgroup, mount or process may be left once the gateways are gone.
nothing_left() {
  local cg mounts procs
  cg="$(find /sys/fs/cgroup -type d \( -name 'sandgate-[0-9]*' -o -name sandgate-gateway \
         -o -name 'sandgate-probe-*' \) 2>/dev/null || true)"
  mounts="$(grep -c sandgate /proc/mounts || true)"
  procs="$(pgrep -c -f 'sandgate-supervisor|/sandgate( |$)' || true)"
  [[ -z "$cg" ]] || echo "left cgroups: $cg"
  [[ "$mounts" == 0 ]] || echo "left mounts: $mounts"
  [[ "$procs" == 0 ]] || echo "left processes: $procs"
  [[ -z "$cg" && "$mounts" == 0 && "$procs" == 0 ]]
}

# After the sessions ended, the instance cgroup holds the pool of ready sandboxes' cgroups and no
# other: as many sandbox cgroups as /metrics counts ready sandboxes, none of a session. Waits
# (up to a minute) for a build in flight to land in the pool.
# only_ready_sandboxes_left CGROUP_DIR URL TOKEN
only_ready_sandboxes_left() {
  local cg="$1" base="${2%/mcp}" token="$3" metrics live ready sandboxes
  for _ in $(seq 60); do
    metrics="$(curl -fs -H "Authorization: Bearer $token" "$base/metrics")"
    live="$(awk '$1 == "sandgate_sandboxes" {print $2}' <<< "$metrics")"
    ready="$(awk '$1 == "sandgate_pool_ready" {print $2}' <<< "$metrics")"
    sandboxes="$(find "$cg" -mindepth 2 -maxdepth 2 -path '*/sandgate-[0-9]*/*' -type d | wc -l)"
    [[ "$live" == 0 && -n "$ready" && "$sandboxes" == "$ready" ]] && return 0
    sleep 1
  done
  echo "sandbox cgroups: $sandboxes; ready sandboxes: $ready; sessions' sandboxes: $live"
  return 1
}

# The gateway logs one JSON object a line: none of them at level error.
log_has_no_error() { ! grep -q '"level":"error"' "$1"; }

# What every running deployment must show, whatever runs it: the gateway in its leaf and an
# instance cgroup for sandboxes, the acceptance checks through the SDK client, no sandbox cgroup
# once the session ended, exit 0 on SIGTERM, a log without errors, nothing left.
# check_deployment CGROUP_DIR URL TOKEN STOP_COMMAND LOG_FILE (STOP_COMMAND writes LOG_FILE)
check_deployment() {
  local cg="$1" url="$2" token="$3" stop="$4" log="$5"
  check "the gateway sits in its leaf, sandboxes in an instance cgroup" \
    test -d "$cg/sandgate-gateway" -a -n "$(find "$cg" -maxdepth 1 -name 'sandgate-[0-9]*')"
  check "the acceptance checks pass through the SDK client" \
    node "$repo/tests/e2e/pod_check.mjs" "$url" "$token"
  check "the ended session left no sandbox cgroup (the pool's ready ones stay)" \
    only_ready_sandboxes_left "$cg" "$url" "$token"
  check "SIGTERM: the gateway exits 0" "$stop"
  check "the log has no error line" log_has_no_error "$log"
  check "nothing left after it" nothing_left
}

finish() {
  say "summary: $failures failed"
  ((failures == 0))
}
