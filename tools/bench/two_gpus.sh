#!/usr/bin/env bash
# Issue 21: batches and one slide over the two GPUs of one host, side by side
# with one GPU, in one run (docs/PERFORMANCE.md, "Two GPUs of one host").
#   tools/bench/two_gpus.sh [--out DIR] [--deadline SECONDS] [--small]
# Needs mpirun, a CUDA build of tilewave on PATH (or TILEWAVE=...), and two
# GPUs; --small shrinks every size (a dry run of the script itself, also on a
# machine without GPUs when DEV1/DEVR/DEVALL name CPU devices, e.g.
# DEV1=cpu DEVR=cpu DEVALL=cpu).
# RANK_THREADS: threads of each of the two ranks (default: half the cores, so
# that the two ranks together have what the one rank has; the cores, so that
# one rank's CPU work can take the cores while the other waits on its GPU).
# ONLY=batch runs the batch comparisons alone, ONLY=split the one-slide ones.
# Each batch round also times one rank under `mpirun -np 1`: the launcher's
# and MPI's start, which two ranks pay too.
# Order: the first round of every comparison, then further rounds while the
# deadline allows; each line of results is appended to DIR/results.txt as it
# comes, so a run cut short keeps what it measured.
set -euo pipefail
T=${TILEWAVE:-tilewave}
out=${TMPDIR:-/tmp}/two-gpus deadline=240 small=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    --small) small=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
DEV1=${DEV1:-cuda:0} DEVR=${DEVR:-cuda} DEVALL=${DEVALL:-cuda:all}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc) half=${RANK_THREADS:-$(( ($(nproc) + 1) / 2 ))}
only=${ONLY:-all}
mem=${MEM:-48G}
work=$(mktemp -d "${TMPDIR:-/tmp}/tw-2gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/reports"
res="$out/results.txt"
# The per-run reports, packed into one file after every comparison.
pack() { tar -C "$work" -czf "$out/reports.tgz" reports; }
t0=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - t0) )); }
log() { echo "$*" | tee -a "$res"; }
mpi="mpirun --oversubscribe --bind-to none -np 2"
if ! $mpi true > "$work/mpi-check.txt" 2>&1; then
  log "mpirun does not start: $(head -c 400 "$work/mpi-check.txt")"; mpi=""
fi

# Eight JPEG slides of 1.07-1.28 GP (--small: 16-26 MP), one 4.3-GP slide (--small: 67 MP).
if [ "$small" = 1 ]; then
  sizes="4096x4096 4352x4352 4608x4608 4864x4864 5120x4096 4096x5120 4608x4096 4096x4608" big=8192x8192
else
  sizes="32768x32768 33792x33792 34816x34816 35840x35840 36864x32768 32768x36864 34816x32768 32768x34816" big=65536x65536
fi
i=0
for s in $sizes; do
  i=$((i + 1))
  "$T" pyramid "synthetic:$s,seed=$i" "$work/slide$i.tif" --device "$DEV1" --threads "$cores" > /dev/null &
  [ $((i % 2)) = 0 ] && wait
  echo "$work/slide$i.tif" >> "$work/list.txt"
done
wait
bigmade="not made"
if [ "$only" != batch ]; then
  "$T" pyramid "synthetic:$big,seed=99" "$work/big.tif" --device "$DEV1" --threads "$cores" > /dev/null
  bigmade=$(du -h "$work/big.tif" | cut -f1)
fi
log "inputs: 8 slides ($(du -ch "$work"/slide*.tif | tail -1 | cut -f1)), big $big ($bigmade); $cores cores; made in $(( $(date +%s) - t0 )) s"

secs() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }'; }
steps6=('filter gray' 'filter gaussian --sigma 2' 'filter threshold --otsu' 'filter invert' fill-holes 'filter invert')
wave=('filter gray' 'filter gaussian --sigma 2' 'filter threshold --otsu' 'filter invert' fill-holes)

batch_round() {  # $1 round, $2 label, then batch arguments
  local r=$1 label=$2; shift 2
  local s
  rm -rf "$work/b1" "$work/b2"
  s=$(date +%s.%N)
  "$T" batch "$work/list.txt" "$work/b1" --device "$DEV1" --threads "$cores" --memory "$mem" "$@" > /dev/null
  local one; one=$(secs "$s")
  [ -n "$mpi" ] || { log "batch $label round $r: 1 rank on 1 GPU $one s (no mpirun)"; return; }
  s=$(date +%s.%N)
  $mpi "$T" batch "$work/list.txt" "$work/b2" --device "$DEVR" --threads "$half" --memory "$mem" "$@" > /dev/null
  local two; two=$(secs "$s")
  # One rank under the same launcher: what mpirun's and MPI's start add.
  rm -rf "$work/b3"
  s=$(date +%s.%N)
  ${mpi/-np 2/-np 1} "$T" batch "$work/list.txt" "$work/b3" --device "$DEV1" --threads "$cores" --memory "$mem" "$@" > /dev/null
  local one_mpi; one_mpi=$(secs "$s")
  local same=identical
  for f in "$work"/b1/*.tif; do cmp -s "$f" "$work/b2/$(basename "$f")" || same=DIFFERENT; done
  cp "$work/b2/batch-summary.json" "$work/reports/batch-$label-r$r.json"
  log "$(awk -v r="$r" -v l="$label" -v a="$one" -v b="$two" -v c="$one_mpi" -v same="$same" 'BEGIN {
    printf "batch %-8s round %d: 1 rank on 1 GPU %.2f s (%.1f slides/min), 2 ranks on 2 GPUs %.2f s (%.1f slides/min): %.2fx, outputs %s; 1 rank under mpirun %.2f s (2 ranks: %.2fx)\n",
      l, r, a, 480 / a, b, 480 / b, a / b, same, c, c / b }')"
  pack
}

split_round() {  # $1 round, $2 label, $3 command, then its arguments after the output
  local r=$1 label=$2 cmd=$3; shift 3
  local s one two all
  rm -f "$work"/s1.tif "$work"/s2.tif "$work"/sa.tif
  s=$(date +%s.%N)
  "$T" "$cmd" "$work/big.tif" "$work/s1.tif" --device "$DEV1" --threads "$cores" --memory "$mem" --report "$work/reports/$label-one-r$r.json" "$@" > /dev/null
  one=$(secs "$s")
  two=0
  s=$(date +%s.%N)
  [ -n "$mpi" ] && $mpi "$T" "$cmd" "$work/big.tif" "$work/s2.tif" --device "$DEVR" --threads "$half" --memory "$mem" --report "$work/reports/$label-mpi2-r$r.json" "$@" > /dev/null && two=$(secs "$s")
  s=$(date +%s.%N)
  "$T" "$cmd" "$work/big.tif" "$work/sa.tif" --device "$DEVALL" --threads "$cores" --memory "$mem" --report "$work/reports/$label-all-r$r.json" "$@" > /dev/null
  all=$(secs "$s")
  local same2=identical samea=identical
  [ -f "$work/s2.tif" ] || same2=missing
  [ -f "$work/s2.tif" ] && ! cmp -s "$work/s1.tif" "$work/s2.tif" && same2=DIFFERENT
  cmp -s "$work/s1.tif" "$work/sa.tif" || samea=DIFFERENT
  log "$(awk -v r="$r" -v l="$label" -v a="$one" -v b="$two" -v c="$all" -v s2="$same2" -v sa="$samea" 'BEGIN {
    printf "split %-8s round %d: 1 GPU %.2f s; mpirun -np 2 (a GPU each) %.2f s: %.2fx, %s; %s in one process %.2f s: %.2fx, %s\n",
      l, r, a, b, (b > 0 ? a / b : 0), s2, ENVIRON["DEVALL"], c, a / c, sa }')"
  pack
}
export DEVALL

# First rounds of everything, cheapest first; then more rounds while time is left.
log "two ranks: $half threads each; one rank: $cores"
b=0 s=0
[ "$only" = split ] || b=1
[ "$only" = batch ] || s=1
[ $b = 1 ] && batch_round 1 pyramid --recompress
[ $s = 1 ] && split_round 1 pyramid pyramid --recompress
[ $s = 1 ] && split_round 1 wave run "${wave[@]}"
[ $b = 1 ] && batch_round 1 pipeline6 "${steps6[@]}"
for r in 2 3; do
  [ $b = 1 ] && [ "$(left)" -gt 60 ] && batch_round "$r" pyramid --recompress
  [ $s = 1 ] && [ "$(left)" -gt 40 ] && split_round "$r" pyramid pyramid --recompress
  [ $s = 1 ] && [ "$(left)" -gt 60 ] && split_round "$r" wave run "${wave[@]}"
  [ $b = 1 ] && [ "$(left)" -gt 90 ] && batch_round "$r" pipeline6 "${steps6[@]}"
done
log "done in $(( $(date +%s) - t0 )) s"
