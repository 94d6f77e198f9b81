#!/usr/bin/env bash
# Does the wavefront engine scale linearly with pixels, out of core? Runs the
# h-dome (h = 20, reconstruction by dilation) and the exact EDT (foreground:
# luma > 200, i.e. distances from glass to tissue) on the synthetic tissue
# slide at growing sizes, each read from a deflate-tiled TIFF on disk, under
# the same memory budget, and prints seconds and nanoseconds per pixel.
#
#   tools/bench/wavefront_scaling.sh [--sizes "4096 8192 16384 32768 65536"] [--memory 1G]
#                                    [--device cpu] [--workdir DIR] [--tilewave PATH]
#
# Inputs (tilewave's synthetic gray slide; the smaller ones are the top-left
# corner of the larger) are made once in the work folder and reused; outputs
# are deleted after each run. 65536^2 needs about 60 GB of free disk (the
# EDT's two scratch rasters and its output).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
sizes="4096 8192 16384 32768 65536" memory=1G device=cpu work=${TMPDIR:-/tmp}/tilewave-scaling
tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --device) device=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }
mkdir -p "$work"
field() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
echo "| side | pixels | h-dome whole | h-dome wavefront | ns/px | tile visits | EDT whole | EDT distances | ns/px | peak RSS (h-dome / EDT) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for n in $sizes; do
  src=$work/gray-$n.tif
  [ -f "$src" ] || "$tw" pyramid "synthetic:${n}x${n},gray" "$src" --compression deflate --min-size 1000000000 --memory "$memory" > /dev/null
  px=$((n * n))
  "$tw" hdome "$src" "$work/out.tif" --h 20 --compression deflate --memory "$memory" \
    --device "$device" --report "$work/h.json" > /dev/null
  rm -f "$work/out.tif"
  "$tw" edt "$src" "$work/out.tif" --threshold 200 --compression deflate --memory "$memory" \
    --device "$device" --report "$work/e.json" > /dev/null
  rm -f "$work/out.tif"
  hw=$(field "$work/h.json" command_seconds) hc=$(field "$work/h.json" wavefront_seconds) hv=$(field "$work/h.json" tile_visits)
  ew=$(field "$work/e.json" command_seconds) ec=$(field "$work/e.json" edt_seconds)
  awk -v n="$n" -v px="$px" -v hw="$hw" -v hc="$hc" -v hv="$hv" -v ew="$ew" -v ec="$ec" \
      -v rh="$(field "$work/h.json" peak_rss_bytes)" -v re="$(field "$work/e.json" peak_rss_bytes)" 'BEGIN {
    printf "| %d | %.2f GP | %.2f s | %.2f s | %.1f | %d | %.2f s | %.2f s | %.1f | %d / %d MB |\n",
      n, px / 1e9, hw, hc, hc / px * 1e9, hv, ew, ec, ec / px * 1e9, rh / 1048576, re / 1048576 }'
done
