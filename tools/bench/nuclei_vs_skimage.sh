#!/usr/bin/env bash
# Side-by-side benchmark: `tilewave nuclei` against the scikit-image pipeline of
# the same steps (tools/nuclei/skimage_pipeline.py: hematoxylin, Gaussian, Otsu,
# fill holes, EDT, h-maxima markers, watershed, regionprops; HistomicsTK-style
# 1024-px tiles with overlap over N processes), on one synthetic H&E slide with
# ground truth (tools/nuclei/synth_he.py), the same cores, in one run.
#
#   tools/bench/nuclei_vs_skimage.sh [--size 8192x8192] [--mpp 0.5] [--runs 3]
#                                    [--processes N] [--device auto|cpu|cuda]
#                                    [--memory 1G] [--workdir DIR] [--tilewave PATH]
#
# --processes (default: the cores) goes to the scikit-image pipeline, whose
# features (--features) are written too, as ours are; tilewave uses all cores.
# The two alternate, R rounds (odd rounds tilewave first). Each round prints both
# wall times, the ratio skimage/tilewave (> 1: tilewave is faster) and both
# pixel rates; the summary gives the median and range of the ratio over rounds,
# and both pipelines' accuracy against the ground truth (object F1 at IoU 0.5,
# AJI; tools/nuclei/score.py). A --workdir is kept (the slide is reused).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
size=8192x8192 mpp=0.5 runs=3 processes=$(nproc) device=auto memory=1G work=''
tw=$here/build/tools/tilewave
py=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2;;
    --mpp) mpp=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --processes) processes=$2; shift 2;;
    --device) device=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
keep=1
if [ -z "$work" ]; then work=$(mktemp -d "${TMPDIR:-/tmp}/nuclei-bench.XXXXXX"); keep=0; fi
mkdir -p "$work"
slide=$work/he-$size-$mpp.tif gt=$work/he-$size-$mpp-gt.tif
if [ ! -s "$slide" ]; then
  echo "making $slide ..."
  "$py" "$here/tools/nuclei/synth_he.py" "$slide" "$gt" --size "$size" --mpp "$mpp" --seed 1 >/dev/null
fi
cat "$slide" >/dev/null
pixels=$("$py" -c "w,h='$size'.split('x'); print(int(w)*int(h))")

now() { date +%s.%N; }
run_tw() {
  rm -rf "$work/tw"
  local t0; t0=$(now)
  "$tw" nuclei "$slide" "$work/tw" --device "$device" --memory "$memory" --report "$work/tw-report.json" >/dev/null
  awk -v a="$(now)" -v b="$t0" 'BEGIN {print a - b}'
}
run_sk() {
  rm -f "$work/sk.tif" "$work/sk.csv"
  local t0; t0=$(now)
  "$py" "$here/tools/nuclei/skimage_pipeline.py" "$slide" "$work/sk.tif" --processes "$processes" \
    --features "$work/sk.csv" >/dev/null
  awk -v a="$(now)" -v b="$t0" 'BEGIN {print a - b}'
}
ratios=()
for r in $(seq 1 "$runs"); do
  if [ $((r % 2)) -eq 1 ]; then t=$(run_tw); s=$(run_sk); else s=$(run_sk); t=$(run_tw); fi
  ratio=$(awk -v a="$s" -v b="$t" 'BEGIN {printf "%.3f", a / b}')
  ratios+=("$ratio")
  printf 'round %d: tilewave %.2f s (%.1f MP/s), scikit-image %.2f s (%.1f MP/s), ratio %.2fx\n' "$r" "$t" \
    "$(awk -v p="$pixels" -v t="$t" 'BEGIN {print p / t / 1e6}')" "$s" \
    "$(awk -v p="$pixels" -v t="$s" 'BEGIN {print p / t / 1e6}')" "$ratio"
done
sorted=$(printf '%s\n' "${ratios[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "slide $size at $mpp um/px ($pixels px), $processes processes for scikit-image, $(nproc) cores"
echo "ratio scikit-image/tilewave: median ${median}x, range $(echo "$sorted" | head -1)-$(echo "$sorted" | tail -1)x over $runs rounds"
echo "accuracy (object F1 at IoU 0.5, AJI) against the ground truth:"
echo "  tilewave:     $("$py" "$here/tools/nuclei/score.py" "$work/tw/labels.tif" "$gt" --json)"
echo "  scikit-image: $("$py" "$here/tools/nuclei/score.py" "$work/sk.tif" "$gt" --json)"
if [ $keep -eq 0 ]; then rm -rf "$work"; fi
