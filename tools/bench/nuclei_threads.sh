#!/usr/bin/env bash
# How `tilewave nuclei` scales with threads: one run per thread count on one
# slide, the wall time and each step's seconds from --report side by side.
#   tools/bench/nuclei_threads.sh SLIDE [--threads "1 4 16"] [--device cpu] [--memory 8G] [--tilewave PATH]
# SLIDE: e.g. one made by tools/nuclei/synth_he.py (as nuclei_vs_skimage.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
slide=$1; shift
threads="1 4 16" device=cpu memory=8G tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2;;
    --device) device=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/nuclei-threads.XXXXXX"); trap 'rm -rf "$work"' EXIT
cat "$slide" >/dev/null 2>&1 || true
reports=()
for t in $threads; do
  rm -rf "$work/out"
  t0=$(date +%s.%N)
  "$tw" nuclei "$slide" "$work/out" --device "$device" --threads "$t" --memory "$memory" \
    --report "$work/r$t.json" >/dev/null
  t1=$(date +%s.%N)
  echo "threads $t: $(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.2f", a - b}') s"
  reports+=("$work/r$t.json")
done
python3 - "${reports[@]}" <<'PY'
import json, sys
rs = [json.load(open(p)) for p in sys.argv[1:]]
print("%-10s %-9s" % ("step", "kind") + "".join("%10s" % p.split("/r")[-1][:-5] for p in sys.argv[1:]))
for i, s in enumerate(rs[0]["steps"]):
    secs = [r["steps"][i].get("seconds") or 0 for r in rs]
    if max(secs) > 0:
        print("%-10s %-9s" % (s.get("name", s["step"]), s["kind"]) + "".join("%10.3f" % x for x in secs))
print("%-20s" % "features" + "".join("%10.3f" % r["features"]["csv"]["seconds"] for r in rs))
PY
