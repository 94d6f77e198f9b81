"""Label images (and intensity images) for tests/jobs/features_test.cpp.

usage: features_inputs.py KIND OUT_DIR

KIND: ihc       scikit-image's immunohistochemistry image, hematoxylin (rgb2hed)
                thresholded, holes filled, labelled by scipy (raster order)
      ellipses  touching random ellipses with random labels, crossing small tiles
      worst     single pixels, lines, diagonal chains, rings with pinches, an
                island in a hole, pieces side by side, objects on the borders
      big       3072 x 3072 tiled ellipses (36 MB of u32 labels)
      gap       one label in two pieces with empty rows between them
      sparse    the ellipses labelled with sparse values up to 2^32 - 1 (also
                dense.tif: the same objects numbered 1..N in the values'
                order, map.csv: dense,sparse; gap.tif: label 2^32 - 1 in two
                pieces with empty rows between them, after others)
Writes OUT_DIR/labels.tif (u32, tiled 16 x 16, deflate) and, for ihc and
ellipses, OUT_DIR/rgb.tif (u8 RGB) and OUT_DIR/gray16.tif (u16).
"""
import sys

import numpy as np
import tifffile
from scipy import ndimage as ndi


def ellipses(h, w, n, seed):
    rng = np.random.default_rng(seed)
    lab = np.zeros((h, w), np.uint32)
    yy, xx = np.mgrid[0:h, 0:w]
    values = rng.permutation(np.arange(1, 4 * n + 1))[:n]  # not in raster order
    for k in range(n):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        a, b = rng.uniform(2, 14), rng.uniform(1.5, 9)
        t = rng.uniform(0, np.pi)
        u = (xx - cx) * np.cos(t) + (yy - cy) * np.sin(t)
        v = -(xx - cx) * np.sin(t) + (yy - cy) * np.cos(t)
        lab[(u / a) ** 2 + (v / b) ** 2 <= 1] = values[k]  # later ones overlap (touch) earlier ones
    # Keep each label's largest 8-connected piece so every label is one object
    # whose rows are contiguous (a label cut in two by a later ellipse keeps its
    # bigger part).
    out = np.zeros_like(lab)
    for v in np.unique(lab)[1:]:
        pieces, m = ndi.label(lab == v, structure=np.ones((3, 3)))
        if m > 1:
            sizes = ndi.sum(np.ones_like(pieces), pieces, range(1, m + 1))
            out[pieces == 1 + int(np.argmax(sizes))] = v
        else:
            out[pieces == 1] = v
    return out


def worst():
    lab = np.zeros((80, 96), np.uint32)
    lab[0, 0] = 1                                   # a single pixel in the corner
    lab[2, 3:23] = 2                                # a 1 x 20 line
    lab[0:31, 30] = 3                               # a vertical line from the top edge
    for i in range(8):
        lab[4 + i, 40 + i] = 4                      # a diagonal chain: 8 pieces meeting at corners
    lab[40:52, 2:14] = 5                            # a ring ...
    lab[42:50, 4:12] = 0
    lab[41, 3] = 0                                  # ... whose hole meets the outside at a pinch
    lab[40, 2] = 0
    lab[40:41, 3] = 0
    lab[55:75, 20:40] = 6                           # a square with a hole holding an island
    lab[59:71, 24:36] = 0
    lab[63:67, 28:32] = 6
    lab[70:80, 80:96] = 7                           # the bottom-right corner of the image
    lab[20:30, 60:64] = 8                           # two pieces side by side in the same rows
    lab[22:28, 70:75] = 8
    lab[10:20, 50:58] = 9                           # a hole touching the outline at a corner
    lab[12:18, 52:56] = 0
    lab[11, 51] = 0
    lab[10, 50] = 0
    lab[10, 51] = 0
    lab[11, 50] = 0
    lab[12, 52] = 9
    lab[30:36, 80:86] = 10                          # labels touching each other
    lab[30:36, 86:90] = 11
    lab[36:40, 80:90] = 12
    lab[44:60, 60:62] = 13                          # 2-pixel-wide bars, checkerboard of two labels
    cb = (np.add.outer(np.arange(8), np.arange(8)) % 2).astype(np.uint32)
    lab[60:68, 44:52] = np.where(cb == 1, 14, 15)
    return lab


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(7)
    rgb = None
    if kind == "ihc":
        from skimage import color, data
        rgb = data.immunohistochemistry()
        h = color.rgb2hed(rgb)[..., 0]
        lab, _ = ndi.label(ndi.binary_fill_holes(h > 0.05))
        lab = lab.astype(np.uint32)
    elif kind == "ellipses":
        lab = ellipses(203, 157, 90, 3)
        rgb = rng.integers(0, 256, (203, 157, 3), dtype=np.uint8)
    elif kind == "worst":
        lab = worst()
    elif kind == "big":
        tile = ellipses(384, 384, 400, 5)
        reps = 8
        lab = np.zeros((384 * reps, 384 * reps), np.uint32)
        for i in range(reps):
            for j in range(reps):
                t = tile.copy()
                t[t > 0] += np.uint32((i * reps + j) * 2000)
                lab[i * 384:(i + 1) * 384, j * 384:(j + 1) * 384] = t
    elif kind == "gap":
        lab = np.zeros((40, 40), np.uint32)
        lab[2:6, 2:6] = 1
        lab[20:24, 2:6] = 1
    elif kind == "sparse":
        dense = ellipses(203, 157, 90, 3)
        dense = np.searchsorted(np.unique(dense), dense).astype(np.uint32)  # 1..N, 0 stays 0
        n = int(dense.max())
        fixed = [2**32 - 1, 2**31, 7, 1000003]
        others = [int(v) for v in np.unique(rng.integers(8, 2**32 - 1, 4 * n)) if v not in fixed]
        others = [int(v) for v in rng.permutation(others)[:n - len(fixed)]]
        values = np.array([0] + sorted(fixed + others), np.int64)
        lab = values[dense].astype(np.uint32)
        rgb = rng.integers(0, 256, dense.shape + (3,), dtype=np.uint8)
        tifffile.imwrite(out + "/dense.tif", dense, tile=(16, 16), compression="zlib")
        with open(out + "/map.csv", "w") as f:
            for d in range(1, n + 1):
                f.write("%d,%d\n" % (d, values[d]))
        gap = np.zeros((40, 40), np.uint32)
        gap[2:6, 2:6] = 7
        gap[10:14, 2:6] = 2**32 - 1
        gap[25:29, 2:6] = 2**32 - 1
        tifffile.imwrite(out + "/gap.tif", gap, tile=(16, 16))
    else:
        raise SystemExit("unknown kind " + kind)
    tifffile.imwrite(out + "/labels.tif", lab, tile=(16, 16), compression="zlib")
    if rgb is not None:
        tifffile.imwrite(out + "/rgb.tif", rgb, tile=(16, 16), photometric="rgb")
        gray = (rgb[..., 0].astype(np.uint16) * 257 + rng.integers(0, 200, rgb.shape[:2])).astype(np.uint16)
        tifffile.imwrite(out + "/gray16.tif", gray, tile=(16, 16))


if __name__ == "__main__":
    main()
