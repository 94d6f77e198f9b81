#!/usr/bin/env python3
"""Benchmark of the Python bindings (docs/python.md), ours and the peer side
by side in one run, alternating, several rounds, median and range:

1. read_region of random 512 x 512 regions of level 0 of a JPEG-tiled slide,
   from 1 and 8 threads: tilewave.Slide against openslide-python (RGBA PIL
   images turned into arrays, as a user of it would).
2. Op-call overhead: tilewave.ops.gaussian on a 4096 x 4096 uint8 array, the
   whole call against the engine's own time inside it (the op's run and the
   read of its result, timed in C++), and OpenCV's GaussianBlur on the same
   array for scale.

usage: PYTHONPATH=build/python python3 tools/bench/python_read_region.py \\
           --cli build/tilewave [--slide SLIDE] [--rounds 5] [--regions 64]
Without --slide it writes a JPEG pyramid of synthetic:8192x8192 with the CLI.
"""
import argparse
import concurrent.futures as cf
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np


def summary(xs):
    return "median %8.1f  range %8.1f .. %8.1f" % (statistics.median(xs), min(xs), max(xs))


def timed_regions(read, regions, threads):
    t0 = time.perf_counter()
    if threads == 1:
        for loc in regions:
            read(loc)
    else:
        with cf.ThreadPoolExecutor(threads) as ex:
            list(ex.map(read, regions))
    return len(regions) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/tilewave")
    ap.add_argument("--slide")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--regions", type=int, default=64)
    ap.add_argument("--size", type=int, default=4096, help="side of the op benchmark's image")
    args = ap.parse_args()

    import openslide
    import tilewave

    tmp = tempfile.TemporaryDirectory()
    slide_path = args.slide
    if not slide_path:
        slide_path = os.path.join(tmp.name, "slide.tif")
        subprocess.run([args.cli, "pyramid", "synthetic:8192x8192,seed=1", slide_path, "--quality", "85"],
                       check=True, stdout=subprocess.DEVNULL)
    ours = tilewave.open(slide_path)
    theirs = openslide.OpenSlide(slide_path)
    w, h = ours.dimensions
    print("slide %s: %d x %d, %s" % (slide_path, w, h, ours.level_dimensions))

    def read_ours(loc):
        return ours.read_region(loc, 0, (512, 512))

    def read_theirs(loc):
        return np.asarray(theirs.read_region(loc, 0, (512, 512)))

    rng = np.random.default_rng(0)
    results = {}
    for r in range(args.rounds):
        for threads in (1, 8):
            # Fresh positions each round (the same for both), so neither reads
            # what the other just put into the page cache or a tile cache alone.
            regions = [(int(rng.integers(0, w - 512)), int(rng.integers(0, h - 512))) for _ in range(args.regions)]
            order = [("tilewave", read_ours), ("openslide", read_theirs)]
            if r % 2:
                order.reverse()
            for name, read in order:
                results.setdefault((name, threads), []).append(timed_regions(read, regions, threads))
    print("\nread_region 512x512, level 0, regions/s (%d rounds of %d regions)" % (args.rounds, args.regions))
    for threads in (1, 8):
        for name in ("tilewave", "openslide"):
            print("  %-9s %d thread(s): %s" % (name, threads, summary(results[(name, threads)])))
        ratio = [a / b for a, b in zip(results[("tilewave", threads)], results[("openslide", threads)])]
        print("  tilewave / openslide, %d thread(s): %s" % (threads, summary(ratio)))

    # 2. Op-call overhead.
    cam = np.asarray(rng.integers(0, 256, (args.size, args.size)), dtype=np.uint8)
    import scipy.ndimage as ndi
    cam = ndi.uniform_filter(cam, 5)  # some structure; the time does not depend on it
    calls, engine, cv = [], [], []
    try:
        import cv2
    except ImportError:
        cv2 = None
    for r in range(args.rounds):
        t0 = time.perf_counter()
        tilewave.ops.gaussian(cam, sigma=2)
        calls.append(time.perf_counter() - t0)
        engine.append(tilewave._tilewave._last_op_seconds())
        if cv2 is not None:
            t0 = time.perf_counter()
            cv2.GaussianBlur(cam, (13, 13), 2, sigmaY=2, borderType=cv2.BORDER_REFLECT_101)
            cv.append(time.perf_counter() - t0)
    over = [100 * (c - e) / c for c, e in zip(calls, engine)]
    print("\ngaussian sigma 2 on %d x %d uint8, ms:" % (args.size, args.size))
    print("  tilewave.ops.gaussian call: %s" % summary([1e3 * c for c in calls]))
    print("  engine time inside it:      %s" % summary([1e3 * e for e in engine]))
    print("  binding overhead, %%:        %s" % summary(over))
    if cv:
        print("  cv2.GaussianBlur:           %s" % summary([1e3 * c for c in cv]))
    print("\n(cores: %d; numbers from a shared machine vary: compare within one run)" % os.cpu_count())


if __name__ == "__main__":
    main()
