#!/usr/bin/python3
"""Side-by-side benchmark of Tilewave's CPU filters against OpenCV, in one
run, on the same cores and the same 8-bit image (scikit-image's camera
picture tiled to SIZE x SIZE, so there is real content with edges).

  tools/bench/filter_vs_opencv.py [--size 8192] [--runs 5] [--bench build/tools/filter_cpu_bench]

OpenCV runs with cv2.setNumThreads(os.cpu_count()); Tilewave's filters run
through the op API in bands of 256 full-width rows (as the pyramid writer
reads them), no file I/O on either side. Canny: Tilewave's smoothing is its
own Gaussian (float, rounded) and OpenCV's is GaussianBlur on the 8-bit image
with the same sigma and kernel size; both then run Canny (L2 gradient).
Prints a Markdown table of MP/s and the ratio.
"""
import argparse
import os
import subprocess
import tempfile
import time

import cv2
import numpy as np
from skimage import data


def median(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', type=int, default=8192)
    ap.add_argument('--runs', type=int, default=5)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--bench', default=os.path.join(here, '..', '..', 'build', 'tools', 'filter_cpu_bench'))
    a = ap.parse_args()
    cv2.setNumThreads(os.cpu_count())
    n = a.size
    cam = data.camera()
    img = np.tile(cam, (n // cam.shape[0] + 1, n // cam.shape[1] + 1))[:n, :n].copy()
    mp = n * n / 1e6
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, 'img.raw')
        img.tofile(raw)

        def ours(op):
            out = subprocess.run([a.bench, op, raw, str(n), str(n), str(a.runs)], check=True, capture_output=True, text=True)
            return float(out.stdout.strip())

        def sobel():
            f = img.astype(np.float32)
            gx = cv2.Sobel(f, cv2.CV_32F, 1, 0, ksize=3)
            gy = cv2.Sobel(f, cv2.CV_32F, 0, 1, ksize=3)
            return cv2.magnitude(gx, gy)

        def canny():
            return cv2.Canny(cv2.GaussianBlur(img, (11, 11), 1.4), 40, 100, L2gradient=True)

        rows = [
            ('GaussianBlur sigma 2 (13 taps)', ours('gaussian:2'), median(lambda: cv2.GaussianBlur(img, (13, 13), 2.0), a.runs)),
            ('Sobel x+y, L2 magnitude', ours('sobel'), median(sobel, a.runs)),
            ('Gaussian sigma 1.4 + Canny (40, 100)', ours('canny:1.4:40:100'), median(canny, a.runs)),
        ]
    print('# %dx%d 8-bit, %d cores, OpenCV %s' % (n, n, os.cpu_count(), cv2.__version__))
    print('| op | Tilewave | OpenCV | Tilewave / OpenCV speed |')
    print('| --- | --- | --- | --- |')
    for name, t, c in rows:
        print('| %s | %.0f MP/s (%.3f s) | %.0f MP/s (%.3f s) | %.2f |' % (name, mp / t, t, mp / c, c, c / t))


if __name__ == '__main__':
    main()
