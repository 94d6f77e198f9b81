#!/usr/bin/python3
"""Burt-Adelson REDUCE with scipy, as the independent reference.

usage: reduce_oracle.py IN.npy OUT.npy [LEVELS]
       reduce_oracle.py --ihc IN.npy OUT.npy   (input = scikit-image's IHC image, saved to IN.npy)

Each level: correlate with [1 4 6 4 1] along both axes in float64 (exact for
integers), mode='mirror' (reflect without repeating the edge), keep even
coordinates, round as (s + 128) >> 8.
"""
import sys
import numpy as np
from scipy import ndimage


def reduce_once(a):
    w = np.array([1, 4, 6, 4, 1], dtype=np.float64)
    s = a.astype(np.float64)
    s = ndimage.correlate1d(s, w, axis=0, mode='mirror')
    s = ndimage.correlate1d(s, w, axis=1, mode='mirror')
    s = s[::2, ::2]
    out = (s.astype(np.int64) + 128) >> 8
    return out.astype(a.dtype)


def main():
    args = sys.argv[1:]
    if args[0] == '--ihc':
        from skimage import data
        img = data.immunohistochemistry()[:509, :511]  # odd sizes on purpose
        np.save(args[1], np.ascontiguousarray(img))
        args = args[1:]
    a = np.load(args[0])
    levels = int(args[2]) if len(args) > 2 else 1
    for _ in range(levels):
        a = reduce_once(a)
    np.save(args[1], np.ascontiguousarray(a))


if __name__ == '__main__':
    main()
