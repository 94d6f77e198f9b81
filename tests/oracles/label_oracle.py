"""Oracles of the label and objects tests (scipy / scikit-image).

  label_oracle.py label IN.npy CONN OUT.npy           scipy.ndimage.label (4: cross, 8: square), uint32;
                                                      checked equal to skimage.measure.label first
  label_oracle.py ihc_mask OUT.npy                    scikit-image's IHC image: hematoxylin (rgb2hed) above Otsu, 0/255
  label_oracle.py nuclei_mask W H SEED OUT.npy        ellipses of nuclei size, some touching, some with holes, 0/255
  label_oracle.py objects IN.npy CONN MIN MAX BORDER FILL OUT.npy
      labels (IN: uint32 labels, or a 0/255 mask labelled with CONN): holes filled per object
      (background components of the other connectivity, off the border, around one object only: as
      scipy.ndimage.binary_fill_holes of that object alone), objects with area < MIN or > MAX removed,
      BORDER=1: those touching the border removed (by value; equal to skimage.segmentation.clear_border
      where objects are connected), the rest
      renumbered in raster order of first pixels; checked against skimage's remove_small_objects +
      label where those apply.
"""
import sys

import numpy as np
from scipy import ndimage


def structure(conn):
    return ndimage.generate_binary_structure(2, 1 if conn == 4 else 2)


def label(mask, conn):
    from skimage import measure
    out, _ = ndimage.label(mask != 0, structure=structure(conn))
    sk = measure.label(mask != 0, connectivity=1 if conn == 4 else 2)
    assert np.array_equal(out, sk), 'scipy and scikit-image disagree'
    return out.astype(np.uint32)


def renumber(lab):
    flat = lab.ravel()
    _, first = np.unique(flat, return_index=True)
    vals = flat[np.sort(first)]
    vals = vals[vals != 0]
    table = np.zeros(int(lab.max()) + 1, np.uint32)
    table[vals] = np.arange(1, len(vals) + 1, dtype=np.uint32)
    return table[lab]


def objects(lab, conn, mn, mx, border, fill, connected):
    from skimage import morphology, segmentation
    # Label values may be anywhere in 1..2^32 - 1: made dense, 0 kept 0.
    vals = np.unique(np.concatenate([[0], lab.ravel()]))
    lab = np.searchsorted(vals, lab).astype(np.int64)
    h, w = lab.shape
    if fill:
        for v in np.unique(lab[lab != 0]):
            obj = lab == v
            # binary_fill_holes of this object alone (background of the other
            # connectivity); a hole is filled only if nothing but background is in it.
            filled = ndimage.binary_fill_holes(obj, structure=structure(12 - conn))
            holes, n = ndimage.label(filled & ~obj, structure=structure(12 - conn))
            for k in range(1, n + 1):
                reg = holes == k
                if np.all(lab[reg] == 0):
                    lab[reg] = v
    areas = np.bincount(lab.ravel())
    keep = (areas >= mn) & (areas <= mx)
    keep[0] = False
    out = np.where(keep[lab], lab, 0)
    if border:
        # By label value: an object is all pixels of its value. clear_border
        # clears connected regions, the same where objects are connected.
        edge = np.unique(np.concatenate([out[0], out[-1], out[:, 0], out[:, -1]]))
        cleared = np.where(np.isin(out, edge), 0, out)
        if connected:
            assert np.array_equal(cleared, segmentation.clear_border(out)), 'clear_border disagrees'
        out = cleared
    if not fill and mx >= areas.max() and not border and lab.max() > 0:
        ref = morphology.remove_small_objects(lab, min_size=int(np.ceil(mn)))
        assert np.array_equal(ref, out), 'remove_small_objects disagrees'
    return renumber(out)


def main():
    op = sys.argv[1]
    if op == 'label':
        np.save(sys.argv[4], label(np.load(sys.argv[2]), int(sys.argv[3])))
    elif op == 'ihc_mask':
        from skimage import color, data, filters
        hema = color.rgb2hed(data.immunohistochemistry())[:, :, 0]
        np.save(sys.argv[2], ((hema > filters.threshold_otsu(hema)) * 255).astype(np.uint8))
    elif op == 'nuclei_mask':
        w, h, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:h, 0:w]
        m = np.zeros((h, w), bool)
        for _ in range(w * h // 400):
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            a, b, t = rng.uniform(3, 9), rng.uniform(3, 9), rng.uniform(0, np.pi)
            x0, x1 = int(max(0, cx - 10)), int(min(w, cx + 11))
            y0, y1 = int(max(0, cy - 10)), int(min(h, cy + 11))
            dx, dy = xx[y0:y1, x0:x1] - cx, yy[y0:y1, x0:x1] - cy
            u, v = dx * np.cos(t) + dy * np.sin(t), -dx * np.sin(t) + dy * np.cos(t)
            r = (u / a) ** 2 + (v / b) ** 2
            ring = rng.random() < 0.2
            m[y0:y1, x0:x1] |= (r <= 1) & ~(ring & (r < 0.2))
        np.save(sys.argv[5], (m * 255).astype(np.uint8))
    elif op == 'objects':
        a = np.load(sys.argv[2])
        conn = int(sys.argv[3])
        connected = a.dtype != np.uint32
        lab = label(a, conn).astype(np.int64) if connected else a.astype(np.int64)
        out = objects(lab, conn, float(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == '1', sys.argv[7] == '1',
                      connected)
        np.save(sys.argv[8], out.astype(np.uint32))
    else:
        sys.exit('unknown op ' + op)


if __name__ == '__main__':
    main()
