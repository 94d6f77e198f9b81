#!/usr/bin/python3
"""A slide of real tissue: scikit-image's immunohistochemistry sample (512x512
RGB, colonic glands, DAB for FHL2 with hematoxylin counterstain, from the
Human Protein Atlas; Debian ships it with scikit-image) repeated N x N times,
mirrored so that the seams continue the content, written like synth_he.py's
slides (tiled JPEG, resolution tags). No ground truth: for checking that a
pipeline runs on real staining and for timing.

  tools/nuclei/real_ihc_slide.py OUT.tif [--repeat 8] [--mpp 0.5] [--tile 256] [--jpeg 85]

The image carries no resolution; its nuclei (about 12-20 px across) fit
0.5 um/px, the default.
"""
import argparse
import sys

import numpy as np
from skimage import data

import tiffio


def mirrored(img, n):
    """Block (i, j) is img flipped left-right when j is odd and upside down when i is odd."""
    h, w = img.shape[:2]
    out = np.empty((h * n, w * n) + img.shape[2:], img.dtype)
    for i in range(n):
        for j in range(n):
            b = img[::-1] if i % 2 else img
            out[i * h:(i + 1) * h, j * w:(j + 1) * w] = b[:, ::-1] if j % 2 else b
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('out')
    ap.add_argument('--repeat', type=int, default=8, help='N: an N x N mosaic (8 -> 4096 x 4096)')
    ap.add_argument('--mpp', type=float, default=0.5)
    ap.add_argument('--tile', type=int, default=256)
    ap.add_argument('--jpeg', type=int, default=85)
    a = ap.parse_args()
    if not 1 <= a.repeat <= 64:
        ap.error('--repeat must lie in [1, 64]')
    if a.tile <= 0 or a.tile % 16:
        ap.error('--tile must be a positive multiple of 16')
    img = data.immunohistochemistry()
    h, w = img.shape[0] * a.repeat, img.shape[1] * a.repeat
    t = a.tile
    band_h = img.shape[0]  # memory: one mosaic row of blocks, not the slide

    def block_row(bi):
        blk = img[::-1] if bi % 2 else img
        return np.concatenate([blk[:, ::-1] if j % 2 else blk for j in range(a.repeat)], axis=1)

    def tiles():
        cache = {}
        for y in range(0, h, t):
            band = []
            for bi in range(y // band_h, (min(y + t, h) - 1) // band_h + 1):  # rows may span two block rows
                if bi not in cache:
                    cache = {bi: block_row(bi)}  # keep one mosaic row (the previous is done)
                r = cache[bi]
                band.append(r[max(y, bi * band_h) - bi * band_h:min(y + t, h, (bi + 1) * band_h) - bi * band_h])
            band = np.concatenate(band, axis=0)
            for x in range(0, w, t):
                tile = np.zeros((t, t, 3), np.uint8)
                p = band[:, x:x + t]
                tile[:p.shape[0], :p.shape[1]] = p
                yield tile

    tiffio.write_tiled(a.out, (h, w, 3), np.uint8, tiles(), tile=t, jpeg=a.jpeg, mpp=a.mpp,
                       description=f'skimage.data.immunohistochemistry mirrored {a.repeat}x{a.repeat} |MPP = {a.mpp}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
