#!/usr/bin/python3
"""scikit-image / scipy / OpenCV references for filter erode|dilate.

usage:
  morphology_oracle.py image NAME OUT.npy
      camera, coins, moon (uint8 gray), astronaut (uint8 RGB), camera16 (uint16:
      camera * 256 plus random low bytes)
  morphology_oracle.py morph IN.npy CASES OUT_PREFIX
      CASES: comma-separated OP:SHAPE:R:LIB, OP erosion|dilation, SHAPE disk|square,
      LIB skimage (morphology.erosion/dilation), nearest (scipy.ndimage.grey_* with
      mode='nearest') or cv2 (cv2.erode/dilate, default border: outside pixels
      ignored); writes OUT_PREFIX<k>.npy for the k-th case. RGB: channel by channel.
  morphology_oracle.py tophat R IN.npy OUT.npy
      I - reconstruction(erosion(I, disk(R)), I): white top-hat by reconstruction.
"""
import sys

import numpy as np
from scipy import ndimage
from skimage import data, morphology


def footprint(shape, r):
    if shape == 'disk':
        return morphology.disk(r).astype(bool)
    w = 2 * r + 1
    if hasattr(morphology, 'footprint_rectangle'):
        return morphology.footprint_rectangle((w, w)).astype(bool)
    return morphology.square(w).astype(bool)


def morph2d(img, op, fp, lib):
    if lib == 'skimage':
        f = morphology.erosion if op == 'erosion' else morphology.dilation
        return f(img, fp)
    if lib == 'nearest':
        f = ndimage.grey_erosion if op == 'erosion' else ndimage.grey_dilation
        return f(img, footprint=fp, mode='nearest')
    if lib == 'cv2':
        import cv2
        f = cv2.erode if op == 'erosion' else cv2.dilate
        return f(img, fp.astype(np.uint8))
    raise SystemExit('unknown lib ' + lib)


def image(name):
    if name == 'camera16':
        rng = np.random.default_rng(16)
        return data.camera().astype(np.uint16) * 256 + rng.integers(0, 256, (512, 512), dtype=np.uint16)
    return getattr(data, name)()


def main():
    what = sys.argv[1]
    if what == 'image':
        np.save(sys.argv[3], np.ascontiguousarray(image(sys.argv[2])))
    elif what == 'morph':
        img = np.load(sys.argv[2])
        for k, case in enumerate(sys.argv[3].split(',')):
            op, shape, r, lib = case.split(':')
            fp = footprint(shape, int(r))
            if img.ndim == 3:
                out = np.stack([morph2d(np.ascontiguousarray(img[..., c]), op, fp, lib) for c in range(img.shape[2])],
                               axis=2)
            else:
                out = morph2d(img, op, fp, lib)
            np.save(sys.argv[4] + str(k) + '.npy', np.ascontiguousarray(out.astype(img.dtype)))
    elif what == 'tophat':
        r = int(sys.argv[2])
        img = np.load(sys.argv[3])
        opened = morphology.reconstruction(morphology.erosion(img, morphology.disk(r)), img, method='dilation')
        np.save(sys.argv[4], (img - opened.astype(img.dtype)).astype(img.dtype))
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main()
