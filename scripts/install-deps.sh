#!/usr/bin/env bash
# Installs everything sandgate needs to build, run and test on Debian 12, from Debian's
# packages (and npm for the end-to-end tests' packages, see scripts/test.sh). Run as root.
# `--with-vm` adds what the pure cgroup v2 stage (scripts/test-vm.sh) needs on the host.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
vm_packages=()
[[ "${1:-}" == --with-vm ]] && vm_packages=(qemu-system-x86 debootstrap e2fsprogs)
apt-get update
# prometheus: only for its promtool, which checks deploy/prometheus/ and the dashboard in the tests.
apt-get install -y --no-install-recommends "${vm_packages[@]}" \
  cmake g++ make pkg-config ca-certificates \
  libboost1.81-dev nlohmann-json3-dev libssl-dev libspdlog-dev catch2 libseccomp-dev libsqlite3-dev \
  libpq-dev postgresql-15 \
  clang libclang-rt-14-dev util-linux mount \
  openssl iproute2 procps \
  python3 python3-numpy python3-pandas python3-matplotlib python3-yaml python3-jinja2 python3-pil \
  python3-pip \
  bash coreutils tar zstd curl \
  prometheus
# The sandbox's javascript runtime is /usr/bin/node. A host that already has Node.js (with its
# own npm, e.g. from NodeSource) keeps it: Debian's npm package would conflict with it.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  apt-get install -y --no-install-recommends nodejs npm
fi
