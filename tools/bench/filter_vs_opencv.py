#!/usr/bin/python3
"""Side-by-side benchmark of Tilewave's CPU filters against OpenCV, in one
run, on the same cores and the same 8-bit image (scikit-image's camera
picture tiled to SIZE x SIZE, so there is real content with edges).

  tools/bench/filter_vs_opencv.py [--size 8192] [--runs 7] [--bench build/tools/filter_cpu_bench]

OpenCV runs with cv2.setNumThreads(os.cpu_count()); Tilewave's filters run
through the op API in bands of 256 full-width rows (as the pyramid writer
reads them), no file I/O on either side. Canny: Tilewave's smoothing is its
own Gaussian (float, rounded) and OpenCV's is GaussianBlur on the 8-bit image
with the same sigma and kernel size; both then run Canny (L2 gradient).
The two alternate run by run. Prints a Markdown table of MP/s (medians) and
the ratio.
"""
import argparse
import os
import subprocess
import tempfile
import time

import cv2
import numpy as np
from skimage import data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', type=int, default=8192)
    ap.add_argument('--runs', type=int, default=7)
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

        def ours_once(op):
            out = subprocess.run([a.bench, op, raw, str(n), str(n), '1'], check=True, capture_output=True, text=True)
            return float(out.stdout.strip())

        # OpenCV writes into arrays allocated once (dst=), and Sobel starts
        # from a float32 copy made once: neither side pays for fresh pages.
        f32 = img.astype(np.float32)
        gx, gy, mag = (np.empty_like(f32) for _ in range(3))
        blur, edges = np.empty_like(img), np.empty_like(img)

        def gaussian():
            cv2.GaussianBlur(img, (13, 13), 2.0, dst=blur)

        def sobel():
            cv2.Sobel(f32, cv2.CV_32F, 1, 0, dst=gx, ksize=3)
            cv2.Sobel(f32, cv2.CV_32F, 0, 1, dst=gy, ksize=3)
            cv2.magnitude(gx, gy, magnitude=mag)

        def canny():
            cv2.GaussianBlur(img, (11, 11), 1.4, dst=blur)
            cv2.Canny(blur, 40, 100, edges=edges, L2gradient=True)

        def side_by_side(op, peer):
            # Alternate the two, one run each, so that both see the same
            # machine; medians of each.
            peer()
            mine, theirs = [], []
            for _ in range(a.runs):
                mine.append(ours_once(op))
                t = time.perf_counter()
                peer()
                theirs.append(time.perf_counter() - t)
            return sorted(mine)[len(mine) // 2], sorted(theirs)[len(theirs) // 2]

        rows = [
            ('GaussianBlur sigma 2 (13 taps)', *side_by_side('gaussian:2', gaussian)),
            ('Sobel x+y, L2 magnitude', *side_by_side('sobel', sobel)),
            ('Gaussian sigma 1.4 + Canny (40, 100)', *side_by_side('canny:1.4:40:100', canny)),
        ]
    print('# %dx%d 8-bit, %d cores, OpenCV %s' % (n, n, os.cpu_count(), cv2.__version__))
    print('| op | Tilewave | OpenCV | Tilewave / OpenCV speed |')
    print('| --- | --- | --- | --- |')
    for name, t, c in rows:
        print('| %s | %.0f MP/s (%.3f s) | %.0f MP/s (%.3f s) | %.2f |' % (name, mp / t, t, mp / c, c, c / t))


if __name__ == '__main__':
    main()
