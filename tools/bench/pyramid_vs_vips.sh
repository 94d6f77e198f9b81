#!/usr/bin/env bash
# Side-by-side benchmark: Tilewave (CPU backend) vs libvips writing the same
# JPEG pyramid (quality 85, YCbCr 4:2:0, 256-pixel tiles, BigTIFF) from the
# same JPEG-tiled slide, on the same cores, in one run.
#
#   tools/bench/pyramid_vs_vips.sh [--input synthetic|ihc|FILE.tif] [--size 32768x32768]
#                                  [--threads N] [--runs 3] [--workdir DIR] [--tilewave PATH]
#                                  [--device auto|cpu|cuda] [--tw-runs 1]
#
# --device goes to tilewave (its default: auto); --tw-runs N runs tilewave N
# times beside each vips run (its runs are short next to vips's). Each round
# prints its ratio; the summary gives the median and the range over rounds.
#
# Inputs are made once in the work folder and reused:
#   synthetic: tilewave's synthetic tissue slide (default 32768x32768 = 1.07 GP)
#   ihc:       scikit-image's immunohistochemistry image mirrored to 16384x16384
# both stored as one level of 256-pixel JPEG tiles, Q90, YCbCr 4:2:0 (as scanners write).
# Prints each run, the medians, and the ratio vips/tilewave.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
input=synthetic size=32768x32768 threads=$(nproc) runs=3 work=${TMPDIR:-/tmp}/tilewave-bench device=auto tw_runs=1
tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --input) input=$2; shift 2;;
    --size) size=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    --device) device=$2; shift 2;;
    --tw-runs) tw_runs=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
command -v vips >/dev/null || { echo "vips not found (apt-get install libvips-tools)" >&2; exit 1; }
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }
mkdir -p "$work"

case $input in
  synthetic)
    src=$work/synthetic-$size.tif
    if [ ! -f "$src" ]; then
      echo "making $src ..." >&2
      "$tw" pyramid "synthetic:$size" "$src" --quality 90 --min-size 100000000 >&2
    fi;;
  ihc)
    src=$work/ihc-16384.tif
    if [ ! -f "$src" ]; then
      echo "making $src ..." >&2
      "${PYTHON:-/usr/bin/python3}" - "$work/ihc-raw.tif" <<'PY'
import sys, numpy as np, tifffile
from skimage import data
a = data.immunohistochemistry()               # 512 x 512 RGB
row = np.concatenate([a, a[:, ::-1]] * 16, axis=1)
big = np.concatenate([row, row[::-1]] * 16, axis=0)  # 16384 x 16384, mirrored: no seams
tifffile.imwrite(sys.argv[1], big, tile=(256, 256), bigtiff=True)
PY
      "$tw" pyramid "$work/ihc-raw.tif" "$src" --quality 90 --min-size 100000000 >&2
      rm -f "$work/ihc-raw.tif"
    fi;;
  *) src=$input;;
esac

export VIPS_CONCURRENCY=$threads
echo "input: $src ($("$tw" info "$src" | sed -n 's/^  level 0: //p'))"
echo "threads: $threads   runs: $runs   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
cat "$src" >/dev/null  # both tools start with the input in the page cache

measure() {  # measure NAME CMD... -> prints "seconds cpu_seconds peak_rss_mib"
  local name=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/$name.err" || {
      echo "$name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
    awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' "$work/time.txt"
  else  # no GNU time (e.g. a bare container): wall and CPU from bash, RSS unknown
    local TIMEFORMAT="%R %U %S"
    { time "$@" >/dev/null 2>"$work/$name.err"; } 2>"$work/time.txt" || {
      echo "$name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
    awk '{printf "%.2f %.2f ?\n", $1, $2 + $3}' "$work/time.txt"
  fi
}

tw_times=() vips_times=() ratios=()
for i in $(seq "$runs"); do
  round=()
  for k in $(seq "$tw_runs"); do
    rm -f "$work/out-tw.tif"
    read -r s c m < <(measure tilewave "$tw" pyramid "$src" "$work/out-tw.tif" --quality 85 --threads "$threads" \
      --device "$device")
    echo "run $i  tilewave --device $device: ${s} s wall, ${c} s CPU, peak RSS ${m} MiB"
    tw_times+=("$s") round+=("$s")
  done
  rm -f "$work/out-vips.tif"
  read -r s c m < <(measure vips vips tiffsave "$src" "$work/out-vips.tif" --tile --pyramid --compression jpeg \
    --Q 85 --bigtiff --tile-width 256 --tile-height 256)
  echo "run $i  vips:     ${s} s wall, ${c} s CPU, peak RSS ${m} MiB"
  vips_times+=("$s")
  for t in "${round[@]}"; do ratios+=("$(awk -v a="$s" -v b="$t" 'BEGIN{printf "%.2f", a/b}')"); done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
mt=$(median "${tw_times[@]}") mv=$(median "${vips_times[@]}")
echo "outputs: tilewave $(du -h "$work/out-tw.tif" | cut -f1) ($("$tw" info "$work/out-tw.tif" | sed -n 's/^  level 1: .*  \(jpeg.*\)/\1/p')), vips $(du -h "$work/out-vips.tif" | cut -f1) ($("$tw" info "$work/out-vips.tif" | sed -n 's/^  level 1: .*  \(jpeg.*\)/\1/p'))"
lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1) hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
echo "median: tilewave ${mt} s, vips ${mv} s; tilewave against vips within each round: median $(median "${ratios[@]}")x, $lo-${hi}x over ${#ratios[@]} pairings"
