#!/usr/bin/env bash
# CI: the AddressSanitizer + UndefinedBehaviorSanitizer build of the test
# suite (docs/SANITIZERS.md). Configures and builds build-asan, then runs every
# test except those labelled `big`; the runtime options and suppressions come
# with the tests (tests/CMakeLists.txt). Exits non-zero on any failure, a
# sanitizer report included (it fails its test).
#
#   tools/sanitizers/ci.sh              # the whole suite
#   tools/sanitizers/ci.sh -R Edt       # extra arguments go to ctest
#
# TW_ASAN_BUILD_DIR (default build-asan) and TW_JOBS (default nproc) override.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${TW_ASAN_BUILD_DIR:-build-asan}
jobs=${TW_JOBS:-$(nproc)}

# -O1, not -O2: on 2 cores the instrumented build outweighs the test run, and
# -O1 builds much faster for a slightly slower run (docs/SANITIZERS.md).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTW_SANITIZE=address,undefined \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG"
cmake --build "$build" -j"$jobs"
# A hang fails its test instead of holding CI until its own limit.
ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 300 -LE big "$@"
