#!/usr/bin/env bash
# The ThreadSanitizer build of the test suite (docs/SANITIZERS.md).
#
# TSan can only follow synchronisation that is instrumented. Debian's libtbb
# is not: a task spawned in libtbb and run on a worker looks unsynchronised
# with the code that spawned it, and every parallel_for reports races that are
# not there (82 in this suite). So this script first builds Debian's own oneTBB
# source (the version of the installed libtbb-dev) with its TBB_SANITIZE=thread
# option, once, into build-tsan-deps/, and builds build-tsan against it.
#
#   tools/sanitizers/tsan.sh                         # the whole suite
#   tools/sanitizers/tsan.sh -R 'PyramidJob|Edt'     # extra arguments go to ctest
#
# Needs dpkg-dev (dpkg-source) and the network to Debian's archive the first
# time. The system's apt configuration is not changed: the source entries are
# derived from it into a private list. TW_TSAN_BUILD_DIR (default build-tsan)
# and TW_JOBS (default nproc) override.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${TW_TSAN_BUILD_DIR:-build-tsan}
jobs=${TW_JOBS:-$(nproc)}
deps=$PWD/$build-deps
tbb=$deps/tbb

if [ ! -f "$tbb/lib/cmake/TBB/TBBConfig.cmake" ]; then
  rm -rf "$deps/apt" "$deps/src" "$deps/tbb-build"
  mkdir -p "$deps/apt/lists/partial" "$deps/apt/sources.list.d" "$deps/src"
  # deb-src twins of the system's entries (one-line and deb822 formats).
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list > "$deps/apt/sources.list"
  else
    : > "$deps/apt/sources.list"
  fi
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" > "$deps/apt/sources.list.d/$(basename "$f")"
  done
  apt_opts=(-o "Dir::Etc::SourceList=$deps/apt/sources.list" -o "Dir::Etc::SourceParts=$deps/apt/sources.list.d"
            -o "Dir::State::Lists=$deps/apt/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
            -o "APT::Sandbox::User=root")
  apt-get "${apt_opts[@]}" -qq update
  read -r src_pkg src_ver < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' libtbb-dev)
  (cd "$deps/src" && { apt-get "${apt_opts[@]}" -qq source "$src_pkg=$src_ver" || apt-get "${apt_opts[@]}" -qq source "$src_pkg"; })
  tbb_src=$(find "$deps/src" -mindepth 1 -maxdepth 1 -type d -name "${src_pkg}-*" | head -n 1)
  cmake -S "$tbb_src" -B "$deps/tbb-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBB_SANITIZE=thread \
        -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF -DCMAKE_INSTALL_PREFIX="$tbb"
  cmake --build "$deps/tbb-build" -j"$jobs"
  cmake --install "$deps/tbb-build"
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTW_SANITIZE=thread -DTBB_DIR="$tbb/lib/cmake/TBB"
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 600 "$@"
