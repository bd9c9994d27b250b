#!/usr/bin/env bash
# Guest job: the gateway as Kubernetes runs it through CRI with containerd 1.6 + runc 1.1 on pure
# cgroup v2. The job writes the OCI config.json that containerd's CRI plugin generates for the
# StatefulSet's container (deploy/k8s/statefulset.yaml) and runs it with runc and the systemd
# cgroup driver, as the containerd shim does (`runc --systemd-cgroup create/start`; `runc run` in
# the foreground here, so that its exit status is the gateway's):
#   - namespaces pid, ipc, uts, mount, network, cgroup (a private cgroup namespace), plus user
#     for hostUsers: false (container 0..65535 = host 200000..265535; runc 1.1 has no idmapped
#     mounts, so the image's files show as nobody but stay world-readable);
#   - /sys/fs/cgroup as CRI mounts it for a non-privileged container: type cgroup, options
#     nosuid,noexec,nodev,relatime,ro;
#   - securityContext as the StatefulSet has it (Pod Security baseline, issue #46): capabilities
#     ALL dropped + SETUID, SETGID (bounding, effective, permitted; no inheritable, no ambient),
#     the shipped seccomp profile (deploy/k8s/security-profiles/sandgate.json, as CRI turns a
#     Localhost profile into linux.seccomp), the shipped AppArmor profile when the guest kernel
#     has AppArmor, procMount Unmasked (no masked and no read-only paths),
#     readOnlyRootFilesystem, uid 0, noNewPrivileges true (allowPrivilegeEscalation: false);
#   - cgroupsPath kubepods-burstable-pod<uid>.slice:cri-containerd:<64 hex> (kubelet's systemd
#     driver), memory limit (swap = limit), cpu quota 8, cpu shares from a request of 2,
#     devices deny-all (runc appends its default allow list), memory.oom.group=1 through
#     linux.resources.unified as a kubelet ≥ 1.28 asks for it, oomScoreAdj of a Burstable pod;
#   - the ConfigMap's environment, SANDGATE_REPLICA_NAME, SANDGATE_MEMORY_LIMIT_MB = the limit;
#     the Secret's directory (tokens, peer-secret) bind-mounted read-only, /tmp a 64 MiB tmpfs, the binary under test
#     installed in the image at /usr/local/bin/sandgate (as deploy/Dockerfile puts it);
#   - a pod network: runc makes the network namespace (owned by the pod's user namespace when
#     there is one, as Kubernetes requires: hostNetwork cannot go with hostUsers: false) and the
#     job adds a veth pair to it afterwards, as a CNI plugin does. The client talks to 10.88.0.2.
# Variants: hostUsers true and false with the cgroup fs read-only as CRI mounts it; two
# diagnostic ones with it mounted read-write (CRI never generates that for an unprivileged
# container, but it is the one case where runc 1.1 chowns the container's cgroup to the user
# namespace's root, and only with the systemd driver); then the pod-limit OOM with
# memory.oom.group=1 on the container's cgroup (again with a rw cgroup fs if the ro one fails).
# A pod that is not ready is explained: sandgate's refusal, the owner of its cgroup, and what the
# pod's root gets from each way to a writable cgroup fs (with the errno).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
require_pure_v2
image=/srv/sandgate-image
token="vm-pod-token"
pod_ip=10.88.0.2
url="http://$pod_ip:8080/mcp"
work="$(mktemp -d)"
chmod 0755 "$work"   # bind-mount sources must be reachable from the pod's user namespace
# The binary under test goes into the image as deploy/Dockerfile puts it there: a copy on the
# guest's own disk (the share's file can be rebuilt while the job runs, and a running gateway
# would page in code of another build), and no bind mount under /usr (a mount the sandboxes'
# non-recursive /usr bind may not reveal: EINVAL in their user namespace).
install -m 0755 "$build/sandgate" "$image/usr/local/bin/sandgate" || { echo "no $build/sandgate" >&2; exit 1; }
# CRI binds /etc/hosts over the image's; a root owned by the host's root needs the file there.
touch "$image/etc/hosts"
# The guest's systemd-networkd manages every ethernet link (veths included) and would replace
# the address of the pod's veth with the guest's own: it must leave that link alone.
mkdir -p /run/systemd/network
printf '[Match]\nName=sgveth0\n\n[Link]\nUnmanaged=yes\n' > /run/systemd/network/05-sandgate-pod-veth.network
networkctl reload > /dev/null 2>&1 || systemctl restart systemd-networkd
id=''         # the running container's id (64 hex digits, as CRI names containers)
runc_pid=''   # `runc run`, whose exit status is the gateway's
cleanup() {
  if [[ -n "$id" ]]; then runc --systemd-cgroup kill "$id" KILL > /dev/null 2>&1; sleep 1
    runc --systemd-cgroup delete -f "$id" > /dev/null 2>&1; fi
  ip link del sgveth0 > /dev/null 2>&1
  systemctl stop kubepods.slice > /dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# The ConfigMap's data, as the pod's environment.
awk '/^data:/ {on=1; next} on && /^  SANDGATE_[A-Z_]+:/ {
       key=$1; sub(/:$/, "", key); val=$0; sub(/^[^:]*: */, "", val); gsub(/^"|"$/, "", val);
       print key "=" val }' "$repo/deploy/k8s/configmap.yaml" > "$work/env"
# The pool's preload: one stdlib module instead of the data stack, whose import (matplotlib's
# alone) takes minutes under software emulation; the pool itself is as the ConfigMap has it.
sed -i 's/^SANDGATE_POOL_PRELOAD=.*/SANDGATE_POOL_PRELOAD=json/' "$work/env"
# The Secret volume (deploy/k8s/secret.example.yaml), mounted whole at /etc/sandgate: the
# tokens file and the replicas' peer secret the ConfigMap names.
mkdir -p "$work/secret"
printf '%s default\n' "$(printf %s "$token" | sha256sum | cut -d' ' -f1)" > "$work/secret/tokens"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret/peer-secret"
chmod 0644 "$work/secret/tokens" "$work/secret/peer-secret"
echo sandgate-0 > "$work/hostname"
printf '127.0.0.1 localhost\n10.88.0.2 sandgate-0\n' > "$work/hosts"
echo "nameserver 10.88.0.1" > "$work/resolv.conf"
chmod 0644 "$work/hostname" "$work/resolv.conf" "$work/hosts"

# config.json as containerd 1.6's CRI plugin writes it for the StatefulSet's container.
cat > "$work/spec.py" <<'EOF'
import json, os, sys
mem = int(os.environ["MEM_MB"]) << 20
userns = os.environ["USERNS"] == "1"
cgroup_ro = os.environ["CGROUP_RO"] == "1"
work = os.environ["WORK"]
env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=sandgate-0"]
env += [l.strip() for l in open(f"{work}/env") if l.strip()]
env += ["SANDGATE_REPLICA_NAME=sandgate-0", f"SANDGATE_MEMORY_LIMIT_MB={os.environ['MEM_MB']}"]
caps = ["CAP_SETUID", "CAP_SETGID"]
# kubelet: Burstable pods get 1000 - 1000 * memory request / node memory (request = limit / 2)
total = int(open("/proc/meminfo").read().split()[1]) << 10
oom_adj = min(max(1000 - (1000 * (mem // 2)) // total, 2), 999)
ns = [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network", "cgroup")]
if userns:
    ns.append({"type": "user"})
mounts = [
    {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
     "options": ["nosuid", "noexec", "nodev", "relatime"] + (["ro"] if cgroup_ro else ["rw"])},
    # volumes: the tokens Secret (read-only), the emptyDir at /tmp (medium Memory, 64Mi)
    {"destination": "/etc/sandgate", "type": "bind", "source": f"{work}/secret",
     "options": ["rbind", "rprivate", "ro"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "nodev", "size=64m", "mode=1777"]},
    # what CRI adds for every container
    {"destination": "/etc/hosts", "type": "bind", "source": f"{work}/hosts", "options": ["rbind", "rprivate", "ro"]},
    {"destination": "/etc/hostname", "type": "bind", "source": f"{work}/hostname", "options": ["rbind", "rprivate", "ro"]},
    {"destination": "/etc/resolv.conf", "type": "bind", "source": f"{work}/resolv.conf", "options": ["rbind", "rprivate", "ro"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
     "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
]
linux = {
    "namespaces": ns,
    "cgroupsPath": os.environ["CGROUPS_PATH"],
    "resources": {
        "devices": [{"allow": False, "access": "rwm"}],
        "memory": {"limit": mem, "swap": mem},
        "cpu": {"shares": 2048, "quota": 800000, "period": 100000},
        "unified": {"memory.oom.group": "1"},
    },
    # seccompProfile: Localhost sandgate.json, as CRI hands it to the runtime
    "seccomp": json.load(open(os.environ["SECCOMP_PROFILE"])),
    # procMount: Unmasked
    "maskedPaths": [],
    "readonlyPaths": [],
}
if userns:
    linux["uidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
    linux["gidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
spec = {
    "ociVersion": "1.0.2-dev",
    "process": {
        "user": {"uid": 0, "gid": 0},
        "args": ["/usr/local/bin/sandgate", "--listen", "0.0.0.0:8080"],
        "env": env,
        "cwd": "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "noNewPrivileges": True,
        "oomScoreAdj": oom_adj,
    },
    "root": {"path": os.environ["ROOTFS"], "readonly": True},
    "hostname": "sandgate-0",
    "mounts": mounts,
    "linux": linux,
}
if os.environ.get("APPARMOR_PROFILE"):
    spec["process"]["apparmorProfile"] = os.environ["APPARMOR_PROFILE"]
json.dump(spec, open(sys.argv[1], "w"), indent=1)
EOF

scope_dir() {  # the container's cgroup as the host sees it (the scope runc asked systemd for)
  echo "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${pod_uid//-/_}.slice/cri-containerd-$id.scope"
}

start_pod() {  # start_pod MEMORY_MiB USERNS(0|1) CGROUP_RO(0|1): 0 when /readyz says 200
  local mem="$1" userns="$2" ro="$3" bundle="$work/bundle" pid='' t0=$SECONDS
  rm -rf "$bundle"; mkdir -p "$bundle"
  id="$(head -c 32 /dev/urandom | sha256sum | cut -d' ' -f1)"
  pod_uid="$(cat /proc/sys/kernel/random/uuid)"
  MEM_MB="$mem" USERNS="$userns" CGROUP_RO="$ro" WORK="$work" ROOTFS="$image" \
    SECCOMP_PROFILE="$repo/deploy/k8s/security-profiles/sandgate.json" APPARMOR_PROFILE="$apparmor_profile" \
    CGROUPS_PATH="kubepods-burstable-pod${pod_uid//-/_}.slice:cri-containerd:$id" \
    python3 "$work/spec.py" "$bundle/config.json" || return 1
  python3 - "$bundle/config.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); l = s["linux"]
print("  namespaces:", ",".join(n["type"] for n in l["namespaces"]), "| cgroupsPath:", l["cgroupsPath"])
print("  uidMappings:", l.get("uidMappings", "none"), "| caps:", ",".join(s["process"]["capabilities"]["bounding"]),
      "| seccomp:", len(l["seccomp"]["syscalls"]), "rules | apparmor:", s["process"].get("apparmorProfile", "none"),
      "| noNewPrivileges:", s["process"]["noNewPrivileges"])
m = [m for m in s["mounts"] if m["destination"] == "/sys/fs/cgroup"][0]
print("  /sys/fs/cgroup:", m["type"], ",".join(m["options"]), "| memory.limit:", l["resources"]["memory"]["limit"],
      "| unified:", l["resources"]["unified"], "| oomScoreAdj:", s["process"]["oomScoreAdj"])
EOF
  runc --systemd-cgroup run --bundle "$bundle" "$id" < /dev/null > "$work/log" 2>&1 &
  runc_pid=$!
  for _ in $(seq 120); do
    pid="$(runc --systemd-cgroup state "$id" 2>/dev/null | python3 -c \
      'import json,sys; s=json.load(sys.stdin); print(s["pid"] if s["status"] == "running" else "")' 2>/dev/null)"
    [[ -n "$pid" ]] && break
    kill -0 "$runc_pid" 2>/dev/null || break
    sleep 0.5
  done
  if [[ -z "$pid" ]]; then
    echo "--- runc did not start the container:"; tail -20 "$work/log"; id=''
    reason="runc could not start the container: $(grep -m1 -i error "$work/log")"; return 1
  fi
  gateway_pid="$pid"
  # The pod network, as a CNI bridge plugin would set it up (a veth pair, no bridge needed).
  ip link add sgveth0 type veth peer name eth0 netns "$pid" &&
    ip addr add 10.88.0.1/24 dev sgveth0 && ip link set sgveth0 up &&
    nsenter -t "$pid" -n ip addr add "$pod_ip/24" dev eth0 &&
    nsenter -t "$pid" -n ip link set eth0 up && nsenter -t "$pid" -n ip link set lo up ||
    { echo "--- could not set up the pod network"; reason="no pod network"; return 1; }
  # Up to 4 minutes to answer; a refusal of isolation is final, so a /readyz that keeps saying
  # 503 for 15 answers in a row is not waited out.
  local code='' refusals=0
  for _ in $(seq 240); do
    code="$(curl -s -o "$work/readyz" -w '%{http_code}' --max-time 10 "http://$pod_ip:8080/readyz" 2>/dev/null)"
    [[ "$code" == 200 ]] && { echo "  ready after $((SECONDS - t0)) s"; return 0; }
    if [[ "$code" == 503 ]]; then ((++refusals >= 15)) && break; else refusals=0; fi
    kill -0 "$runc_pid" 2>/dev/null || break
    sleep 1
  done
  echo "--- the pod was not ready after $((SECONDS - t0)) s (last /readyz: ${code:-no answer}); its log:"
  tail -20 "$work/log"
  echo "--- /readyz:"; cat "$work/readyz" 2>/dev/null; echo
  reason="/readyz ${code:-no answer}: $(head -c 600 "$work/readyz" 2>/dev/null)"
  kill -0 "$runc_pid" 2>/dev/null || reason="the gateway exited: $(tail -n1 "$work/log")"
  return 1
}

in_pod() { runc --systemd-cgroup exec "$id" "$@"; }

stop_pod() {  # SIGTERM as the kubelet (through containerd) sends it; exit 0 within the grace
  [[ -n "$id" ]] || return 1
  runc --systemd-cgroup kill "$id" TERM
  local rc=''
  for _ in $(seq 40); do kill -0 "$runc_pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$runc_pid" 2>/dev/null; then
    echo "still running after the 40 s grace: SIGKILL"; runc --systemd-cgroup kill "$id" KILL
  fi
  wait "$runc_pid"; rc=$?
  id=''
  ip link del sgveth0 > /dev/null 2>&1
  # The kubelet removes the pod's slice once the pod is gone.
  systemctl stop "kubepods-burstable-pod${pod_uid//-/_}.slice" > /dev/null 2>&1
  [[ "$rc" == 0 ]] || { echo "exit code $rc"; tail -5 "$work/log"; return 1; }
}

# Why a pod was not ready: what the gateway says, and who owns the cgroup it was given.
explain_not_ready() {
  local cg; cg="$(scope_dir)"
  echo "  sandgate --check-isolation in the pod:"
  in_pod /usr/local/bin/sandgate --check-isolation 2>&1 | sed 's/^/    /'
  echo "  the container's cgroup on the host: $(stat -c '%n owner %u:%g mode %a' "$cg" 2>&1)"
  echo "    $(stat -c '%n owner %u:%g mode %a' "$cg/cgroup.procs" "$cg/cgroup.subtree_control" 2>&1 | tr '\n' ' ')"
  echo "  in the pod: $(in_pod sh -c 'id; grep " /sys/fs/cgroup " /proc/self/mountinfo; ls -lnd /sys/fs/cgroup' 2>&1 | tr '\n' ';')"
  echo "  what the pod's root may do to its cgroup fs (in a private copy of the pod's mount namespace,"
  echo "  with the pod's capabilities, through runc exec):"
  in_pod python3 -c "$cgroup_probe" 2>&1 | sed 's/^/    /'
}
# Each way to a writable cgroup fs from inside the pod, with its errno.
cgroup_probe='
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 2, 4, 8, 32, 4096, 16384, 1 << 18
def mount(src, target, fstype, flags):
    if libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(), flags, None) == 0:
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
def mkdir(d):
    try:
        os.mkdir(d + "/runc-job-probe"); os.rmdir(d + "/runc-job-probe"); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
if libc.unshare(0x20000) != 0:
    raise SystemExit("unshare(CLONE_NEWNS): " + errno.errorcode[ctypes.get_errno()])
mount(None, "/", None, REC | PRIVATE)
print("mount -t cgroup2 over /sys/fs/cgroup (what sandgate does):",
      mount("cgroup2", "/sys/fs/cgroup", "cgroup2", NOSUID | NODEV | NOEXEC))
os.makedirs("/tmp/cg-probe", exist_ok=True)
r = mount("cgroup2", "/tmp/cg-probe", "cgroup2", NOSUID | NODEV | NOEXEC)
print("mount -t cgroup2 at another place (/tmp/cg-probe):", r, "| mkdir in it:", mkdir("/tmp/cg-probe") if r == "ok" else "-")
print("mount -o remount,bind,rw /sys/fs/cgroup:", mount(None, "/sys/fs/cgroup", None, REMOUNT | BIND | NOSUID | NODEV | NOEXEC),
      "| mkdir in it:", mkdir("/sys/fs/cgroup"))
st = os.stat("/sys/fs/cgroup")
print("the cgroup root as the pod sees it: owner %d:%d mode %o" % (st.st_uid, st.st_gid, st.st_mode & 0o7777))
'


# The AppArmor profile the StatefulSet names, loaded as a node loads it, where the guest has AppArmor.
apparmor_profile=''
if [[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" == Y ]] && command -v apparmor_parser > /dev/null \
   && apparmor_parser -r "$repo/deploy/k8s/security-profiles/sandgate.apparmor"; then
  apparmor_profile=sandgate
  echo "AppArmor: profile sandgate loaded"
else
  echo "AppArmor: not available in the guest; the AppArmor profile is not exercised here"
fi

job_start=$SECONDS
runc --version | head -n1
systemctl --version | head -n1
variants=("host 0 1" "userns 1 1" "userns-rw-cgroupfs 1 0")
for v in "${variants[@]}"; do
  read -r name userns ro <<< "$v"
  vstart=$SECONDS
  case "$name" in
    host) say "pod (hostUsers: true), runc 1.1 + systemd cgroup driver, cgroup fs ro as CRI mounts it" ;;
    userns) say "pod (hostUsers: false), runc 1.1 + systemd cgroup driver, cgroup fs ro as CRI mounts it" ;;
    host-rw*) say "diagnostic: hostUsers: true with the cgroup fs mounted rw (not what CRI generates)" ;;
    *) say "diagnostic: hostUsers: false with the cgroup fs mounted rw (not what CRI generates)" ;;
  esac
  reason=''
  if start_pod 3072 "$userns" "$ro"; then
    pass "the pod ($name) becomes ready with full isolation"
  elif [[ $name == userns && "$reason" == *"its owner is not mapped in the gateway's user namespace"* ]]; then
    # runc 1.1 hands a user-namespaced container its cgroup only with a read-write cgroup fs
    # (the diagnostic variant below): no pod spec fixes it, so the refusal must say so.
    pass "the pod ($name) is refused, and the reason names runc's missing cgroup hand-over"
    [[ -n "$id" ]] && check "SIGTERM: the gateway exits 0 (pod $name, refused)" stop_pod
    check "nothing left after the pod ($name)" nothing_left
    continue
  else
    fail "the pod ($name) becomes ready with full isolation: $reason"
    if [[ -n "$id" && $ro == 1 ]]; then
      check "the runtime mounted /sys/fs/cgroup read-only in the pod" \
        bash -c "grep ' /sys/fs/cgroup ' /proc/$gateway_pid/mountinfo | head -n1 | grep -q ' ro[ ,]'"
    fi
    if [[ -n "$id" ]]; then
      explain_not_ready
      check "SIGTERM: the gateway exits 0 (pod $name, not ready)" stop_pod
    fi
    check "nothing left after the pod ($name)" nothing_left
    echo "  (variant $name took $((SECONDS - vstart)) s)"
    continue
  fi
  if [[ $ro == 1 ]]; then
    check "the runtime mounted /sys/fs/cgroup read-only in the pod" \
      bash -c "grep ' /sys/fs/cgroup ' /proc/$gateway_pid/mountinfo | head -n1 | grep -q ' ro[ ,]'"
  fi
  grep ' /sys/fs/cgroup ' "/proc/$gateway_pid/mountinfo" | sed 's/^/  mountinfo: /'
  in_pod /usr/local/bin/sandgate --check-isolation > "$work/isolation" 2>&1
  sed 's/^/  /' "$work/isolation"
  check "isolation mode is full (runc exec --check-isolation)" grep -q '^mode: full' "$work/isolation"
  cg="$(scope_dir)"
  echo "  container cgroup $cg: memory.max $(cat "$cg/memory.max") memory.oom.group $(cat "$cg/memory.oom.group")"
  check_deployment "$cg" "$url" "$token" stop_pod "$work/log"
  echo "  (variant $name took $((SECONDS - vstart)) s)"
done

oom_variant() {  # oom_variant CGROUP_RO(0|1)
  local ro="$1" vstart=$SECONDS what="the 1536 MiB pod (hostUsers: true, cgroup fs $([[ $1 == 1 ]] && echo ro || echo rw)) becomes ready"
  reason=''
  if ! start_pod 1536 0 "$ro"; then
    fail "$what: $reason"
    [[ -n "$id" ]] && { explain_not_ready; stop_pod > /dev/null; }
    echo "  (took $((SECONDS - vstart)) s)"
    return 1
  fi
  pass "$what"
  limited="$(scope_dir)"
  while [[ "$(cat "$limited/memory.max" 2>/dev/null)" == max && "$limited" != /sys/fs/cgroup ]]; do
    limited="$(dirname "$limited")"
  done
  echo 1 > "$limited/memory.oom.group"
  echo "  memory.max $(cat "$limited/memory.max") on $limited; memory.oom.group $(cat "$limited/memory.oom.group")"
  check "a sandbox program is the OOM victim" node "$repo/tests/e2e/pod_check.mjs" "$url" "$token" pressure
  check "the gateway is the same process, still running" \
    test "$(runc --systemd-cgroup state "$id" 2>/dev/null | python3 -c \
      'import json,sys; s=json.load(sys.stdin); print(s["status"], s["pid"])')" == "running $gateway_pid"
  echo "  container memory.events: $(tr '\n' ' ' < "$limited/memory.events")"
  check "SIGTERM: the gateway exits 0" stop_pod
  check "nothing left after the pod" nothing_left
  echo "  (took $((SECONDS - vstart)) s)"
}

say "the pod's memory limit with memory.oom.group=1: sandboxes outgrow it, the gateway lives"
if ! oom_variant 1; then
  say "diagnostic: the same with the cgroup fs mounted rw (not what CRI generates)"
  oom_variant 0
fi
echo "  (the job took $((SECONDS - job_start)) s)"
finish
