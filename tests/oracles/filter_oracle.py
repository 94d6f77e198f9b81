#!/usr/bin/python3
"""OpenCV / scikit-image references for `tilewave filter` and `stats`.

usage:
  filter_oracle.py image NAME OUT.npy                 (skimage.data: ihc (RGB), camera, coins, astronaut (RGB))
  filter_oracle.py gaussian IN.npy SIGMA OUT.npy      (GaussianBlur on a float32 copy, REFLECT_101, rounded half up)
  filter_oracle.py sobel IN.npy OUT.npy               (Sobel 3x3 32F, magnitude, rounded half up, clipped)
  filter_oracle.py canny SMOOTHED.npy LOW HIGH OUT.npy (cv2.Canny(..., L2gradient=True) on the given 8-bit image)
  filter_oracle.py gray IN.npy OUT.npy                (cvtColor RGB2GRAY)
  filter_oracle.py hed IN.npy OUT.npy                 (skimage.color.rgb2hed, float32)
  filter_oracle.py otsu IN.npy OUT.txt                (cv2.threshold(..., THRESH_OTSU) value)
  filter_oracle.py otsu_nonzero IN.npy OUT.txt        (the same of the non-zero pixels only)
"""
import sys

import cv2
import numpy as np


def half_up(a):
    return np.clip(np.floor(a + 0.5), 0, 255).astype(np.uint8)


def main():
    op = sys.argv[1]
    if op == 'image':
        from skimage import data
        img = getattr(data, {'ihc': 'immunohistochemistry'}.get(sys.argv[2], sys.argv[2]))()
        np.save(sys.argv[3], np.ascontiguousarray(img.astype(np.uint8)))
    elif op == 'gaussian':
        a, s = np.load(sys.argv[2]), float(sys.argv[3])
        k = 2 * int(np.ceil(3 * s)) + 1
        out = cv2.GaussianBlur(a.astype(np.float32), (k, k), s, sigmaY=s, borderType=cv2.BORDER_REFLECT_101)
        np.save(sys.argv[4], half_up(out))
    elif op == 'sobel':
        a = np.load(sys.argv[2]).astype(np.float32)
        gx = cv2.Sobel(a, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        gy = cv2.Sobel(a, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        np.save(sys.argv[3], half_up(cv2.magnitude(gx, gy)))
    elif op == 'canny':
        a = np.load(sys.argv[2])
        np.save(sys.argv[5], cv2.Canny(a, float(sys.argv[3]), float(sys.argv[4]), L2gradient=True))
    elif op == 'gray':
        np.save(sys.argv[3], cv2.cvtColor(np.load(sys.argv[2]), cv2.COLOR_RGB2GRAY))
    elif op == 'hed':
        from skimage.color import rgb2hed
        np.save(sys.argv[3], rgb2hed(np.load(sys.argv[2])).astype(np.float32))
    elif op == 'otsu':
        t, _ = cv2.threshold(np.load(sys.argv[2]), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
        open(sys.argv[3], 'w').write('%d\n' % int(t))
    elif op == 'otsu_nonzero':
        a = np.load(sys.argv[2])
        t, _ = cv2.threshold(a[a != 0].reshape(1, -1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
        open(sys.argv[3], 'w').write('%d\n' % int(t))
    else:
        sys.exit('unknown op ' + op)


if __name__ == '__main__':
    main()
