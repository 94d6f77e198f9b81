#!/usr/bin/env bash
# Side-by-side benchmark of Deep Zoom tiles over HTTP: `tilewave serve`
# (tiles made on request from a JPEG pyramid TIFF) against `vips dzsave`'s
# pre-rendered tiles of the same slide served statically, in one run, by
# BusyBox's httpd (a small C server, Debian's busybox package; forks per
# connection) where installed, and by Python's http.server
# (ThreadingHTTPServer, what people reach for).
#
#   tools/bench/serve_tiles.sh [--size 8192x8192] [--clients 8] [--threads N] [--tiles 400]
#                              [--rounds 3] [--workdir DIR] [--tilewave PATH]
#
# Each round, alternating: ours with a cold cache (a fresh server), then the
# same tiles again (warm cache), then each static server twice (first and
# second pass; the OS page cache is warm for both after dzsave). The client
# is Python threads with urllib (one connection per request, as the clients
# are the same for both). Tiles: a fixed random sample of --tiles tiles over
# the top three levels (where a viewer's requests go). Prints tiles per
# second per run and, at the end, the median and range over rounds.
# The dzsave time (what the static side pays before it can serve) is shown.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
size=8192x8192 clients=8 threads=$(nproc) tiles=400 rounds=3 work=${TMPDIR:-/tmp}/tilewave-serve-bench
tw=$here/build/tools/tilewave
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2;;
    --clients) clients=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --tiles) tiles=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    --tilewave) tw=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
command -v vips >/dev/null || { echo "vips not found (apt-get install libvips-tools)" >&2; exit 1; }
[ -x "$tw" ] || { echo "tilewave not built ($tw)" >&2; exit 1; }
mkdir -p "$work"
slide=$work/slide-$size.tif
[ -f "$slide" ] || "$tw" pyramid "synthetic:$size" "$slide" --quality 90 >/dev/null
if [ ! -f "$work/peer-$size.dzi" ]; then
  start=$(date +%s.%N)
  vips dzsave "$slide" "$work/peer-$size" --tile-size 254 --overlap 1 --suffix ".jpeg[Q=90]"
  echo "vips dzsave: $(echo "$(date +%s.%N) - $start" | bc) s to pre-render"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1))" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# The tile list: paths below NAME_files/, the same for both servers.
list=$work/tiles-$size.txt
/usr/bin/python3 - "$size" "$tiles" > "$list" <<'PY'
import random, sys
w, h = map(int, sys.argv[1].split('x'))
sizes = [(w, h)]
while w > 1 or h > 1:
    w, h = (w + 1) // 2, (h + 1) // 2
    sizes.append((w, h))
top = len(sizes) - 1
paths = []
for k in range(3):
    lw, lh = sizes[k]
    paths += ['%d/%d_%d.jpeg' % (top - k, c, r) for r in range((lh + 253) // 254) for c in range((lw + 253) // 254)]
random.seed(1)
random.shuffle(paths)
print('\n'.join(paths[:int(sys.argv[2])]))
PY

client() {  # base URL -> tiles per second
  /usr/bin/python3 - "$1" "$list" "$clients" <<'PY'
import sys, threading, time, urllib.request
base, paths, n = sys.argv[1], open(sys.argv[2]).read().split(), int(sys.argv[3])
lock, bad, i = threading.Lock(), [0], [0]
def work():
    while True:
        with lock:
            if i[0] >= len(paths): return
            p = paths[i[0]]; i[0] += 1
        try:
            with urllib.request.urlopen(base + p) as r:
                r.read()
        except Exception:
            bad[0] += 1
t0 = time.perf_counter()
ts = [threading.Thread(target=work) for _ in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
dt = time.perf_counter() - t0
if bad[0]: print('errors: %d' % bad[0], file=sys.stderr)
print('%.1f' % (len(paths) / dt))
PY
}

peers=(python)
command -v busybox >/dev/null && busybox httpd --help >/dev/null 2>&1 && peers=(busybox python)
start_peer() {  # name port -> starts it in the background, pid in $pid
  case $1 in
    busybox) busybox httpd -f -p "127.0.0.1:$2" -h "$work" >/dev/null 2>&1 & pid=$!;;
    python) (cd "$work" && exec /usr/bin/python3 -m http.server "$2" --bind 127.0.0.1 >/dev/null 2>&1) & pid=$!;;
  esac
}
declare -a ours_cold ours_warm
declare -A peer_first peer_second
for round in $(seq "$rounds"); do
  port=$(free_port)
  "$tw" serve "$slide" --port "$port" --threads "$threads" --memory 1G >/dev/null &
  pid=$!
  wait_port "$port"
  c=$(client "http://127.0.0.1:$port/slides/slide-${size}_files/")
  w=$(client "http://127.0.0.1:$port/slides/slide-${size}_files/")
  kill -TERM "$pid"; wait "$pid" || true
  line="round $round: tilewave serve cold $c, warm $w tiles/s"
  ours_cold+=("$c"); ours_warm+=("$w")
  for peer in "${peers[@]}"; do
    port=$(free_port)
    start_peer "$peer" "$port"
    wait_port "$port"
    f=$(client "http://127.0.0.1:$port/peer-${size}_files/")
    s=$(client "http://127.0.0.1:$port/peer-${size}_files/")
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    line+=" | dzsave tiles via $peer $f, $s"
    peer_first[$peer]+="$f "; peer_second[$peer]+="$s "
  done
  echo "$line"
done

summary() {  # name values...
  local name=$1; shift
  printf '%s\n' "$@" | sort -g | awk -v n="$name" '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%-40s median %8.1f tiles/s  range %.1f-%.1f\n", n, m, v[1], v[NR]}'
}
echo "slide synthetic:$size, $tiles tiles of the top 3 levels, $clients clients, tilewave --threads $threads, $(nproc) cores"
summary "tilewave serve, cold cache" "${ours_cold[@]}"
summary "tilewave serve, warm cache" "${ours_warm[@]}"
for peer in "${peers[@]}"; do
  # shellcheck disable=SC2086
  summary "vips dzsave + $peer, 1st pass" ${peer_first[$peer]}
  # shellcheck disable=SC2086
  summary "vips dzsave + $peer, 2nd pass" ${peer_second[$peer]}
done
