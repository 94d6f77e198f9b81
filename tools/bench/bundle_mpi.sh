#!/usr/bin/env bash
# Carries this machine's Debian Open MPI (mpirun, orted, its plugins and
# PMIx's) to a host that has none, such as the lent GPU machines, for the
# MPI benchmarks (batch_ranks.sh, split_slide.sh).
#   tools/bench/bundle_mpi.sh OUT.tar.xz
# On the target, as root:
#   mkdir -p /tmp/ompi && tar -C /tmp/ompi -xJf OUT.tar.xz && . /tmp/ompi/env.sh
# env.sh copies Open MPI's own folders to the absolute paths they were built
# for (Debian's Open MPI is not relocatable: its plugin and help folders are
# compiled in), never replacing a file the target has, and puts the shared
# libraries they load first on LD_LIBRARY_PATH.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT.tar.xz" >&2; exit 2; }
out=$1
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/root" "$stage/lib"
for pkg in openmpi-bin libopenmpi3 openmpi-common libpmix2; do
  dpkg -L "$pkg" | grep -vE '^/usr/share/(doc|man|lintian)/' | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then
      mkdir -p "$stage/root$(dirname "$f")"
      cp -P "$f" "$stage/root$f"
    fi
  done
done
# Debian reaches mpirun through the alternatives system.
ln -sf orterun "$stage/root/usr/bin/mpirun"
# Every library that the programs and plugins load, except glibc's and the
# C++ runtime (the target's own, newer ones serve). Scripts among the
# programs make ldd fail: those failures are not errors here.
find "$stage/root" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0 | { xargs -0 -n 50 ldd 2>/dev/null || true; } |
  awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libutil|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
cat >"$stage/env.sh" <<'SH'
# Source me (as root): installs the carried Open MPI where it was built to live.
_ompi_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp -rn "$_ompi_here/root/." /
export PATH="/usr/bin:$PATH" LD_LIBRARY_PATH="$_ompi_here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SH
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -6 -T0 >"$out"
echo "$out: $(du -h "$out" | cut -f1) ($(find "$stage/root" -type f | wc -l) files, $(ls "$stage/lib" | wc -l) libraries)"
