#!/usr/bin/env bash
# Builds (once, then reuses) the Debian 12 guest that tests/vm/run-in-guest.sh boots under qemu:
# a debootstrap'd root filesystem turned into a raw ext4 image, plus its kernel and initrd kept
# outside the image so qemu can boot them directly (-kernel/-initrd, no bootloader). The guest
# boots systemd on a pure cgroup v2 hierarchy and runs one job script handed in over 9p (see
# sandgate-vm-job below). Run as root. Everything lands in ${SANDGATE_VM_CACHE:-/var/cache/sandgate-vm}:
#   guest.raw  vmlinuz  initrd.img  guest.stamp   the outputs (the stamp says what built them)
#   debs/                                         downloaded .debs, kept so rebuilds are fast
#
#   tests/vm/build-guest.sh [--force]
#
# The image is rebuilt when this script or the package list changes (the stamp holds their hash).
# No loop mounts: the image is made with `mkfs.ext4 -d`, so this also works in containers.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${SANDGATE_VM_CACHE:-/var/cache/sandgate-vm}"
force=0
[[ "${1:-}" == "--force" ]] && force=1

# What the guest needs to boot (kernel, systemd as init, udev so devices appear), to run the
# container runtimes the project is tested against, and what sandboxed programs expect
# (the python packages the sandbox suite exercises: numpy, pandas, matplotlib), and apparmor:
# Debian's kernel has AppArmor on, and its parser loads the shipped profile as a node would
# (tests/vm/jobs/pods-podman.sh; issue #46).
guest_packages=(
  linux-image-amd64 systemd systemd-sysv udev dbus iproute2 procps util-linux mount
  ca-certificates podman crun containerd runc python3 python3-numpy python3-pandas
  python3-matplotlib nodejs bash coreutils curl apparmor
)
# Shared libraries the sandgate binaries link (by `ldd build/sandgate`), so a binary built on
# the host runs in the guest straight from the 9p share. Extended below from whatever ELF
# files exist in the build folders, so a new dependency does not go unnoticed. The list names
# libpq5's own dependencies too: CI builds the guest before anything is compiled, and a library
# the scan adds then changes the stamp and rebuilds the whole image (~7 minutes) in the VM stage.
project_libs=(libssl3 libseccomp2 libspdlog1.10 libfmt9 libsqlite3-0 libpq5 libstdc++6 libgcc-s1 libc6
  libgssapi-krb5-2 libldap-2.5-0 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libsasl2-2
  libgnutls30 libkeyutils1 libp11-kit0 libidn2-0 libunistring2 libtasn1-6 libnettle8 libhogweed6
  libgmp10 libffi8)
host_packages=(qemu-system-x86 debootstrap e2fsprogs)

# --- host packages: apt-get update only when something is missing (it is slow and needs the net)
missing=()
for p in "${host_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# --- libraries of already-built binaries: map each resolved .so to the Debian package owning it.
# (ldd says /lib/..., dpkg may know the file as /usr/lib/... since the /usr merge: try both.)
for bin in "$repo"/build*/sandgate "$repo"/build*/tests/* "$repo"/build*/bench/*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  while read -r lib; do
    pkg="$( { dpkg -S "$lib" || dpkg -S "/usr$lib" || dpkg -S "$(realpath "$lib")"; } 2>/dev/null \
            | head -n1 | cut -d: -f1)" || true
    [[ -z "$pkg" || " ${project_libs[*]} " == *" $pkg "* ]] && continue
    echo "build-guest: $bin also links $lib (package $pkg); adding it to the guest (name it in project_libs: CI then builds the guest once)" >&2
    project_libs+=("$pkg")
  done < <(ldd "$bin" 2>/dev/null | awk '$3 ~ /^\// {print $3}')
done
packages=("${guest_packages[@]}" "${project_libs[@]}")

# --- up to date? The stamp is the hash of this script plus the package list (the list can
# change without the script changing, through the ldd scan above).
# The pod's image (/srv/sandgate-image in the guest): deploy/Dockerfile's runtime stage, its
# package list read from the Dockerfile so the two cannot drift.
mapfile -t image_packages < <(awk '/^FROM debian:12$/ {rt=1} rt && /--no-install-recommends/ {on=1; next}
  on && /&&/ {on=0} on {for (i = 1; i <= NF; i++) if ($i != "\\") print $i}' "$repo/deploy/Dockerfile")
((${#image_packages[@]} > 5)) || { echo "build-guest: no runtime packages found in deploy/Dockerfile" >&2; exit 1; }
stamp="$( { cat "$0"; printf '%s\n' "${packages[@]}" -- "${image_packages[@]}"; } | sha256sum | cut -d' ' -f1)"
mkdir -p "$cache/debs/debootstrap" "$cache/debs/apt/partial"
exec 9> "$cache/lock"
flock 9   # two builds at once would race on the same outputs
if ((force == 0)) && [[ -f "$cache/guest.raw" && -f "$cache/vmlinuz" && -f "$cache/initrd.img" ]] \
   && [[ "$(cat "$cache/guest.stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "build-guest: $cache/guest.raw is up to date"
  exit 0
fi

start=$SECONDS
work="$(mktemp -d "$cache/build.XXXXXX")"
tree="$work/root"
# All mounts below happen in private mount namespaces (unshare -m), so none can leak onto the
# host and the rm -rf here can never walk into a bind-mounted /dev.
trap 'rm -rf --one-file-system "$work"' EXIT

# Same mirror as the host (the only one the network may reach), as deploy/build-image.sh does.
mirror="$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
echo "build-guest: debootstrap bookworm from ${mirror:-the default mirror} into $tree"
unshare -m --propagation private \
  debootstrap --variant=minbase --cache-dir="$cache/debs/debootstrap" bookworm "$tree" ${mirror:+"$mirror"}

# Runs a command in the tree with /proc, /sys, /dev and the persistent apt archive mounted.
in_tree() {
  unshare -m --propagation private -- /bin/sh -ec '
    t="$1"; debs="$2"; shift 2
    mount -t proc proc "$t/proc"
    mount -t sysfs sysfs "$t/sys"
    mount --rbind /dev "$t/dev"
    mount --bind "$debs" "$t/var/cache/apt/archives"
    exec chroot "$t" "$@"' sh "$tree" "$cache/debs/apt" "$@"
}

# apt in the tree uses the host's sources (security updates included), and must not start
# services while installing (policy-rc.d 101 = "not allowed").
rm -f "$tree/etc/apt/sources.list"
cp /etc/apt/sources.list.d/debian.sources "$tree/etc/apt/sources.list.d/"
cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
# dpkg fsyncs every file it unpacks; the tree is thrown away if the build fails, so skip that.
echo force-unsafe-io > "$tree/etc/dpkg/dpkg.cfg.d/sandgate-build-unsafe-io"
printf '#!/bin/sh\nexit 101\n' > "$tree/usr/sbin/policy-rc.d"
chmod 755 "$tree/usr/sbin/policy-rc.d"
# The initramfs must find the root disk and be able to mount 9p without the root filesystem's
# modules; initramfs-tools reads this list when the kernel package is installed.
mkdir -p "$tree/etc/initramfs-tools"
printf '%s\n' virtio_pci virtio_blk virtio_net ext4 9p 9pnet 9pnet_virtio > "$tree/etc/initramfs-tools/modules"
echo "build-guest: installing ${#packages[@]} packages"
in_tree apt-get update -q
in_tree apt-get install -y -q --no-install-recommends "${packages[@]}"
# (The kernel package's postinst built the initrd with that list already in place.)
# Check the result rather than trust it: each module must be in the initrd or built in.
kver="$(ls "$tree/lib/modules" | sort -V | tail -n1)"
in_initrd="$(in_tree lsinitramfs "/boot/initrd.img-$kver")"
for mod in virtio_blk virtio_pci 9p 9pnet_virtio ext4; do
  grep -q "/$mod\.ko" <<< "$in_initrd" || grep -q "/$mod\.ko" "$tree/lib/modules/$kver/modules.builtin" \
    || { echo "build-guest: $mod is missing from the initrd of $kver" >&2; exit 1; }
done
rm -f "$tree/usr/sbin/policy-rc.d" "$tree/etc/dpkg/dpkg.cfg.d/sandgate-build-unsafe-io"
rm -rf "$tree"/var/lib/apt/lists/*   # the guest has no network to use them with

# --- guest configuration --------------------------------------------------------------------
echo sandgate-vm > "$tree/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 sandgate-vm\n::1 localhost\n' > "$tree/etc/hosts"
# qemu's user-mode network DNS address; with restrict=on nothing resolves, but tools that read
# resolv.conf get a sane file instead of the build host's.
echo 'nameserver 10.0.2.3' > "$tree/etc/resolv.conf"
# pass 0: the root is mounted rw by the kernel (rw on the command line) and is a throwaway
# -snapshot overlay, so fsck at boot would only cost time.
echo '/dev/vda / ext4 rw,errors=remount-ro 0 0' > "$tree/etc/fstab"
# A fixed machine id: an empty one makes systemd treat every boot as a first boot (presets,
# firstboot prompts), which is slower and less predictable.
[[ -s "$tree/etc/machine-id" ]] || in_tree systemd-machine-id-setup
# journald in memory only: nothing survives -snapshot anyway.
mkdir -p "$tree/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' > "$tree/etc/systemd/journald.conf.d/volatile.conf"

# Network: a static address matching qemu's user-mode network (guest 10.0.2.15, gateway
# 10.0.2.2), so run-in-guest.sh --port can forward a host port to the guest's 8080 without
# waiting for DHCP. Without --port the VM has no NIC and this simply matches nothing.
mkdir -p "$tree/etc/systemd/network"
cat > "$tree/etc/systemd/network/10-qemu-user.network" <<'EOF'
[Match]
Type=ether

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
DNS=10.0.2.3
EOF

# The job runner. Reads its parameters from the kernel command line (the only channel that
# exists before any share is mounted):
#   sandgate.share=/abs/path   the host folder shared with tag "host", mounted at the same path
#   sandgate.job=/abs/path     the script to run (inside the share), run with bash, cwd = share
#   sandgate.timeout=SECONDS   guest-side limit for the job (default 3600)
# Output goes to /mnt/out/job.log (share "out") and is followed onto the serial console;
# the exit code goes to /mnt/out/job.rc, written last so its presence means "the job finished".
cat > "$tree/usr/local/sbin/sandgate-vm-job" <<'EOF'
#!/bin/bash
# Runs the job named on the kernel command line; see tests/vm/build-guest.sh.
set -uo pipefail
share='' job='' limit=3600
for word in $(cat /proc/cmdline); do
  case "$word" in
    sandgate.share=*) share="${word#*=}" ;;
    sandgate.job=*) job="${word#*=}" ;;
    sandgate.timeout=*) limit="${word#*=}" ;;
  esac
done
# msize: bigger messages than the 8 KiB default make reads of the share several times faster;
# 256 KiB is well under the virtio transport's limit (~500 KB) in Debian 12's kernel.
opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /mnt/out
if ! mount -t 9p -o "$opts" out /mnt/out; then
  echo "sandgate-vm-job: cannot mount the 'out' share; nowhere to report to" >&2
  exit 1
fi
finish() {  # rc, written atomically and flushed before the unit's FailureAction/SuccessAction powers off
  echo "$1" > /mnt/out/job.rc.tmp && mv /mnt/out/job.rc.tmp /mnt/out/job.rc
  sync
  exit 0
}
if [[ -z "$share" || -z "$job" ]]; then
  echo "sandgate-vm-job: sandgate.share= or sandgate.job= missing from the kernel command line" | tee /mnt/out/job.log
  finish 125
fi
mkdir -p "$share"
if ! mount -t 9p -o "$opts" host "$share"; then
  echo "sandgate-vm-job: cannot mount the 'host' share at $share" | tee /mnt/out/job.log
  finish 125
fi
if [[ ! -f "$job" ]]; then
  echo "sandgate-vm-job: no job script at $job" | tee /mnt/out/job.log
  finish 127
fi
cd "$share"
export HOME=/root LANG=C.UTF-8 SANDGATE_VM=1 SANDGATE_SHARE="$share" SANDGATE_OUT=/mnt/out
echo "sandgate-vm-job: running $job (limit ${limit}s)"
# The job writes to a file, not a pipe: a daemon it leaves behind would hold a pipe open and
# keep us waiting. tail follows the file to the console (polling: 9p has no inotify) and stops
# with the job. timeout kills the job's whole process group; exit 124 means it ran out of time.
: > /mnt/out/job.log
timeout --kill-after=30 "$limit" bash "$job" < /dev/null > /mnt/out/job.log 2>&1 &
pid=$!
tail -n +1 -s 0.5 --pid="$pid" -f /mnt/out/job.log &
wait "$pid"
rc=$?
wait
echo "sandgate-vm-job: $job exited with $rc"
finish "$rc"
EOF
chmod 755 "$tree/usr/local/sbin/sandgate-vm-job"

# Its own unit, so the job runs the way a service on a real host does (its own cgroup under
# system.slice). Delegate=yes hands the job its cgroup subtree, e.g. for running sandgate
# directly; jobs may also start their own units with systemd-run. The runner enforces the time
# limit itself, so systemd must not. Either way the VM powers off when the unit ends (forced:
# the root is a throwaway snapshot, and the out share is synced).
cat > "$tree/etc/systemd/system/sandgate-vm-job.service" <<'EOF'
[Unit]
Description=sandgate VM test job (from the kernel command line)
After=local-fs.target network.target systemd-networkd.service dbus.service
ConditionKernelCommandLine=sandgate.job
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/sandgate-vm-job
TimeoutStartSec=infinity
Delegate=yes
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF

# Boot only what a job needs: under TCG every service started costs seconds. containerd and
# the podman API service are left installed but stopped (a job starts them with systemctl).
# No login prompts: nobody logs in, and a getty on ttyS0 would interleave with the job's output.
# wait-online is masked: with no NIC (no --port) it would hold network-online.target for 2 min.
in_tree systemctl enable sandgate-vm-job.service systemd-networkd.service
in_tree systemctl mask systemd-networkd-wait-online.service serial-getty@ttyS0.service getty@tty1.service
for unit in containerd.service podman.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
            e2scrub_reap.service fstrim.timer dpkg-db-backup.timer podman-auto-update.timer \
            podman-auto-update.service podman-restart.service podman-clean-transient.service; do
  in_tree systemctl disable "$unit" 2> /dev/null || true
done

# --- the pod's image root: a minbase debootstrap plus the Dockerfile's runtime packages. No
# registry and no image build: the VM's runtimes run it with --rootfs, the binary under test
# mounted at /usr/local/bin/sandgate.
image="$tree/srv/sandgate-image"
echo "build-guest: the image root ${image#$tree} (${#image_packages[@]} packages)"
unshare -m --propagation private \
  debootstrap --variant=minbase --cache-dir="$cache/debs/debootstrap" bookworm "$image" ${mirror:+"$mirror"}
rm -f "$image/etc/apt/sources.list"
cp /etc/apt/sources.list.d/debian.sources "$image/etc/apt/sources.list.d/"
cp -L /etc/resolv.conf "$image/etc/resolv.conf"
echo force-unsafe-io > "$image/etc/dpkg/dpkg.cfg.d/sandgate-build-unsafe-io"
saved_tree="$tree"; tree="$image"
in_tree apt-get update -q
in_tree apt-get install -y -q --no-install-recommends "${image_packages[@]}"
tree="$saved_tree"
rm -f "$image/etc/dpkg/dpkg.cfg.d/sandgate-build-unsafe-io"
rm -rf "$image"/var/lib/apt/lists/* "$image"/var/cache/apt/*.bin
mkdir -p "$image/usr/local/bin" "$image/etc/sandgate" "$image/var/lib/sandgate"  # as deploy/Dockerfile
: > "$image/usr/local/bin/sandgate"   # a mount point for the binary under test
: > "$image/etc/sandgate/tokens"      # and for the tokens file
# podman binds it into every container; in a user namespace it cannot create it in a root
# owned by the host's root.
mkdir -p "$image/run" && : > "$image/run/.containerenv"

# --- outputs: kernel and initrd next to the image, then the image, then the stamp (last, so an
# interrupted build is never taken for a finished one).
cp "$(ls "$tree"/boot/vmlinuz-* | sort -V | tail -n1)" "$work/vmlinuz"
cp "$(ls "$tree"/boot/initrd.img-* | sort -V | tail -n1)" "$work/initrd.img"
echo "build-guest: making the ext4 image"
truncate -s 8G "$work/guest.raw"   # sparse: only the ~2 GB actually used takes disk space
mkfs.ext4 -q -F -L sandgate-vm -d "$tree" "$work/guest.raw"
rm -f "$cache/guest.stamp"
mv "$work/vmlinuz" "$work/initrd.img" "$work/guest.raw" "$cache/"
echo "$stamp" > "$cache/guest.stamp"
echo "build-guest: built $cache/guest.raw ($(du -h "$cache/guest.raw" | cut -f1) used) in $((SECONDS - start)) s"
