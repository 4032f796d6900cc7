#!/usr/bin/env bash
# setup.sh: installs what datacrumbs needs on Debian 12 (only what is missing), mounts
# tracefs, and builds into build/. Idempotent; sourced by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# (libdeflate-dev: only bench/gzlevel.c, which compares it with ISA-L, the writer's)
PKGS=(gcc g++ make cmake pkg-config clang llvm bpftool
      libbpf-dev libelf-dev libdw-dev liblua5.4-dev lua-luv-dev libuv1-dev zlib1g-dev libisal-dev libdeflate-dev libyaml-dev
      libssl-dev strace bpftrace procps sqlite3 libc6-dbg lmod man-db libcap2-bin util-linux git
      openmpi-bin libopenmpi-dev mpich libmpich-dev hdf5-tools fio
      libzydis-dev golang-go libaio1
      qemu-system-x86 busybox-static cpio
      munge slurmd slurmctld slurm-client libslurm-dev
      chromium chromium-driver python3-pandas python3-matplotlib python3-dask
      python3-distributed python3-mpi4py python3-h5py)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v python3 >/dev/null || missing+=(python3)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: these packages are missing and installing them needs root: run with sudo" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tracefs: not mounted on a fresh machine; uprobes do not need it, but bpftrace and
# the leftover check do
if [ "$(id -u)" -eq 0 ] && ! mountpoint -q /sys/kernel/tracing; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "setup: warning: cannot mount tracefs" >&2
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

# the viewers the tests load traces into (tests/viewer/package-lock.json): into build/viewer
if ! cmp -s tests/viewer/package-lock.json build/viewer/package-lock.json ||
   [ ! -d build/viewer/node_modules/@paulirish/trace_engine ]; then
  mkdir -p build/viewer
  cp tests/viewer/package.json tests/viewer/package-lock.json build/viewer/
  (cd build/viewer && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "setup: warning: npm ci failed: the viewer test will SKIP" >&2
fi
