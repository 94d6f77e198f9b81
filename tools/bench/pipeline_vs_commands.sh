#!/usr/bin/env bash
# Side-by-side benchmark: one 'tilewave run' pipeline against the same steps run
# as separate tilewave commands, each writing a deflate TIFF that the next one
# reads, on the same input, cores and memory budget, in one run.
#
#   tools/bench/pipeline_vs_commands.sh [--input synthetic|FILE] [--size 32768x32768]
#                                       [--runs 3] [--device auto|cpu|cuda] [--threads N]
#                                       [--memory 1G] [--workdir DIR] [--tilewave PATH]
#                                       [--steps "STEP|STEP|..."]
#
# The default chain is a nuclei preprocessing (2 wavefront barriers, fill-holes and edt):
#   'filter gray' | 'filter gaussian --sigma 2' | 'filter threshold --otsu' | 'filter invert'
#   | fill-holes | edt | 'filter convert --type u8 --from 0 --to 40'
# It ends at edt (and says so) when 'tilewave ops' does not list 'filter convert'.
# --steps replaces it: STEPs as 'tilewave run' takes them, separated by '|'. The
# separate commands need a linear chain (each step reads the one before; no 'NAME:'
# steps, no quotes inside a step).
#
#   pipeline: tilewave run INPUT out-pipeline.tif STEP... --compression deflate
#   separate: tilewave filter gray INPUT step-1.tif --compression deflate
#             tilewave filter gaussian step-1.tif step-2.tif --sigma 2 --compression deflate
#             ... (the last writes out-separate.tif; each intermediate is deleted once read)
# --device, --memory and --threads (default: tilewave's, all cores) go to every
# tilewave command, --report to each run; the synthetic slide is made first, as
# scanners write, with 'tilewave pyramid synthetic:WxH' (JPEG pyramid; --size, default
# 32768x32768 = 1.07 GP). The input is put in the page cache; then the two
# alternate, R rounds (odd rounds the pipeline first, even rounds the commands).
#
# Each round prints both wall times (separate: the sum over its commands, each
# listed), their ratio separate/pipeline (> 1: the pipeline is faster) and peak
# RSS (/usr/bin/time -f %M, or the reports' peak_rss_bytes without GNU time;
# separate: the largest of its commands). The summary gives the medians, the
# median and range (min-max) of the ratio over rounds, the last pipeline
# report's per-step figures and the writer's, and whether the two outputs'
# level-0 pixels are identical (python3 with tifffile; $PYTHON, default
# /usr/bin/python3; skipped with a note without them). Exit 1 if they differ.
#
# Without --workdir the work folder is a new one under ${TMPDIR:-/tmp}, removed at
# the end; a --workdir is kept with the synthetic slide (reused by the next run),
# the two outputs and the reports.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
input=synthetic size=32768x32768 runs=3 device=auto threads='' memory=1G work='' steps_arg=''
tw=$here/build/tools/tilewave
py=${PYTHON:-/usr/bin/python3}
helper=$here/tools/bench/pipeline_report.py
while [ $# -gt 0 ]; do
  case $1 in
    --input) input=$2; shift 2;;
    --size) size=$2; shift 2;;
    --runs) runs=$2; shift 2;;
    --device) device=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    --steps) steps_arg=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
case $runs in ''|*[!0-9]*|0) echo "--runs takes a positive integer, not '$runs'" >&2; exit 2;; esac
case $size in [0-9]*x[0-9]*) ;; *) echo "--size takes WxH, not '$size'" >&2; exit 2;; esac
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built" >&2; exit 1; }

if [ -n "$work" ]; then
  mkdir -p "$work"; own_work=0
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/tilewave-pipeline.XXXXXX"); own_work=1
fi
cleanup() {
  if [ "$own_work" = 1 ]; then rm -rf "$work"
  else rm -f "$work"/step-*.tif "$work"/*.log "$work/time.txt"; fi
}
trap cleanup EXIT

# Every tilewave command gets these.
opts=(--device "$device" --memory "$memory")
[ -z "$threads" ] || opts+=(--threads "$threads")

# The steps, and each one's command words (one or two, found in 'tilewave ops')
# and its options, for the separate commands.
op_names=$("$tw" ops | sed 's/  .*//')
has_op() { printf '%s\n' "$op_names" | grep -qxF -- "$1"; }
steps=()
if [ -n "$steps_arg" ]; then
  IFS='|' read -ra raw <<< "$steps_arg"
  for s in "${raw[@]}"; do
    s=$(printf '%s' "$s" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
    [ -z "$s" ] || steps+=("$s")
  done
  [ ${#steps[@]} -gt 0 ] || { echo "--steps: no step in '$steps_arg'" >&2; exit 2; }
else
  steps=('filter gray' 'filter gaussian --sigma 2' 'filter threshold --otsu' 'filter invert' fill-holes edt)
  if has_op 'filter convert'; then
    steps+=('filter convert --type u8 --from 0 --to 40')
  else
    echo "note: 'tilewave ops' lists no 'filter convert' yet: the default chain ends at edt (f32 output)"
  fi
fi
cmd_words=() cmd_opts=()
for s in "${steps[@]}"; do
  read -ra w <<< "$s"
  case ${w[0]} in *:) echo "step '$s': named steps need 'tilewave run'; the separate commands take a linear chain" >&2; exit 2;; esac
  if [ ${#w[@]} -ge 2 ] && has_op "${w[0]} ${w[1]}"; then
    cmd_words+=("${w[0]} ${w[1]}") cmd_opts+=("${w[*]:2}")
  elif has_op "${w[0]}"; then
    cmd_words+=("${w[0]}") cmd_opts+=("${w[*]:1}")
  else
    echo "step '$s': no such op in 'tilewave ops'" >&2; exit 2
  fi
done
nsteps=${#steps[@]}

case $input in
  synthetic)
    src=$work/synthetic-$size.tif
    if [ ! -f "$src" ]; then
      echo "making $src ..." >&2
      "$tw" pyramid "synthetic:$size" "$src" "${opts[@]}" >&2
    fi;;
  *) src=$input; [ -f "$src" ] || { echo "no such input: $src" >&2; exit 1; };;
esac

echo "input: $src ($("$tw" info "$src" | sed -n 's/^  level 0: //p'))"
echo "steps ($nsteps): $(printf '%s | ' "${steps[@]}" | sed 's/ | $//')"
echo "options: ${opts[*]}   runs: $runs   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
if [ -x /usr/bin/time ]; then rss_from='/usr/bin/time -f %M'
else rss_from="the reports' peak_rss_bytes (no /usr/bin/time: apt-get install time)"; fi
echo "peak RSS from: $rss_from"
cat "$src" >/dev/null  # both start with the input in the page cache

field() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
now() { date +%s.%N; }

# timed LOG REPORT CMD... : runs CMD (which writes REPORT), sets t_secs (wall) and t_rss (MiB).
timed() {
  local log=$1 report=$2 t0 t1 kib; shift 2
  t0=$(now)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f %M -o "$work/time.txt" "$@" >"$log" 2>&1 || {
      echo "failed:$(printf ' %q' "$@")" >&2; cat "$log" >&2; exit 1; }
    t1=$(now)
    kib=$(tail -1 "$work/time.txt")
  else
    "$@" >"$log" 2>&1 || { echo "failed:$(printf ' %q' "$@")" >&2; cat "$log" >&2; exit 1; }
    t1=$(now)
    kib=$(awk -v b="$(field "$report" peak_rss_bytes)" 'BEGIN{printf "%d", b / 1024}')
  fi
  t_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
  t_rss=$(awk -v k="$kib" 'BEGIN{printf "%.0f", k / 1024}')
}

run_pipeline() {
  rm -f "$work/out-pipeline.tif"
  timed "$work/pipeline.log" "$work/pipeline.json" "$tw" run "$src" "$work/out-pipeline.tif" "${steps[@]}" \
    --compression deflate --report "$work/pipeline.json" "${opts[@]}"
  p_secs=$t_secs p_rss=$t_rss
}

run_separate() {
  local i prev=$src out name extra
  rm -f "$work/out-separate.tif"
  s_secs=0 s_rss=0 s_detail='' s_bytes=0
  for ((i = 0; i < nsteps; i++)); do
    if [ $((i + 1)) -eq "$nsteps" ]; then out=$work/out-separate.tif; else out=$work/step-$((i + 1)).tif; fi
    read -ra name <<< "${cmd_words[i]}"
    read -ra extra <<< "${cmd_opts[i]}"
    timed "$work/separate-$((i + 1)).log" "$work/separate-$((i + 1)).json" "$tw" "${name[@]}" "$prev" "$out" \
      ${extra[@]+"${extra[@]}"} --compression deflate --report "$work/separate-$((i + 1)).json" "${opts[@]}"
    if [ "$prev" != "$src" ]; then
      s_bytes=$((s_bytes + $(stat -c %s "$prev"))); rm -f "$prev"
    fi
    prev=$out
    s_secs=$(awk -v a="$s_secs" -v b="$t_secs" 'BEGIN{printf "%.3f", a + b}')
    [ "$t_rss" -le "$s_rss" ] || s_rss=$t_rss
    s_detail+="${s_detail:+, }${steps[i]%% --*} $(printf '%.2f' "$t_secs")"
  done
}

p_times=() s_times=() ratios=()
for ((r = 1; r <= runs; r++)); do
  if [ $((r % 2)) = 1 ]; then first=pipeline; run_pipeline; run_separate
  else first=separate; run_separate; run_pipeline; fi
  ratio=$(awk -v s="$s_secs" -v p="$p_secs" 'BEGIN{printf "%.2f", s / p}')
  p_times+=("$p_secs") s_times+=("$s_secs") ratios+=("$ratio")
  printf 'round %d (%s first): pipeline %.2f s, peak RSS %s MiB | separate %.2f s (%d commands), peak RSS %s MiB (largest) | ratio %sx\n' \
    "$r" "$first" "$p_secs" "$p_rss" "$s_secs" "$nsteps" "$s_rss" "$ratio"
  echo "  separate commands (s): $s_detail; intermediates $(awk -v b="$s_bytes" 'BEGIN{printf "%.1f", b / 1048576}') MiB written and read"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1) hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
printf 'median: pipeline %.2f s, separate %.2f s; separate/pipeline within each round: median %.2fx, %s-%sx over %d rounds\n' \
  "$(median "${p_times[@]}")" "$(median "${s_times[@]}")" "$(median "${ratios[@]}")" "$lo" "$hi" "$runs"

echo
echo "last pipeline run, per step (--report; a streamed step's time is its busy time summed over workers):"
if [ -x "$py" ]; then "$py" "$helper" steps "$work/pipeline.json"
else echo "(no $py: see $work/pipeline.json)"; fi

same=''
if [ -x "$py" ]; then
  if same=$("$py" "$helper" same "$work/out-pipeline.tif" "$work/out-separate.tif" 2>"$work/same.log"); then
    echo "outputs identical: $same"
    [ ! -s "$work/same.log" ] || sed 's/^/  /' "$work/same.log"
  else
    echo "outputs identical: not checked ($(tail -1 "$work/same.log"))"
  fi
else
  echo "outputs identical: not checked (no $py)"
fi
[ "$same" != no ]
