#!/usr/bin/python3
"""scikit-image / scipy references for the wavefront ops.

usage:
  morph_oracle.py reconstruct SEED.npy MASK.npy dilation|erosion 4|8 OUT.npy
  morph_oracle.py fill_holes IN.npy 4|8 OUT.npy            (binary: nonzero = foreground)
  morph_oracle.py edt IN.npy THRESHOLD OUT.npy             (float32 distances of pixels > THRESHOLD)
  morph_oracle.py ihc OUT_GRAY.npy                          (scikit-image's IHC image, DAB channel, uint8)
  morph_oracle.py edt_pattern NAME SIZE IN.npy REF.npy      (the seed's EDT test patterns: 0 = background)
"""
import sys

import numpy as np
from scipy import ndimage


def main():
    op = sys.argv[1]
    if op == 'reconstruct':
        from skimage.morphology import reconstruction
        seed, mask = np.load(sys.argv[2]), np.load(sys.argv[3])
        fp = np.ones((3, 3), bool) if sys.argv[5] == '8' else ndimage.generate_binary_structure(2, 1)
        out = reconstruction(seed, mask, method=sys.argv[4], footprint=fp)
        np.save(sys.argv[6], out.astype(mask.dtype))
    elif op == 'fill_holes':
        a = np.load(sys.argv[2]) != 0
        st = ndimage.generate_binary_structure(2, 1 if sys.argv[3] == '4' else 2)
        np.save(sys.argv[4], (ndimage.binary_fill_holes(a, structure=st) * 255).astype(np.uint8))
    elif op == 'edt':
        a = np.load(sys.argv[2])
        if a.ndim == 3:
            a = a[..., 0]
        fg = a > float(sys.argv[3])
        np.save(sys.argv[4], ndimage.distance_transform_edt(fg).astype(np.float32))
    elif op == 'edt_pattern':
        name, n = sys.argv[2], int(sys.argv[3])
        yy, xx = np.mgrid[0:n, 0:n]
        bg = np.zeros((n, n), bool)
        if name == 'random':
            bg = np.random.default_rng(5).random((n, n)) < 0.0005
        elif name == 'circles16':
            for cy in range(4):
                for cx in range(4):
                    y0, x0 = (cy + 0.5) * n / 4, (cx + 0.5) * n / 4
                    r = np.hypot(yy - y0, xx - x0)
                    bg |= np.abs(r - n / 12) < 0.75
        elif name == 'big_circle':  # centred on the middle of the bottom edge, radius half the width
            bg = np.abs(np.hypot(yy - (n - 1), xx - n / 2) - n / 2) < 0.75
        elif name == 'squares_on_corners':
            s = n // 8
            bg[:s, :s] = bg[:s, -s:] = bg[-s:, :s] = bg[-s:, -s:] = True
        elif name == 'diagonal':
            bg = yy == xx
        elif name == 'x':
            bg = (yy == xx) | (yy == n - 1 - xx)
        elif name == 'central_circle':
            bg = np.abs(np.hypot(yy - n / 2, xx - n / 2) - n / 4) < 0.75
        else:
            sys.exit('unknown pattern ' + name)
        img = np.where(bg, 0, 255).astype(np.uint8)
        np.save(sys.argv[4], img)
        np.save(sys.argv[5], ndimage.distance_transform_edt(img > 0).astype(np.float32))
    elif op == 'ihc':
        from skimage import data
        np.save(sys.argv[2], np.ascontiguousarray(data.immunohistochemistry()[:, :, 2]))
    else:
        sys.exit('unknown op ' + op)


if __name__ == '__main__':
    main()
