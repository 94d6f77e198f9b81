#!/usr/bin/env bash
# Side-by-side benchmark: `tilewave pyramid` of the same input to the generic
# layout (OUT.tif: levels in the main IFD chain) and to OME-TIFF (OUT.ome.tif:
# levels as SubIFDs, OME-XML; N channels as one plane each), alternating, in
# one run. Issue 18 asks OME-TIFF to be as fast as the generic layout.
#
#   tools/bench/ome_vs_generic.sh [--size 16384x16384] [--channels 3|N] [--runs 5]
#                                 [--threads N] [--device cpu|auto|cuda] [--memory 1G]
#                                 [--recompress] [--workdir DIR] [--tilewave PATH]
#
# --channels 3 (default): tilewave's synthetic RGB slide stored as one level
# of 256-pixel JPEG tiles (as scanners write), written as JPEG Q85, so level
# 0's tiles are copied as stored by both layouts. --channels N (N != 3): an
# N-channel uint16 image made by tifffile (deflate tiles of 256), written
# deflate: the generic layout copies level 0's tiles, OME-TIFF splits every
# tile into N planes and compresses each. Each round runs both, the order
# alternating (odd rounds generic first), and prints both wall times and the
# ratio ome/generic (< 1: OME-TIFF faster); the summary gives the median and
# range of the ratio over the rounds. --recompress: both encode level 0
# (the cost of the layouts alone, without the generic layout's copy).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
size=16384x16384 channels=3 runs=5 threads=$(nproc) device=cpu memory=1G recompress=()
work=${TMPDIR:-/tmp}/tilewave-bench
tw=$here/build/tools/tilewave
py=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2;;
    --channels) channels=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --device) device=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --recompress) recompress=(--recompress); shift;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }
mkdir -p "$work"

if [ "$channels" = 3 ]; then
  src=$work/synthetic-$size.tif
  opts=(--quality 85)
  if [ ! -f "$src" ]; then
    echo "making $src ..." >&2
    "$tw" pyramid "synthetic:$size" "$src" --quality 90 --min-size 100000000 >&2
  fi
else
  src=$work/channels$channels-u16-$size.tif
  opts=(--compression deflate)
  if [ ! -f "$src" ]; then
    echo "making $src ..." >&2
    "$py" - "$src" "$size" "$channels" <<'PY'
import sys, numpy as np, tifffile
w, h = (int(v) for v in sys.argv[2].split('x'))
c = int(sys.argv[3])
yy, xx = np.mgrid[0:256, 0:256]
def tiles():  # smooth per-channel patterns with some noise, a band of tiles at a time
    rng = np.random.default_rng(1)
    for ty in range(0, h, 256):
        for tx in range(0, w, 256):
            t = np.empty((256, 256, c), np.uint16)
            for k in range(c):
                t[..., k] = (20000 + 15000 * np.sin((xx + tx) / (40.0 + 7 * k)) * np.cos((yy + ty) / (55.0 + 5 * k))
                             + rng.integers(0, 512, (256, 256)))
            yield t
tifffile.imwrite(sys.argv[1], tiles(), shape=(h, w, c), dtype=np.uint16, photometric='minisblack',
                 planarconfig='contig', tile=(256, 256), compression='zlib', bigtiff=True)
PY
  fi
fi
echo "input: $src ($("$tw" info "$src" | sed -n 's/^  level 0: //p'))"
echo "threads: $threads   runs: $runs   device: $device   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$src" >/dev/null  # both start with the input in the page cache

measure() {  # measure OUT -> prints "seconds peak_rss_mib"
  local out=$1
  rm -f "$out"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "$tw" pyramid "$src" "$out" "${opts[@]}" "${recompress[@]}" --threads "$threads" \
      --device "$device" --memory "$memory" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
    awk '{printf "%.2f %.0f\n", $1, $2 / 1024}' "$work/time.txt"
  else
    local TIMEFORMAT="%R"
    { time "$tw" pyramid "$src" "$out" "${opts[@]}" "${recompress[@]}" --threads "$threads" --device "$device" --memory "$memory" \
      >/dev/null 2>"$work/err.txt"; } 2>"$work/time.txt" || { cat "$work/err.txt" >&2; exit 1; }
    echo "$(cat "$work/time.txt") ?"
  fi
}

gen=() ome=() ratios=()
for i in $(seq "$runs"); do
  if [ $((i % 2)) = 1 ]; then order="tif ome"; else order="ome tif"; fi
  for which in $order; do
    if [ "$which" = tif ]; then
      read -r s m < <(measure "$work/out.tif"); gen+=("$s"); g=$s
      echo "run $i  generic .tif:  ${s} s, peak RSS ${m} MiB"
    else
      read -r s m < <(measure "$work/out.ome.tif"); ome+=("$s"); o=$s
      echo "run $i  OME-TIFF:      ${s} s, peak RSS ${m} MiB"
    fi
  done
  ratios+=("$(awk -v a="$o" -v b="$g" 'BEGIN{printf "%.3f", a/b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
range() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd- -; }
echo "outputs: .tif $(du -h "$work/out.tif" | cut -f1), .ome.tif $(du -h "$work/out.ome.tif" | cut -f1)"
echo "median: generic $(median "${gen[@]}") s ($(range "${gen[@]}")), OME-TIFF $(median "${ome[@]}") s ($(range "${ome[@]}"))"
echo "OME-TIFF / generic within each round: median $(median "${ratios[@]}"), range $(range "${ratios[@]}") over $runs rounds"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
