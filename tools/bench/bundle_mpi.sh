#!/usr/bin/env bash
# Carries this machine's Debian Open MPI (mpirun, orted, its plugins and
# PMIx's) to a host that has none, such as the lent GPU machines, for the
# MPI benchmarks (batch_ranks.sh, split_slide.sh).
#   tools/bench/bundle_mpi.sh OUT.tar.xz
# On the target:
#   mkdir -p /tmp/ompi && tar -C /tmp/ompi -xJf OUT.tar.xz && . /tmp/ompi/env.sh
# env.sh relocates Open MPI to where it was unpacked (OPAL_PREFIX and the
# folder variables) and puts the shared libraries it loads first on
# LD_LIBRARY_PATH.
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
# Source me: points Open MPI and PMIx at the carried tree. A target may have
# another Open MPI's plugins at Debian's compiled-in paths (Ubuntu's, for
# mpi4py): every folder is named here so that none of those is loaded.
_ompi_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_ompi_usr=$_ompi_here/root/usr
export OPAL_PREFIX=$_ompi_usr OPAL_EXEC_PREFIX=$_ompi_usr OPAL_BINDIR=$_ompi_usr/bin
export OPAL_LIBDIR=$_ompi_usr/lib/x86_64-linux-gnu/openmpi/lib OPAL_PKGLIBDIR=$_ompi_usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OPAL_DATADIR=$_ompi_usr/share OPAL_PKGDATADIR=$_ompi_usr/share/openmpi OPAL_SYSCONFDIR=$_ompi_here/root/etc/openmpi
export OMPI_MCA_mca_base_component_path=$OPAL_PKGLIBDIR
export PMIX_MCA_mca_base_component_path=$_ompi_usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export PMIX_INSTALL_PREFIX=$_ompi_usr/lib/x86_64-linux-gnu/pmix2 PMIX_EXEC_PREFIX=$_ompi_usr/lib/x86_64-linux-gnu/pmix2
export PMIX_LIBDIR=$_ompi_usr/lib/x86_64-linux-gnu/pmix2/lib PMIX_PKGLIBDIR=$_ompi_usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export PMIX_DATADIR=$_ompi_usr/lib/x86_64-linux-gnu/pmix2/share PMIX_PKGDATADIR=$_ompi_usr/lib/x86_64-linux-gnu/pmix2/share/pmix
export PATH="$_ompi_usr/bin:$PATH" LD_LIBRARY_PATH="$_ompi_here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SH
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -6 -T0 >"$out"
echo "$out: $(du -h "$out" | cut -f1) ($(find "$stage/root" -type f | wc -l) files, $(ls "$stage/lib" | wc -l) libraries)"
