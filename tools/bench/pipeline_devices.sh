#!/usr/bin/env bash
# One `tilewave run` chain on two devices side by side: the same command with
# --device cuda and --device cpu (or any two), alternating, in one run; per
# round the wall times and their ratio, the outputs' equality, and the last
# round's per-step figures from --report.
#   tools/bench/pipeline_devices.sh SLIDE [--rounds 3] [--devices "cuda cpu"] [--threads N]
#                                   [--memory 48G] [--steps 'STEP|STEP|...'] [--tilewave PATH]
# SLIDE: e.g. tilewave pyramid synthetic:45056x45056,mpp=0.5 slide.tif (a JPEG slide).
# The default chain: gray, Gaussian, Otsu, invert, fill-holes, edt, 8-bit conversion.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
slide=$1; shift
rounds=3 devices="cuda cpu" threads='' memory=48G tw=$here/build/tools/tilewave
steps_arg="filter gray|filter gaussian --sigma 2|filter threshold --otsu|filter invert|fill-holes|edt|filter convert --type u8 --from 0 --to 40"
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2;;
    --devices) devices=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --memory) memory=$2; shift 2;;
    --steps) steps_arg=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
case $rounds in ''|*[!0-9]*|0) echo "--rounds takes a positive integer, not '$rounds'" >&2; exit 2;; esac
[ -f "$slide" ] || { echo "no such slide: $slide" >&2; exit 1; }
[ -x "$tw" ] || tw=$(command -v tilewave) || { echo "tilewave not built (and none on PATH)" >&2; exit 1; }
read -ra devs <<< "$devices"
[ ${#devs[@]} -eq 2 ] || { echo "--devices takes two devices, e.g. \"cuda cpu\"" >&2; exit 2; }
IFS='|' read -ra steps <<< "$steps_arg"
opts=(--memory "$memory"); [ -z "$threads" ] || opts+=(--threads "$threads")
work=$(mktemp -d "${TMPDIR:-/tmp}/pipeline-devices.XXXXXX"); trap 'rm -rf "$work"' EXIT
cat "$slide" >/dev/null
echo "slide: $slide; steps: $steps_arg; options: ${opts[*]}; machine: $(nproc) cores"
ratios=()
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  for k in 0 1; do
    d=${devs[$k]}
    t0=$(date +%s.%N)
    if ! "$tw" run "$slide" "$work/out-$k.tif" "${steps[@]}" --device "$d" "${opts[@]}" \
         --report "$work/r-$k.json" >/dev/null 2>"$work/err-$k.txt"; then
      echo "--device $d failed: $(head -c 300 "$work/err-$k.txt")" >&2; exit 1
    fi
    t1=$(date +%s.%N)
    secs[$k]=$(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.2f", a - b}')
    line+=" ${d} ${secs[$k]} s"
  done
  ratio=$(awk -v a="${secs[1]}" -v b="${secs[0]}" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$ratio")
  same=$(cmp -s "$work/out-0.tif" "$work/out-1.tif" && echo "identical outputs" || echo "OUTPUTS DIFFER")
  echo "$line; ${devs[1]}/${devs[0]} ${ratio}x; $same"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk -v n="${#ratios[@]}" -v a="${devs[1]}" -v b="${devs[0]}" \
  '{v[NR] = $1} END {m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
    printf "%s/%s within each round: median %.2fx, %.2f-%.2fx over %d rounds\n", a, b, m, v[1], v[n], n}'
for k in 0 1; do
  echo "last round, --device ${devs[$k]}, per step (--report):"
  python3 - "$work/r-$k.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["steps"]:
    secs = s.get("seconds", s.get("busy_seconds", 0))
    what = "s" if "seconds" in s else "s busy"
    v = s.get("values", {})
    extra = ", ".join(f"{k} {v[k]}" for k in ("gpu_binary_kernel", "gpu_whole_image", "gpu_device_input", "bits_input", "result_on_device") if k in v)
    print(f"  {s['step']} {s['op'][:34]:<34} {s['kind']:<9} {secs:7.2f} {what:<7} up {s['bytes_uploaded'] / 1e9:5.2f} GB"
          f"  down {s['bytes_downloaded'] / 1e9:5.2f} GB  {extra}")
print(f"  writer {r['seconds']:.2f} s, command {r['command_seconds']:.2f} s, peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB")
PY
done
