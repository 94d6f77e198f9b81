#!/usr/bin/env python3
"""Inputs and scikit-image's results for tests/jobs/watershed_test.cpp.

  discs W H SEED CONN OUTDIR     touching discs: OUTDIR/{image,markers,mask,ws}.npy
                                 (image = -EDT f32, markers = labelled h-maxima of the
                                 EDT, mask = the discs, ws = skimage's watershed; none
                                 for CONN 0)
  gradient W H SEED CONN OUTDIR  a noisy gradient (u8) of blurred blobs, markers at the
                                 blobs' centres and in the background, no mask
  ws IMAGE MARKERS MASK|- CONN OUT   skimage's watershed of given arrays
"""
import os
import sys

import numpy as np
from scipy import ndimage as ndi
from skimage.measure import label
from skimage.morphology import h_maxima
from skimage.segmentation import watershed


def ws(image, markers, mask, conn):
    # connectivity 1: 4-neighbours, 2: 8-neighbours.
    out = watershed(image, markers.astype(np.int64), mask=mask, connectivity=1 if conn == 4 else 2)
    return out.astype(np.uint32)


def discs(w, h, seed, conn, outdir):
    rng = np.random.default_rng(seed)
    mask = np.zeros((h, w), bool)
    # Nuclei-sized discs in clusters, so that many touch and overlap.
    n = max(1, w * h // 900)
    for _ in range(n):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        for _ in range(rng.integers(1, 4)):
            r = rng.uniform(5, 13)
            ox, oy = cx + rng.uniform(-1.4, 1.4) * r, cy + rng.uniform(-1.4, 1.4) * r
            x0, x1 = max(0, int(ox - r)), min(w, int(ox + r) + 2)
            y0, y1 = max(0, int(oy - r)), min(h, int(oy + r) + 2)
            if x0 >= x1 or y0 >= y1:
                continue
            yy, xx = np.mgrid[y0:y1, x0:x1]
            mask[y0:y1, x0:x1] |= (xx - ox) ** 2 + (yy - oy) ** 2 <= r * r
    dist = ndi.distance_transform_edt(mask).astype(np.float32)
    markers = label(h_maxima(dist, 1.0), connectivity=2).astype(np.uint32)
    image = -dist
    np.save(os.path.join(outdir, "image.npy"), image)
    np.save(os.path.join(outdir, "markers.npy"), markers)
    np.save(os.path.join(outdir, "mask.npy"), mask.astype(np.uint8) * 255)
    if conn:  # 0: the inputs only
        np.save(os.path.join(outdir, "ws.npy"), ws(image, markers, mask, conn))


def gradient(w, h, seed, conn, outdir):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w))
    markers = np.zeros((h, w), np.uint32)
    k = 1
    for _ in range(max(1, w * h // 1200)):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(6, 14)
        img[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = 1
        ix, iy = int(cx), int(cy)
        if 0 <= ix < w and 0 <= iy < h and markers[iy, ix] == 0:
            markers[max(0, iy - 1):iy + 2, max(0, ix - 1):ix + 2] = k
            k += 1
    img = ndi.gaussian_filter(img, 2.0)
    grad = np.hypot(ndi.sobel(img, 0), ndi.sobel(img, 1))
    grad = grad / max(grad.max(), 1e-9) * 200 + rng.normal(0, 6, (h, w))
    image = np.clip(grad, 0, 255).astype(np.uint8)
    # Background markers: where the blurred image is near zero, a few seeds.
    for _ in range(6):
        ix, iy = int(rng.uniform(0, w)), int(rng.uniform(0, h))
        if img[iy, ix] < 0.01 and markers[iy, ix] == 0:
            markers[iy, ix] = k
            k += 1
    np.save(os.path.join(outdir, "image.npy"), image)
    np.save(os.path.join(outdir, "markers.npy"), markers)
    np.save(os.path.join(outdir, "ws.npy"), ws(image, markers, None, conn))


def main():
    cmd = sys.argv[1]
    if cmd in ("discs", "gradient"):
        w, h, seed, conn = (int(v) for v in sys.argv[2:6])
        (discs if cmd == "discs" else gradient)(w, h, seed, conn, sys.argv[6])
    elif cmd == "ws":
        image, markers = np.load(sys.argv[2]), np.load(sys.argv[3])
        mask = None if sys.argv[4] == "-" else np.load(sys.argv[4]) != 0
        np.save(sys.argv[6], ws(image, markers, mask, int(sys.argv[5])))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
