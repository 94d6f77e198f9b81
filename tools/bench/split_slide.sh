#!/usr/bin/env bash
# One slide split over ranks or GPUs against one process (docs/scaleout.md):
# the same command in each configuration in turn, several rounds
# alternating; prints each run's seconds and, at the end, the median and
# range per configuration and the speed-up against "one".
#   tools/bench/split_slide.sh [--input SLIDE] [--runs R] [--configs "one mpi2 mpi4 gpu00"]
#                              [-- COMMAND ARGS after OUTPUT...]
# Configurations: one (a single process), mpiN (mpirun -np N, the cores
# shared: --threads cores/N each), gpuLIST (--device cuda:LIST, e.g. gpu00
# = cuda:0,0; gpuall = cuda:all), gpu0 (one process on cuda:0), cpu (one
# process, --device cpu).
# The command is `tilewave pyramid INPUT OUT [ARGS]` unless ARGS start with
# a step (then `tilewave run INPUT OUT ARGS`).
set -euo pipefail
T=${TILEWAVE:-build/tools/tilewave}
input=synthetic:8192x16384 runs=3 configs="one mpi2"
while [ $# -gt 0 ]; do
  case $1 in
    --input) input=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --tilewave) T=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
cmd=pyramid
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then cmd=run; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/tw-split-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
echo "split slide: $cmd $input $*; $cores cores; configs: $configs; $runs rounds"
for round in $(seq "$runs"); do
  for c in $configs; do
    out="$work/$c.tif"
    rm -f "$out"
    start=$(date +%s.%N)
    case $c in
      one) "$T" "$cmd" "$input" "$out" "$@" > /dev/null ;;
      cpu) "$T" "$cmd" "$input" "$out" --device cpu "$@" > /dev/null ;;
      gpu0) "$T" "$cmd" "$input" "$out" --device cuda:0 "$@" > /dev/null ;;
      gpuall) "$T" "$cmd" "$input" "$out" --device cuda:all "$@" > /dev/null ;;
      gpu*) list=$(echo "${c#gpu}" | sed 's/./&,/g; s/,$//'); "$T" "$cmd" "$input" "$out" --device "cuda:$list" "$@" > /dev/null ;;
      mpi*) np=${c#mpi}; t=$(( (cores + np - 1) / np ))
            mpirun --oversubscribe --bind-to none -np "$np" "$T" "$cmd" "$input" "$out" --threads "$t" "$@" > /dev/null ;;
      *) echo "unknown configuration $c" >&2; exit 2 ;;
    esac
    end=$(date +%s.%N)
    echo "$round $c $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')" | tee -a "$work/times"
    if [ "$c" != one ] && [ -f "$work/one.tif" ] && ! cmp -s "$work/one.tif" "$out"; then echo "  $c: output differs from one!"; fi
  done
done
one_med=""
for c in $configs; do
  # Median and range of this configuration's rounds (mawk has no sort).
  read -r n med lo hi < <(awk -v c="$c" '$2 == c { print $3 }' "$work/times" | sort -g |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print NR, m, v[1], v[NR] }')
  [ "$c" = one ] && one_med=$med
  speed=""
  if [ -n "$one_med" ] && [ "$c" != one ]; then speed=$(awk -v a="$one_med" -v b="$med" 'BEGIN { printf "  speed-up vs one: %.2fx", a / b }'); fi
  printf "%-8s median %.3f s (%.3f-%.3f over %d rounds)%s\n" "$c" "$med" "$lo" "$hi" "$n" "$speed"
done
