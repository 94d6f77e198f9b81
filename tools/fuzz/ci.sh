#!/usr/bin/env bash
# CI's fuzzing step (docs/FUZZING.md): configures and builds build-fuzz with
# clang-14 (ASan + UBSan + libFuzzer), makes the seed corpus, replays the
# saved crash inputs and fuzzes every target for TW_FUZZ_SECONDS (default 20)
# seconds: about a minute and a half in all, plus the build. Exits non-zero on
# any finding; run.sh prints how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${TW_FUZZ_SECONDS:-20}
build=${TW_FUZZ_BUILD:-build-fuzz}
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DTW_FUZZ=ON -DTW_CUDA=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_targets -j"$(nproc)" >/dev/null
TW_FUZZ_BUILD=$build TW_FUZZ_JOBS=$(nproc) exec tools/fuzz/run.sh all "$seconds"
