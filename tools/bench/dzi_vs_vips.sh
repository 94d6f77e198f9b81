#!/usr/bin/env bash
# Side-by-side benchmark: `tilewave pyramid IN OUT.dzi` against
# `vips dzsave IN OUT` writing the same Deep Zoom pyramid (254-pixel JPEG
# tiles, overlap 1, the same quality and 4:2:0 chroma) from the same
# JPEG-tiled slide, on the same cores, in one run, alternating.
#
#   tools/bench/dzi_vs_vips.sh [--size 16384x16384] [--quality 85] [--threads 2]
#                              [--runs 3] [--workdir DIR] [--outdir DIR] [--tilewave PATH]
#                              [--device cpu]
#
# --outdir (default: the work folder) is where both write their pyramids:
# thousands of small files, so the file system weighs in (it prints what
# creating one costs there); an outdir on tmpfs (/dev/shm) measures the
# tools alone. Every run keeps its output until the end (see below).
# The input is tilewave's synthetic slide written once as one level of
# 256-pixel JPEG tiles (Q90 4:2:0, as scanners write) and reused; 16384x16384
# is 268 MP, 32768x32768 is 1.07 GP. --threads goes to both (tilewave
# --threads, VIPS_CONCURRENCY). Rounds alternate which tool runs first. Each
# run's file list (levels, names) is compared between the two outputs: the
# benchmark fails if they differ. Prints each run, the medians, and the
# ratio vips/tilewave within each round (> 1: tilewave is faster), median and
# range. --quality stays below 90 so that vips keeps 4:2:0 as tilewave does.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
size=16384x16384 quality=85 threads=2 runs=3 work=${TMPDIR:-/tmp}/tilewave-dzi-bench device=cpu out=
tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2;;
    --quality) quality=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --outdir) out=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    --device) device=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
command -v vips >/dev/null || { echo "vips not found (apt-get install libvips-tools)" >&2; exit 1; }
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }
mkdir -p "$work"
out=${out:-$work}
mkdir -p "$out"
src=$work/synthetic-$size.tif
if [ ! -f "$src" ]; then
  echo "making $src ..." >&2
  "$tw" pyramid "synthetic:$size" "$src" --quality 90 --min-size 100000000 >&2
fi
export VIPS_CONCURRENCY=$threads
echo "input: $src ($size, JPEG tiles)   quality: $quality   threads: $threads   runs: $runs   outputs in: $out ($(df -T "$out" | awk 'NR==2{print $2}'))"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$src" >/dev/null  # both start with the input in the page cache
# Every run writes a folder of its own, and all are deleted at the end, not
# between runs: ext4 skips inodes deleted in the last minutes when it
# allocates new ones (recently_deleted(), reading each one's inode block),
# so creating files right after deleting thousands cost up to 1 ms of
# kernel CPU each on our VMs against 40 us otherwise (perf), for both tools.
runs_dir=$(mktemp -d "$out/dzi-bench.XXXXXX")
trap 'rm -rf "$runs_dir"' EXIT
# What creating a file costs where the tiles go (the files stay until the end).
/usr/bin/python3 - "$runs_dir" <<'PY'
import os, resource, sys, time
d = os.path.join(sys.argv[1], "probe"); os.mkdir(d); n = 1000
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.time()
for i in range(n): os.close(os.open(f"{d}/{i}.jpeg", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("file creation where the tiles go: %.0f us a file (%.0f us of it kernel CPU), over %d empty files"
      % ((time.time() - t0) / n * 1e6, (r1.ru_stime - r0.ru_stime) / n * 1e6, n))
PY

measure() {  # measure NAME CMD... -> "seconds cpu_seconds peak_rss_mib"
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/$name.err" || {
    echo "$name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' "$work/time.txt"
}
run_tw() {
  tw_out=$runs_dir/run$1-tw
  read -r s c m < <(measure tilewave "$tw" pyramid "$src" "$tw_out.dzi" --tile 254 --overlap 1 \
    --quality "$quality" --threads "$threads" --device "$device")
  echo "run $1  tilewave: ${s} s wall, ${c} s CPU, peak RSS ${m} MiB"
  tw_s=$s
}
run_vips() {
  vips_out=$runs_dir/run$1-vips
  read -r s c m < <(measure vips vips dzsave "$src" "$vips_out" --tile-size 254 --overlap 1 \
    --suffix ".jpeg[Q=$quality]")
  echo "run $1  vips:     ${s} s wall, ${c} s CPU, peak RSS ${m} MiB"
  vips_s=$s
}
same_files() {
  diff <(cd "${tw_out}_files" && find . -type f | sort) \
       <(cd "${vips_out}_files" && find . -type f ! -name vips-properties.xml | sort) >/dev/null || {
    echo "the two outputs' file lists differ" >&2; exit 1; }
}

tw_times=() vips_times=() ratios=()
for i in $(seq "$runs"); do
  if [ $((i % 2)) -eq 1 ]; then run_tw "$i"; run_vips "$i"; else run_vips "$i"; run_tw "$i"; fi
  same_files
  tw_times+=("$tw_s") vips_times+=("$vips_s")
  ratios+=("$(awk -v a="$vips_s" -v b="$tw_s" 'BEGIN{printf "%.2f", a/b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1) hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
echo "outputs: tilewave $(du -sh "${tw_out}_files" | cut -f1), vips $(du -sh "${vips_out}_files" | cut -f1), $(find "${tw_out}_files" -type f | wc -l) tiles each"
echo "median: tilewave $(median "${tw_times[@]}") s, vips $(median "${vips_times[@]}") s; vips/tilewave within each round: median $(median "${ratios[@]}")x, $lo-${hi}x over ${#ratios[@]} rounds"
