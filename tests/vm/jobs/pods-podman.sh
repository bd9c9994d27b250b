#!/usr/bin/env bash
# Guest job: the gateway as Kubernetes runs it, under podman + crun on pure cgroup v2. The
# container gets the StatefulSet's securityContext (caps ALL dropped + SETUID/SETGID/SYS_ADMIN,
# seccomp and AppArmor unconfined, /proc unmasked, read-only root, private cgroup namespace)
# and the runtime's default read-only /sys/fs/cgroup, the ConfigMap's settings, and the image's
# root filesystem (/srv/sandgate-image, built like deploy/Dockerfile's runtime stage) with the
# binary under test installed at /usr/local/bin/sandgate. Run with hostUsers: false
# (--uidmap, 65536 ids as a kubelet gives a pod) and without; then a state volume as the
# StatefulSet's volumeClaimTemplate gives a replica (a session continues, with its files, in a new
# container on the same volume); then the pod-limit OOM with memory.oom.group=1 set on the
# container's cgroup as a kubelet does.
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
    --cap-drop ALL --cap-add SETUID,SETGID,SYS_ADMIN --security-opt seccomp=unconfined \
    --security-opt 'unmask=/proc/*' --network host "$@" "$image" /bin/sh -c \
    'awk "\$5 == \"/sys/fs/cgroup\" {print (\$6 ~ /(^|,)ro(,|$)/ ? \"ro\" : \"rw\"); found=1; exit}
         END {if (!found) print \"none\"}" /proc/self/mountinfo'
}

start_pod() {  # start_pod MEMORY_MiB [podman options...]
  local mem="$1"; shift
  podman rm -f -t 0 sandgate-0 > /dev/null 2>&1
  podman run -d --name sandgate-0 --rootfs --read-only --read-only-tmpfs=false \
    --cgroupns=private --cap-drop ALL --cap-add SETUID,SETGID,SYS_ADMIN \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --security-opt 'unmask=/proc/*' --network host --memory "${mem}m" \
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

for users in "auto" "host"; do
  say "pod (hostUsers: $([[ $users == auto ]] && echo false || echo true)), crun, read-only cgroup fs"
  # hostUsers: false gives the pod 65536 ids of the node, as here.
  opts=(); [[ $users == auto ]] && opts=(--uidmap 0:200000:65536 --gidmap 0:200000:65536)
  if ! check "the pod becomes ready with full isolation" start_pod 3072 "${opts[@]}"; then continue; fi
  # crun gives a user-namespaced container no cgroup mount at all, the others a read-only one.
  runtime_mount="$(runtime_cgroup_mount "${opts[@]}")"
  echo "  the runtime's own /sys/fs/cgroup mount: $runtime_mount"
  check "the runtime gave the pod no writable cgroup mount" test "$runtime_mount" != rw
  podman exec sandgate-0 /usr/local/bin/sandgate --check-isolation > "$work/isolation" 2>&1
  sed 's/^/  /' "$work/isolation"
  check "isolation mode is full" grep -q '^mode: full' "$work/isolation"
  cg="$(pod_cgroup)"
  check_deployment "$cg" "$url" "$token" stop_pod "$work/log"
done

say "a state volume per replica: a session survives its pod being replaced (SIGTERM, new container)"
# As the StatefulSet's volumeClaimTemplate gives sandgate-0 its volume; hostUsers: false, so it
# belongs to the pod's root as the node sees it.
volume="$work/state-volume"
mkdir -p "$volume" && chown 200000:200000 "$volume"
with_volume=(--uidmap 0:200000:65536 --gidmap 0:200000:65536 -v "$volume:/var/lib/sandgate"
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
if check "the 1536 MiB pod becomes ready" start_pod 1536 --uidmap 0:200000:65536 --gidmap 0:200000:65536; then
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
finish
