#!/usr/bin/env bash
# Runs a fuzz target (docs/FUZZING.md).
#
#   tools/fuzz/run.sh TARGET SECONDS [libFuzzer args...]
#   tools/fuzz/run.sh all SECONDS [libFuzzer args...]     every target, SECONDS each
#
# TARGET: fuzz_tiff_source, fuzz_jpeg_decode, fuzz_tile_codecs, fuzz_specs (the
# fuzz_ prefix may be left out). Builds build-fuzz when it is missing (clang-14,
# -DTW_FUZZ=ON), makes the seed corpus when it is missing, replays the saved
# crash inputs of tests/fuzz/regressions/TARGET, then fuzzes for SECONDS
# with a corpus that grows in build-fuzz/corpus/TARGET. Exits non-zero on a
# finding, leaving the input in build-fuzz/findings/TARGET/ and printing how to
# reproduce it. Environment: TW_FUZZ_BUILD (default build-fuzz), TW_FUZZ_JOBS
# (build parallelism, default 2), TW_TILEWAVE (a release tilewave CLI whose
# pyramids join the seeds; default build/tools/tilewave when it exists).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${TW_FUZZ_BUILD:-build-fuzz}
case $build in /*) ;; *) build=$root/$build ;; esac
all_targets="fuzz_tiff_source fuzz_jpeg_decode fuzz_tile_codecs fuzz_specs fuzz_openslide_guard"

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 2 ] || usage
target=$1 seconds=$2
shift 2
case $seconds in '' | *[!0-9]*) echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
if [ "$target" = all ]; then
  targets=$all_targets
else
  case $target in fuzz_*) ;; *) target=fuzz_$target ;; esac
  case " $all_targets " in *" $target "*) ;; *) echo "run.sh: unknown target '$target' (one of: $all_targets, all)" >&2; exit 2 ;; esac
  targets=$target
fi

# The build: configured once, brought up to date every run (cheap when it is).
if [ ! -f "$build/CMakeCache.txt" ]; then
  if ! command -v clang++-14 >/dev/null; then
    echo "run.sh: no clang++-14; install clang-14 libfuzzer-14-dev libclang-rt-14-dev (tools/install-deps.sh)" >&2
    exit 2
  fi
  echo "run.sh: configuring $build"
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DTW_FUZZ=ON -DTW_CUDA=OFF -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
echo "run.sh: building the fuzz targets in $build"
cmake --build "$build" --target fuzz_targets -j"${TW_FUZZ_JOBS:-2}" >/dev/null

# Seeds include our own pyramids when a release CLI is at hand.
if [ -z "${TW_TILEWAVE:-}" ] && [ -x "$root/build/tools/tilewave" ]; then export TW_TILEWAVE=$root/build/tools/tilewave; fi
if [ ! -d "$build/seeds" ]; then
  /usr/bin/python3 "$root/tools/fuzz/make_corpus.py" "$build/seeds.tmp"
  mv "$build/seeds.tmp" "$build/seeds"
fi

# Inputs each target reads at most (the targets refuse larger ones).
max_len() {
  case $1 in
    fuzz_specs) echo 4096 ;;
    fuzz_jpeg_decode) echo 65536 ;;
    *) echo 262144 ;;
  esac
}
dict() {
  case $1 in
    fuzz_tiff_source | fuzz_tile_codecs) echo "-dict=$root/tools/fuzz/tiff.dict" ;;
    fuzz_jpeg_decode) echo "-dict=$root/tools/fuzz/jpeg.dict" ;;
    fuzz_specs) echo "-dict=$root/tools/fuzz/specs.dict" ;;
  esac
}

# A run may take 2 GB resident and 10 s an input. (The targets themselves set
# ASan's options: malloc above 1 GB returns NULL; see fuzz_support.hpp.)
limits="-timeout=10 -rss_limit_mb=2048"

status=0
for t in $targets; do
  bin=$build/tests/fuzz/$t
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  regressions=$root/tests/fuzz/regressions/$t
  mkdir -p "$corpus" "$findings"
  log=$build/logs/$t.$(date +%Y%m%d-%H%M%S).log
  mkdir -p "$(dirname "$log")"
  # Crashes found before must stay fixed: replay them first.
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "run.sh: $t: replaying $(ls "$regressions" | wc -l) regression input(s)"
    if ! "$bin" $limits "$regressions"/* >"$log.replay" 2>&1; then
      tail -n 40 "$log.replay" >&2
      echo "run.sh: $t: a regression input fails again; see $log.replay" >&2
      echo "  reproduce: $bin $limits $regressions/<file>" >&2
      status=1
      continue
    fi
  fi
  echo "run.sh: $t: fuzzing for ${seconds}s (log: $log)"
  # New inputs go to the first folder only; the seeds and regressions are read.
  dirs=("$corpus" "$build/seeds/$t")
  [ -d "$regressions" ] && dirs+=("$regressions")
  set +e
  # One process, one worker (-jobs/-workers may come in "$@"; their
  # fuzz-N.log files then land in the logs folder, run from there).
  (cd "$(dirname "$log")" && "$bin" "${dirs[@]}" -max_total_time="$seconds" $limits \
    -max_len="$(max_len "$t")" $(dict "$t") -artifact_prefix="$findings/" -print_final_stats=1 "$@") >"$log" 2>&1
  rc=$?
  set -e
  for f in "$(dirname "$log")"/fuzz-*.log; do
    [ -f "$f" ] && { cat "$f" >>"$log"; rm -f "$f"; }
  done
  grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" | tail -n 1 | sed "s/^/run.sh: $t: /" || true
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | sed "s/^/run.sh: $t: /" || true
  if [ $rc -ne 0 ]; then
    status=1
    grep -E 'ERROR|SUMMARY|finding|Test unit written' "$log" | head -n 10 >&2 || true
    crash=$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -n 1 | sed 's/Test unit written to //')
    echo "run.sh: $t: FINDING (exit $rc); full output in $log" >&2
    if [ -n "$crash" ]; then
      echo "  reproduce: $bin $limits $crash" >&2
      echo "  once fixed, keep it: cp $crash tests/fuzz/regressions/$t/" >&2
    fi
  fi
done
exit $status
