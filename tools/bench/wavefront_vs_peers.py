#!/usr/bin/python3
"""Side-by-side benchmark of Tilewave's wavefront ops (CPU backend) against
scikit-image, scipy and OpenCV, in one run, on the same cores.

  tools/bench/wavefront_vs_peers.py [--size 4096] [--tilewave build/tools/tilewave] [--runs 3]

Reconstruction: the h-dome of a 4096^2 tissue image (the synthetic slide's
luma, inverted so that nuclei are bright domes), h = 20 — tilewave hdome vs
skimage.morphology.reconstruction; and a random 4096^2 image. EDT: the seed's
patterns and a random image, tilewave edt vs scipy.ndimage.distance_transform_edt
and cv2.distanceTransform(DIST_L2, DIST_MASK_PRECISE), with each peer's
largest error against scipy (exact). Tilewave is timed two ways: the whole
command (read TIFF, compute, write a pyramidal TIFF) and the computation
alone, from its --report. Prints a Markdown table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import tifffile
from scipy import ndimage


def median_time(fn, runs):
    ts = []
    out = None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2], out


def run_tw(tw, args, runs, report):
    def once():
        subprocess.run([tw] + args + ['--report', report], check=True, stdout=subprocess.DEVNULL)
        with open(report) as f:
            return json.load(f)
    t, rep = median_time(once, runs)
    return t, rep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', type=int, default=4096)
    ap.add_argument('--tilewave', default=os.path.join(os.path.dirname(__file__), '../../build/tools/tilewave'))
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--skip-skimage', action='store_true', help='skimage reconstruction takes ~10 s per run')
    a = ap.parse_args()
    n = a.size
    tw = os.path.abspath(a.tilewave)
    import cv2
    from skimage.morphology import reconstruction
    tmp = tempfile.mkdtemp(prefix='tw-bench-')
    rows = []
    print(f'# {n}x{n}, {os.cpu_count()} cores, cv2 {cv2.__version__}', file=sys.stderr)

    # Reconstruction inputs.
    subprocess.run([tw, 'pyramid', f'synthetic:{n}x{n},gray', f'{tmp}/gray.tif', '--compression', 'deflate',
                    '--min-size', '100000', '--device', 'cpu'], check=True, stdout=subprocess.DEVNULL)
    tissue = 255 - tifffile.imread(f'{tmp}/gray.tif', key=0)
    rng = np.random.default_rng(1)
    random = rng.integers(0, 256, (n, n), dtype=np.uint8)
    for name, img in [('tissue h-dome', tissue), ('random h-dome', random)]:
        tifffile.imwrite(f'{tmp}/in.tif', img, tile=(256, 256), compression='zlib')
        t_tw, rep = run_tw(tw, ['hdome', f'{tmp}/in.tif', f'{tmp}/out.tif', '--h', '20', '--device', 'cpu'], a.runs,
                           f'{tmp}/r.json')
        ours = tifffile.imread(f'{tmp}/out.tif', key=0)
        seed = np.clip(img.astype(int) - 20, 0, 255).astype(np.uint8)
        if a.skip_skimage:
            t_sk, exact = float('nan'), 'not run'
        else:
            t_sk, rec = median_time(lambda: reconstruction(seed, img, method='dilation'), 1)
            exact = 'identical' if np.array_equal(ours, img - rec.astype(np.uint8)) else 'DIFFERENT'
        rows.append((f'reconstruction: {name}', t_tw, rep['wavefront_seconds'], f'skimage {t_sk:.2f} s', exact))

    # EDT inputs: the seed's patterns and random.
    yy, xx = np.mgrid[0:n, 0:n]
    patterns = {
        'random': rng.random((n, n)) < 0.0005,
        '16 circles': np.zeros((n, n), bool),
        'big circle': np.abs(np.hypot(yy - (n - 1), xx - n / 2) - n / 2) < 0.75,
        'squares on corners': np.zeros((n, n), bool),
        'diagonal': yy == xx,
        'X': (yy == xx) | (yy == n - 1 - xx),
        'central circle': np.abs(np.hypot(yy - n / 2, xx - n / 2) - n / 4) < 0.75,
    }
    for cy in range(4):
        for cx in range(4):
            patterns['16 circles'] |= np.abs(np.hypot(yy - (cy + .5) * n / 4, xx - (cx + .5) * n / 4) - n / 12) < 0.75
    s = n // 8
    sq = patterns['squares on corners']
    sq[:s, :s] = sq[:s, -s:] = sq[-s:, :s] = sq[-s:, -s:] = True
    for name, bg in patterns.items():
        img = np.where(bg, 0, 255).astype(np.uint8)
        tifffile.imwrite(f'{tmp}/in.tif', img, tile=(256, 256), compression='zlib')
        t_tw, rep = run_tw(tw, ['edt', f'{tmp}/in.tif', f'{tmp}/out.tif', '--device', 'cpu'], a.runs, f'{tmp}/r.json')
        ours = tifffile.imread(f'{tmp}/out.tif', key=0)
        t_sp, ref = median_time(lambda: ndimage.distance_transform_edt(img > 0), a.runs)
        t_cv, cv = median_time(lambda: cv2.distanceTransform(img, cv2.DIST_L2, cv2.DIST_MASK_PRECISE), a.runs)
        err_tw = float(np.abs(ours - ref).max())
        err_cv = float(np.abs(cv - ref).max())
        rows.append((f'EDT: {name}', t_tw, rep['edt_seconds'],
                     f'scipy {t_sp:.2f} s, OpenCV {t_cv:.3f} s (max error {err_cv:.3g})', f'max error {err_tw:.2g}'))

    print(f'| {n}x{n} | tilewave, whole command | tilewave, computation | peers (same run) | tilewave vs reference |')
    print('| --- | --- | --- | --- | --- |')
    for r in rows:
        print(f'| {r[0]} | {r[1]:.3f} s | {r[2]:.3f} s | {r[3]} | {r[4]} |')


if __name__ == '__main__':
    main()
