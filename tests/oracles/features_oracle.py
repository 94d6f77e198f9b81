"""scikit-image's regionprops of a label image, as the CSV `tilewave features` writes.

usage: features_oracle.py LABELS.tif OUT.csv [INTENSITY.tif]

The reference for tests/jobs/features_test.cpp: every value comes from
skimage.measure.regionprops (and numpy over each region's pixels for the
intensity std, which this scikit-image has no property for; hematoxylin from
skimage.color.rgb2hed), never from Tilewave.
"""
import sys

import numpy as np
import tifffile
from skimage import color, measure


def main():
    labels = tifffile.imread(sys.argv[1])
    intensity = tifffile.imread(sys.argv[3]) if len(sys.argv) > 3 else None
    channels = []
    if intensity is not None:
        planes = intensity[..., None] if intensity.ndim == 2 else intensity
        names = ["intensity"] if planes.shape[2] == 1 else ["red", "green", "blue"] if planes.shape[2] == 3 else [
            "channel%d" % c for c in range(planes.shape[2])]
        channels = [(n, planes[..., c].astype(np.float64)) for c, n in enumerate(names)]
        if intensity.dtype == np.uint8 and planes.shape[2] == 3:
            channels.append(("hematoxylin", color.rgb2hed(intensity)[..., 0]))
    cols = ["label", "area", "centroid_x", "centroid_y", "bbox_x0", "bbox_y0", "bbox_x1", "bbox_y1", "perimeter",
            "equivalent_diameter", "major_axis_length", "minor_axis_length", "orientation", "eccentricity",
            "area_convex", "solidity"]
    for n, _ in channels:
        cols += [n + "_mean", n + "_std"]
    with open(sys.argv[2], "w") as f:
        f.write(",".join(cols) + "\n")
        for r in measure.regionprops(labels):
            minr, minc, maxr, maxc = r.bbox
            v = [r.label, int(r.area), r.centroid[1], r.centroid[0], minc, minr, maxc, maxr,
                 measure.perimeter(r.image, 4), r.equivalent_diameter, r.major_axis_length, r.minor_axis_length,
                 r.orientation, r.eccentricity, int(r.area_convex), r.solidity]
            sl = r.slice
            for _, plane in channels:
                vals = plane[sl][r.image]
                v += [vals.mean(), vals.std()]
            f.write(",".join(repr(float(x)) if isinstance(x, float) else str(x) for x in v) + "\n")


if __name__ == "__main__":
    main()
