#!/usr/bin/env python3
"""tilewave.ops on CuPy arrays (read and written in GPU memory) against the
same op on the same pixels through the host (cupy.asnumpy, the op with
device="cuda", cupy.asarray: what a binding without zero-copy costs) and
against CuPy's own cupyx.scipy.ndimage, side by side in one run.

    python3 tools/bench/gpu_arrays_vs_cupy.py [--size 8192] [--rounds 15]

Prints, per op, each way's median seconds and range, and the median and
range of the ratios within each round (needs CuPy and a GPU, and the module
on PYTHONPATH).
"""
import argparse
import statistics
import time

import cupy as cp
import cupyx.scipy.ndimage as cnd
import numpy as np

import tilewave

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=8192)
p.add_argument("--rounds", type=int, default=15)
args = p.parse_args()

rng = np.random.default_rng(1)
a = cp.asarray((rng.random((args.size, args.size)) * 255).astype(np.uint8))
ops = tilewave.ops

CASES = [
    ("gaussian sigma 2", lambda x, **kw: ops.gaussian(x, sigma=2, **kw),
     lambda x: cnd.gaussian_filter(x, 2, mode="mirror")),
    ("erode 5x5 square", lambda x, **kw: ops.erode(x, radius=2, shape="square", **kw),
     lambda x: cnd.grey_erosion(x, size=(5, 5), mode="mirror")),
]


def seconds(f):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    f()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t


def spread(v):
    return "median %.4f (%.4f-%.4f)" % (statistics.median(v), min(v), max(v))


print("tilewave.ops on CuPy arrays, %d x %d uint8, %d rounds, %s" % (
    args.size, args.size, args.rounds, cp.cuda.runtime.getDeviceProperties(0)["name"].decode()))
for name, ours, theirs in CASES:
    ways = {
        "in place": lambda: ours(a),
        "through host": lambda: cp.asarray(ours(cp.asnumpy(a), device="cuda")),
        "cupyx": lambda: theirs(a),
    }
    # The same pixels either way, bit for bit.
    assert (cp.asnumpy(ways["in place"]()) == cp.asnumpy(ways["through host"]())).all()
    for f in ways.values():  # warm: CUDA's start, pools, kernels
        f(), f()
    t = {k: [] for k in ways}
    for _ in range(args.rounds):
        for k, f in ways.items():
            t[k].append(seconds(f))
    print(name)
    for k in ways:
        print("  %-13s s: %s" % (k, spread(t[k])))
    for k in ("through host", "cupyx"):
        print("  %s / in place: %s" % (k, spread([b / i for b, i in zip(t[k], t["in place"])])))
