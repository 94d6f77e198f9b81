#!/usr/bin/env bash
# Side-by-side benchmark: `tilewave pyramid` of the same input to the generic
# pyramidal TIFF with deflate (OUT.tif) and to OME-Zarr (OUT.zarr, deflate
# through numcodecs' zlib with the delta filter, io/zarr), alternating, in one
# run: the cost of the layout (a file per chunk, C-first chunks) against one
# BigTIFF, with the same codec and the same cascade. vips 8.14 cannot write
# OME-Zarr (dzsave's layouts are dz, zoomify, google, iiif, iiif3), so it is
# not a peer here.
#
#   tools/bench/zarr_vs_tiff.sh [--size 8192x8192] [--runs 5] [--threads N]
#                               [--compression deflate|zstd|none] [--memory 1G]
#                               [--device cpu|auto|cuda] [--workdir DIR] [--tilewave PATH]
#
# The input is tilewave's synthetic RGB slide stored once as a single level of
# 256-pixel JPEG tiles (as scanners write), read from the page cache. Each
# round runs both outputs, the order alternating (odd rounds .tif first), and
# prints both wall times, peak RSS and the ratio zarr/tif (< 1: Zarr faster);
# the summary gives the median and range over the rounds and both sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
size=8192x8192 runs=5 threads=$(nproc) device=cpu memory=1G compression=deflate
work=${TMPDIR:-/tmp}/tilewave-bench-zarr
tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --device) device=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --compression) compression=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }
mkdir -p "$work"

src=$work/synthetic-$size.tif
if [ ! -f "$src" ]; then
  echo "making $src ..." >&2
  "$tw" pyramid "synthetic:$size" "$src" --quality 90 --min-size 100000000 >&2
fi
echo "input: $src ($("$tw" info "$src" | sed -n 's/^  level 0: //p'))"
echo "compression: $compression   threads: $threads   runs: $runs   device: $device   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$src" >/dev/null  # both start with the input in the page cache

measure() {  # measure OUT -> prints "seconds peak_rss_mib"
  local out=$1
  rm -rf "$out"
  local cmd=("$tw" pyramid "$src" "$out" --compression "$compression" --threads "$threads" --device "$device" --memory "$memory")
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "${cmd[@]}" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
    awk '{printf "%.2f %.0f\n", $1, $2 / 1024}' "$work/time.txt"
  else
    local TIMEFORMAT="%R"
    { time "${cmd[@]}" >/dev/null 2>"$work/err.txt"; } 2>"$work/time.txt" || { cat "$work/err.txt" >&2; exit 1; }
    echo "$(cat "$work/time.txt") ?"
  fi
}

tif=() zarr=() ratios=()
for i in $(seq "$runs"); do
  if [ $((i % 2)) = 1 ]; then order="tif zarr"; else order="zarr tif"; fi
  for which in $order; do
    if [ "$which" = tif ]; then
      read -r s m < <(measure "$work/out.tif"); tif+=("$s"); t=$s
      echo "run $i  .tif:   ${s} s, peak RSS ${m} MiB"
    else
      read -r s m < <(measure "$work/out.zarr"); zarr+=("$s"); z=$s
      echo "run $i  .zarr:  ${s} s, peak RSS ${m} MiB"
    fi
  done
  ratios+=("$(awk -v a="$z" -v b="$t" 'BEGIN{printf "%.3f", a/b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
range() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd- -; }
echo "outputs: .tif $(du -sh "$work/out.tif" | cut -f1), .zarr $(du -sh --apparent-size "$work/out.zarr" | cut -f1) ($(find "$work/out.zarr" -type f | wc -l) files)"
echo "median: .tif $(median "${tif[@]}") s ($(range "${tif[@]}")), .zarr $(median "${zarr[@]}") s ($(range "${zarr[@]}"))"
echo "zarr / tif within each round: median $(median "${ratios[@]}"), range $(range "${ratios[@]}") over $runs rounds"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
