#!/usr/bin/env bash
# Builds the image without a Docker engine or a registry: a Debian 12 base made by
# debootstrap, imported as debian:12, then `buildah bud` (chroot isolation, which works on
# hosts whose hybrid cgroups the OCI runtimes refuse). Then a smoke test: the image's root
# filesystem is entered with pivot_root (a chroot may not create user namespaces) and
# `sandgate --check-isolation` must run a probe sandbox. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-localhost/sandgate:dev}"
apt-get install -y --no-install-recommends buildah podman debootstrap > /dev/null
if ! podman image exists docker.io/library/debian:12; then
  base="$(mktemp -d /var/tmp/sandgate-base.XXXXXX)"
  mirror="$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
  debootstrap --variant=minbase bookworm "$base" ${mirror:+"$mirror"}
  tar -C "$base" -c . | podman import - docker.io/library/debian:12
  rm -rf "$base"
fi
buildah bud --isolation chroot --network host -f deploy/Dockerfile -t "$tag" .

container="$(buildah from "$tag")"
root="$(buildah mount "$container")"
cleanup() { umount -l "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true; buildah umount "$container" > /dev/null; buildah rm "$container" > /dev/null; }
trap cleanup EXIT
for fs in proc sys dev; do mount --rbind "/$fs" "$root/$fs"; done
unshare -m --propagation private /bin/sh -c \
  "mount --rbind '$root' '$root' && cd '$root' && mkdir -p oldroot && pivot_root . oldroot && exec /usr/local/bin/sandgate --check-isolation"
