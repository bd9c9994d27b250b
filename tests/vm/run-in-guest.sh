#!/usr/bin/env bash
# Runs one shell script inside a throwaway Debian 12 VM (systemd as init, pure cgroup v2) and
# reports its output and exit code as if it had run here. The VM is the image built by
# tests/vm/build-guest.sh, booted with qemu TCG (this host's /dev/kvm cannot run it) and
# -snapshot, so the cached image is never modified. Run as root.
#
#   tests/vm/run-in-guest.sh SHARE_DIR JOB_SCRIPT [--port HOSTPORT] [--mem MiB] [--timeout SECONDS]
#                            [--console FILE]
#
# SHARE_DIR is shared read-write with the guest at the same absolute path; JOB_SCRIPT must be
# inside it and runs there with bash as root, in its own systemd service, with cwd SHARE_DIR and
# SANDGATE_VM=1 SANDGATE_SHARE SANDGATE_OUT (a guest folder whose files are discarded) set.
# --port forwards 127.0.0.1:HOSTPORT to the guest's port 8080 (the guest reaches nothing else);
# --console keeps the serial console log. Exits with the job's exit code, 124 when the time
# limit (default 1800 s, boot included) ran out, 125 when the job never ran or never finished.
set -euo pipefail
usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
(($# >= 2)) || usage
share="$1" job="$2"
shift 2
port='' mem=6144 limit=1800 console_copy=''
while (($#)); do
  case "$1" in
    --port) port="$2" ;;
    --mem) mem="$2" ;;
    --timeout) limit="$2" ;;
    --console) console_copy="$2" ;;
    *) usage ;;
  esac
  shift 2 || usage
done

cache="${SANDGATE_VM_CACHE:-/var/cache/sandgate-vm}"
for f in guest.raw vmlinuz initrd.img; do
  [[ -f "$cache/$f" ]] || { echo "run-in-guest: no $cache/$f; run tests/vm/build-guest.sh first" >&2; exit 125; }
done
share="$(realpath -e "$share")"
job="$(realpath -e "$job")"
[[ -d "$share" ]] || { echo "run-in-guest: $share is not a folder" >&2; exit 2; }
[[ "$job" == "$share"/* ]] || { echo "run-in-guest: $job is not inside $share" >&2; exit 2; }
# Both travel on the kernel command line, which splits at whitespace.
[[ "$share$job" != *[[:space:]]* ]] || { echo "run-in-guest: paths must not contain whitespace" >&2; exit 2; }

tmp="$(mktemp -d /tmp/sandgate-vm.XXXXXX)"
mkdir "$tmp/out"
qemu_pid=''
cleanup() {
  # Never leave a VM behind, whatever way we leave (error, timeout, Ctrl-C).
  if [[ -n "$qemu_pid" ]] && kill -0 "$qemu_pid" 2> /dev/null; then
    kill "$qemu_pid" 2> /dev/null || true
    sleep 1
    kill -9 "$qemu_pid" 2> /dev/null || true
    wait "$qemu_pid" 2> /dev/null || true
  fi
  [[ -z "$console_copy" || ! -f "$tmp/console.log" ]] || cp "$tmp/console.log" "$console_copy"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

console_tail() {
  echo "----- last lines of the guest's serial console -----" >&2
  tail -n 60 "$tmp/console.log" >&2 2> /dev/null || true
  echo "-----" >&2
}

# The job's own limit inside the guest is a bit shorter than ours, so a job that hangs is
# stopped there and its log and exit code (124) still come back; ours covers boot and hangs.
# (Boot takes ~30 s under TCG on a 2-core host; leave room for a slower one.)
guest_limit=$((limit > 240 ? limit - 120 : limit / 2))
# panic=-1 with -no-reboot: a kernel panic ends qemu at once instead of running into the timeout.
append="root=/dev/vda rw console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
append+=" sandgate.share=$share sandgate.job=$job sandgate.timeout=$guest_limit"
if [[ -n "$port" ]]; then
  # restrict=on: the guest reaches nothing outside, but forwarded connections come in.
  nic=(-nic "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:$port-:8080")
else
  nic=(-nic none)
fi

start=$SECONDS
qemu-system-x86_64 \
  -accel tcg -cpu max -smp 2 -m "$mem" \
  -nodefaults -no-reboot -display none -monitor none -serial "file:$tmp/console.log" \
  -kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" -append "$append" \
  -drive "file=$cache/guest.raw,format=raw,if=virtio,cache=unsafe" -snapshot \
  -virtfs "local,path=$share,mount_tag=host,security_model=none,multidevs=remap" \
  -virtfs "local,path=$tmp/out,mount_tag=out,security_model=none" \
  "${nic[@]}" < /dev/null > "$tmp/qemu.log" 2>&1 &
qemu_pid=$!

while kill -0 "$qemu_pid" 2> /dev/null; do
  if ((SECONDS - start >= limit)); then
    echo "run-in-guest: the VM did not finish within ${limit}s; killing it" >&2
    [[ ! -s "$tmp/out/job.log" ]] || { echo "----- job output so far -----" >&2; cat "$tmp/out/job.log" >&2; }
    console_tail
    exit 124
  fi
  sleep 1
done
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=''

[[ ! -f "$tmp/out/job.log" ]] || cat "$tmp/out/job.log"
if [[ ! -f "$tmp/out/job.rc" ]]; then
  echo "run-in-guest: the job never ran or never finished (qemu exited with $qemu_rc after $((SECONDS - start))s)" >&2
  cat "$tmp/qemu.log" >&2
  console_tail
  exit 125
fi
rc="$(cat "$tmp/out/job.rc")"
echo "run-in-guest: job exited with $rc; the VM ran $((SECONDS - start))s" >&2
exit "$rc"
