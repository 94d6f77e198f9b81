#!/usr/bin/env bash
# Batch throughput of `tilewave batch` on 1, 2 and 4 MPI ranks (docs/batch.md):
# the same list of synthetic JPEG slides, each rank count in turn, several
# rounds alternating, slides per minute. One rank = one process (no mpirun).
#   tools/bench/batch_ranks.sh [--slides N] [--size WxH] [--runs R] [--ranks "1 2 4"] [--threads T]
#                              [-- BATCH ARGS...]   (e.g. -- --recompress, or -- 'filter gray' 'filter gaussian --sigma 2')
# mpirun's start (~0.3 s) is inside the time: compare with slides that take seconds.
set -euo pipefail
T=${TILEWAVE:-build/tools/tilewave}
slides=8 size=4096x4096 runs=3 ranks="1 2 4" threads=""
while [ $# -gt 0 ]; do
  case $1 in
    --slides) slides=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --tilewave) T=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/tw-batch-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The slides: JPEG pyramids of synthetic tissue, so each batch job decodes too.
for i in $(seq "$slides"); do
  "$T" pyramid "synthetic:$size,seed=$i" "$work/in$i.tif" > /dev/null
  echo "$work/in$i.tif" >> "$work/list.txt"
done
echo "batch of $slides slides of $size, $(nproc) cores, ranks: $ranks"
for round in $(seq "$runs"); do
  for np in $ranks; do
    rm -rf "$work/out"
    # Each rank gets the cores divided among the ranks unless told otherwise.
    t=${threads:-$(( ($(nproc) + np - 1) / np ))}
    start=$(date +%s.%N)
    if [ "$np" = 1 ]; then
      "$T" batch "$work/list.txt" "$work/out" --threads "$t" "$@" > /dev/null
    else
      mpirun --oversubscribe --bind-to none -np "$np" "$T" batch "$work/list.txt" "$work/out" --threads "$t" "$@" > /dev/null
    fi
    end=$(date +%s.%N)
    awk -v r="$round" -v np="$np" -v t="$t" -v s="$start" -v e="$end" -v n="$slides" \
      'BEGIN { printf "round %d  ranks %d (threads %d each)  %.2f s  %.1f slides/min\n", r, np, t, e - s, n * 60 / (e - s) }'
  done
done
