#!/usr/bin/env python3
"""Helper of tools/bench/pipeline_vs_commands.sh.

  pipeline_report.py steps REPORT.json   the per-step table and the writer's figures
                                         of a 'tilewave run --report' file
  pipeline_report.py same A.tif B.tif    prints "yes" or "no": are the level-0 pixels
                                         identical? (tifffile; exit 3 when it cannot
                                         read them, with the reason on stderr)
"""
import json
import sys


def mib(n):
    return "%.1f MiB" % (n / 1048576) if n else "0"


def steps(path):
    with open(path) as f:
        r = json.load(f)
    print("plan: %s" % r.get("plan", "?"))
    print("| step | op | kind | seconds | tile visits | spilled | uploaded | downloaded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in r.get("steps", []):
        # A streamed step runs inside the fused tile loop: its figure is the busy
        # time of its calls summed over the workers. A barrier's is its wall time.
        if "seconds" in s:
            t = "%.3f s" % s["seconds"]
        elif "busy_seconds" in s:
            t = "%.3f s busy" % s["busy_seconds"]
        else:
            t = "?"
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s.get("step", "?"), s.get("text", s.get("op", "?")), s.get("kind", "?"), t,
            s.get("tile_visits", "?"), mib(s.get("bytes_spilled", 0)),
            mib(s.get("bytes_uploaded", 0)), mib(s.get("bytes_downloaded", 0))))
    busy = r.get("busy_seconds", {})
    if isinstance(busy, dict):
        busy = ", ".join("%s %.3f s" % (k, v) for k, v in sorted(busy.items()) if v)
    else:
        busy = "%.3f s" % busy
    print("writer: %.3f s (seconds); busy: %s" % (r.get("seconds", float("nan")), busy or "none"))
    print("command_seconds %.3f, open_seconds %.3f, peak RSS %s, device %s, %s threads" % (
        r.get("command_seconds", float("nan")), r.get("open_seconds", float("nan")),
        mib(r.get("peak_rss_bytes", 0)), r.get("device", "?"), r.get("threads", "?")))


def same(a, b):
    try:
        import numpy as np
        import tifffile
    except ImportError as e:
        print("%s (pip install tifffile)" % e, file=sys.stderr)
        return 3
    try:
        pa = tifffile.TiffFile(a).series[0].asarray()
        pb = tifffile.TiffFile(b).series[0].asarray()
    except Exception as e:  # a codec tifffile lacks without imagecodecs, for one
        print("tifffile cannot read them: %s" % e, file=sys.stderr)
        return 3
    if pa.shape != pb.shape or pa.dtype != pb.dtype:
        print("no")
        print("shapes differ: %s %s vs %s %s" % (pa.shape, pa.dtype, pb.shape, pb.dtype), file=sys.stderr)
        return 0
    diff = pa != pb
    if diff.ndim == 3:
        diff = diff.any(axis=2)
    n = int(diff.sum())
    if n == 0:
        print("yes")
    else:
        y, x = (int(v) for v in np.argwhere(diff)[0])
        print("no")
        print("%d pixels differ; first at (x %d, y %d): %s vs %s" % (n, x, y, pa[y, x], pb[y, x]),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "steps":
        steps(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
