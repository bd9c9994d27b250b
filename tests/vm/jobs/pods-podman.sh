#!/usr/bin/env bash
# Guest job: the gateway as Kubernetes runs it, under podman + crun on pure cgroup v2. The
# container gets the StatefulSet's securityContext as Pod Security "baseline" admits it (issue
# #46): caps ALL dropped + SETUID/SETGID only, the shipped seccomp profile
# (deploy/k8s/security-profiles/sandgate.json, loaded by crun) and AppArmor profile
# (sandgate.apparmor, loaded with apparmor_parser when the guest kernel has AppArmor), no new
# privileges, /proc unmasked, read-only root, private cgroup namespace, hostUsers: false
# (--uidmap, 65536 ids as a kubelet gives a pod) — and the runtime's default read-only
# /sys/fs/cgroup, the ConfigMap's settings, and the image's root filesystem
# (/srv/sandgate-image, built like deploy/Dockerfile's runtime stage) with the binary under test
# installed at /usr/local/bin/sandgate. Then the privileged variant (deploy/k8s/privileged:
# SYS_ADMIN, seccomp and AppArmor unconfined) with hostUsers: true, as before; then a state
# volume as the StatefulSet's volumeClaimTemplate gives a replica (a session continues, with its
# files, in a new container on the same volume); then the pod-limit OOM with memory.oom.group=1
# set on the container's cgroup as a kubelet does; then what a pod gets without the shipped
# profiles (RuntimeDefault seccomp, the runtime's default AppArmor profile, a masked /proc):
# `--check-isolation` refuses, naming what is missing and what grants it. And the image as a
# stdio server (`podman run -i --rm … --stdio`), driven by the SDK's stdio client transport.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
require_pure_v2
image=/srv/sandgate-image
binary="$build/sandgate"
token="vm-pod-token"
url="http://127.0.0.1:8080/mcp"
work="$(mktemp -d)"
trap 'podman rm -f -t 0 sandgate-0 >/dev/null 2>&1; rm -rf "$work"' EXIT
# conmon leaves an "oom" marker in its working folder when a container process is OOM-killed:
# not in the shared checkout.
cd "$work"

# The profiles the StatefulSet names (Localhost): seccomp straight from the JSON, AppArmor loaded
# into the guest's kernel when it has AppArmor (a Kubernetes node loads it the same way).
seccomp_profile="$repo/deploy/k8s/security-profiles/sandgate.json"
runtime_default="$repo/tests/vm/jobs/runtime-default-seccomp.json"
apparmor=()  # --security-opt apparmor=sandgate when loaded
apparmor_on=0
if [[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" == Y ]] && command -v apparmor_parser > /dev/null; then
  if apparmor_parser -r "$repo/deploy/k8s/security-profiles/sandgate.apparmor"; then
    apparmor=(--security-opt apparmor=sandgate)
    echo "AppArmor: enabled in the guest kernel; profile sandgate loaded"
  else
    echo "AppArmor: apparmor_parser refused deploy/k8s/security-profiles/sandgate.apparmor"
    failures=$((failures + 1))
  fi
  apparmor_on=1
else
  echo "AppArmor: not available in the guest (module enabled: $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null || echo absent), apparmor_parser: $(command -v apparmor_parser || echo missing)): the AppArmor profile is not exercised here"
fi
# The StatefulSet (Pod Security baseline) and the privileged variant, as podman options.
baseline=(--cap-drop ALL --cap-add SETUID,SETGID --security-opt "seccomp=$seccomp_profile"
          "${apparmor[@]}" --security-opt no-new-privileges --security-opt 'unmask=/proc/*')
privileged=(--cap-drop ALL --cap-add SETUID,SETGID,SYS_ADMIN --security-opt seccomp=unconfined
            --security-opt apparmor=unconfined --security-opt 'unmask=/proc/*')

# The ConfigMap's data, as the pod's environment.
awk '/^data:/ {on=1; next} on && /^  SANDGATE_[A-Z_]+:/ {
       key=$1; sub(/:$/, "", key); val=$0; sub(/^[^:]*: */, "", val); gsub(/^"|"$/, "", val);
       print key "=" val }' "$repo/deploy/k8s/configmap.yaml" > "$work/env"
# The pool's preload: one stdlib module instead of the data stack, whose import (matplotlib's
# alone) takes minutes under software emulation; the pool itself is as the ConfigMap has it.
sed -i 's/^SANDGATE_POOL_PRELOAD=.*/SANDGATE_POOL_PRELOAD=json/' "$work/env"
# Files podman binds over in every container must exist in a root owned by the host's root
# (a container in a user namespace cannot create them there).
touch "$image/etc/hosts" "$image/etc/hostname" "$image/run/.containerenv"
# The binary under test goes into the image as deploy/Dockerfile puts it there (a bind mount
# under /usr would be a mount the sandboxes' non-recursive /usr bind may not reveal).
install -m 0755 "$binary" "$image/usr/local/bin/sandgate"
# The Secret volume (deploy/k8s/secret.example.yaml), mounted whole at /etc/sandgate: the
# tokens file and the replicas' peer secret the ConfigMap names.
mkdir -p "$work/secret"
printf '%s default\n' "$(printf %s "$token" | sha256sum | cut -d' ' -f1)" > "$work/secret/tokens"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret/peer-secret"
chmod 0644 "$work/secret/tokens" "$work/secret/peer-secret"

# How the runtime itself mounts /sys/fs/cgroup in such a pod, before sandgate touches it:
# "ro", "rw" or "none" (a throwaway container with the same options prints it).
runtime_cgroup_mount() {  # [podman options...]
  podman run --rm --rootfs --read-only --read-only-tmpfs=false --cgroupns=private \
    --network host "$@" "$image" /bin/sh -c \
    'awk "\$5 == \"/sys/fs/cgroup\" {print (\$6 ~ /(^|,)ro(,|$)/ ? \"ro\" : \"rw\"); found=1; exit}
         END {if (!found) print \"none\"}" /proc/self/mountinfo'
}

start_pod() {  # start_pod MEMORY_MiB [podman options...] (the securityContext's among them)
  local mem="$1"; shift
  podman rm -f -t 0 sandgate-0 > /dev/null 2>&1
  podman run -d --name sandgate-0 --rootfs --read-only --read-only-tmpfs=false \
    --cgroupns=private --network host --memory "${mem}m" \
    --env-file "$work/env" -e SANDGATE_REPLICA_NAME=sandgate-0 -e SANDGATE_MEMORY_LIMIT_MB="$mem" \
    -v "$work/secret:/etc/sandgate:ro" \
    --tmpfs /tmp:size=64m "$@" "$image" /usr/local/bin/sandgate --listen 0.0.0.0:8080 > /dev/null || return 1
  for i in $(seq 300); do
    curl -fs http://127.0.0.1:8080/readyz > /dev/null 2>&1 && return 0
    # A refusal is final: /readyz answers 503 with the reason.
    [[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz)" == 503 ]] && ((i > 120)) && break
    ((i % 15)) || [[ "$(podman inspect -f '{{.State.Running}}' sandgate-0)" == true ]] || break
    sleep 1
  done
  echo "--- the pod did not become ready; its log:"; podman logs sandgate-0 2>&1 | tail -20
  curl -s http://127.0.0.1:8080/readyz; echo
  return 1
}

# The container's cgroup as the host sees it: the gateway's, above sandgate's own leaf.
pod_cgroup() {
  local pid; pid="$(podman inspect -f '{{.State.Pid}}' sandgate-0)"
  local path; path="/sys/fs/cgroup$(cut -d: -f3 "/proc/$pid/cgroup")"
  [[ "$(basename "$path")" == sandgate-gateway ]] && path="$(dirname "$path")"
  echo "$path"
}

stop_pod() {  # SIGTERM as the kubelet sends it; the gateway must exit 0 within the grace
  podman stop -t 40 sandgate-0 > /dev/null
  local rc; rc="$(podman inspect -f '{{.State.ExitCode}}' sandgate-0)"
  podman logs sandgate-0 > "$work/log" 2>&1
  podman rm sandgate-0 > /dev/null
  [[ "$rc" == 0 ]] || { echo "exit code $rc"; tail -5 "$work/log"; return 1; }
}

userns=(--uidmap 0:200000:65536 --gidmap 0:200000:65536)
for variant in baseline privileged; do
  if [[ $variant == baseline ]]; then
    say "pod (hostUsers: false), Pod Security baseline: SETUID/SETGID, seccomp and AppArmor Localhost, crun, read-only cgroup fs"
    opts=("${baseline[@]}" "${userns[@]}")
  else
    say "pod (hostUsers: true), the privileged variant (deploy/k8s/privileged), crun, read-only cgroup fs"
    opts=("${privileged[@]}")
  fi
  if ! check "the pod ($variant) becomes ready with full isolation" start_pod 3072 "${opts[@]}"; then continue; fi
  # crun gives a user-namespaced container no cgroup mount at all, the others a read-only one.
  runtime_mount="$(runtime_cgroup_mount "${opts[@]}")"
  echo "  the runtime's own /sys/fs/cgroup mount: $runtime_mount"
  check "the runtime gave the pod no writable cgroup mount" test "$runtime_mount" != rw
  if [[ $variant == baseline ]]; then
    echo "  the gateway's capabilities: $(grep -E '^Cap(Prm|Eff|Bnd)' "/proc/$(podman inspect -f '{{.State.Pid}}' sandgate-0)/status" | tr '\n\t' '  ')"
    check "the gateway has no CAP_SYS_ADMIN (bounding set SETUID and SETGID only)" \
      grep -q '^CapBnd:.*00000000000000c0$' "/proc/$(podman inspect -f '{{.State.Pid}}' sandgate-0)/status"
    check "the gateway runs under the shipped seccomp profile (filter mode)" \
      grep -q '^Seccomp:.*2$' "/proc/$(podman inspect -f '{{.State.Pid}}' sandgate-0)/status"
    ((${#apparmor[@]})) && check "the gateway runs confined by the AppArmor profile sandgate" \
      grep -q '^sandgate (enforce)' "/proc/$(podman inspect -f '{{.State.Pid}}' sandgate-0)/attr/current"
  fi
  podman exec sandgate-0 /usr/local/bin/sandgate --check-isolation > "$work/isolation" 2>&1
  sed 's/^/  /' "$work/isolation"
  check "isolation mode is full" grep -q '^mode: full' "$work/isolation"
  [[ $variant == baseline ]] && check "the cgroup was reached without CAP_SYS_ADMIN (through the gateway's view)" \
    grep -q "the running gateway's view" "$work/isolation"
  cg="$(pod_cgroup)"
  check_deployment "$cg" "$url" "$token" stop_pod "$work/log"
  [[ $variant == baseline ]] && check "the gateway's log says how it reached its cgroup" \
    grep -q 'a user namespace of the gateway' "$work/log"
done

say "a state volume per replica: a session survives its pod being replaced (SIGTERM, new container)"
# As the StatefulSet's volumeClaimTemplate gives sandgate-0 its volume; hostUsers: false, so it
# belongs to the pod's root as the node sees it.
volume="$work/state-volume"
mkdir -p "$volume" && chown 200000:200000 "$volume"
with_volume=("${baseline[@]}" "${userns[@]}" -v "$volume:/var/lib/sandgate"
             -e SANDGATE_STATE_DIR=/var/lib/sandgate/state)
if check "the pod with a state volume becomes ready" start_pod 3072 "${with_volume[@]}"; then
  kept_status=0
  kept="$(node "$repo/tests/e2e/pod_check.mjs" "$url" "$token" keep)" || kept_status=$?
  sed 's/^/  /' <<< "$kept"
  session_id="$(sed -n 's/^session=//p' <<< "$kept")"
  check "a session wrote a file and was left open" test "$kept_status" = 0 -a -n "$session_id"
  check "SIGTERM: the gateway exits 0" stop_pod
  # The first pod's log holds the SIGTERM hibernation and the registry's writing.
  check "the first pod's log has no error line" log_has_no_error "$work/log"
  check "the registry is on the volume" test -s "$volume/state/sessions.json"
  if check "a new pod on the same volume becomes ready" start_pod 3072 "${with_volume[@]}"; then
    check "the session carries on in the new pod, with its file" \
      node "$repo/tests/e2e/pod_check.mjs" "$url" "$token" resume "$session_id"
    check "SIGTERM: the gateway exits 0" stop_pod
    check "the second pod's log has no error line" log_has_no_error "$work/log"
  fi
  check "nothing left after the pods" nothing_left
fi

say "the pod's memory limit with memory.oom.group=1: sandboxes outgrow it, the gateway lives"
if check "the 1536 MiB pod (baseline) becomes ready" start_pod 1536 "${baseline[@]}" "${userns[@]}"; then
  cg="$(pod_cgroup)"
  limited="$cg"
  while [[ "$(cat "$limited/memory.max" 2>/dev/null)" == max && "$limited" != /sys/fs/cgroup ]]; do
    limited="$(dirname "$limited")"
  done
  echo "  memory.max $(cat "$limited/memory.max") on $limited; oom.group set there"
  echo 1 > "$limited/memory.oom.group"
  gateway_pid="$(podman inspect -f '{{.State.Pid}}' sandgate-0)"
  check "a sandbox program is the OOM victim" node "$repo/tests/e2e/pod_check.mjs" "$url" "$token" pressure
  check "the gateway is the same process, still running" \
    test "$(podman inspect -f '{{.State.Running}} {{.State.Pid}}' sandgate-0)" == "true $gateway_pid"
  echo "  container memory.events: $(tr '\n' ' ' < "$limited/memory.events")"
  check "SIGTERM: the gateway exits 0" stop_pod
  check "nothing left after the pod" nothing_left
fi

say "the image as a stdio server: podman run -i --rm IMAGE --stdio, spawned by the SDK's stdio client"
# As docs/clients.md configures it for Claude Code, Claude Desktop, Cursor and VS Code: the
# baseline securityContext's options, the pod's user namespace, no network at all (over stdio the
# gateway listens on nothing), a read-only root with a /tmp; the client writes initialize and
# tools/call to the container's stdin and reads the answers from its stdout. --rootfs takes the
# image's root filesystem, where the image's ENTRYPOINT ["/usr/local/bin/sandgate"] is not read:
# the command names it. The pool off: its preload would take minutes under software emulation.
stdio_container=(podman run -i --rm --rootfs --read-only --read-only-tmpfs=false --cgroupns=private
                 --network none --tmpfs /tmp:size=64m "${baseline[@]}" "${userns[@]}"
                 "$image" /usr/local/bin/sandgate --stdio --pool-size 0)
check "the image answers over stdin and stdout: initialize, tools/call, state kept, no network" \
  node "$repo/tests/e2e/stdio_container_check.mjs" "${stdio_container[@]}"
check "nothing left after the stdio container" nothing_left

say "without the shipped profiles: --check-isolation refuses and says what grants the missing permission"
# A pod at baseline that leaves seccomp, AppArmor and /proc at the runtime's defaults (no
# SYS_ADMIN): RuntimeDefault seccomp, as containerd's is (tests/vm/jobs/runtime-default-seccomp.json;
# podman's own default allows namespaces), then the shipped seccomp profile with the runtime's
# AppArmor default, then both profiles with a masked /proc.
check_refusal() {  # check_refusal WHAT PATTERN [podman options...]
  local what="$1" pattern="$2" rc=0; shift 2
  podman run --rm --rootfs --read-only --read-only-tmpfs=false --cgroupns=private --network host \
    --cap-drop ALL --cap-add SETUID,SETGID "${userns[@]}" --env-file "$work/env" \
    -v "$work/secret:/etc/sandgate:ro" --tmpfs /tmp:size=64m "$@" "$image" \
    /usr/local/bin/sandgate --check-isolation > "$work/refusal" 2>&1 || rc=$?
  sed 's/^/  /' "$work/refusal"
  check "$what: exit 1, not a crash" test "$rc" = 1
  check "$what: the refusal names it" grep -q "$pattern" "$work/refusal"
}
check_refusal "RuntimeDefault seccomp" \
  '^problem: creating a user namespace.*refused (EPERM.*deploy/k8s/security-profiles/sandgate.json' \
  --security-opt "seccomp=$runtime_default" --security-opt 'unmask=/proc/*'
# Without an apparmor= option podman applies its own default profile (containers-default, which
# denies mount as containerd's does), where the kernel has AppArmor.
if ((apparmor_on)); then
  check_refusal "the runtime's default AppArmor profile" \
    '^problem: mounting in the sandbox.*refused (EACCES.*AppArmor.*sandgate.apparmor' \
    --security-opt "seccomp=$seccomp_profile" --security-opt 'unmask=/proc/*'
fi
check_refusal "a masked /proc" '^problem: mounting /proc.*procMount: Unmasked' \
  --security-opt "seccomp=$seccomp_profile" "${apparmor[@]}"
check "nothing left after the refusals" nothing_left
finish
