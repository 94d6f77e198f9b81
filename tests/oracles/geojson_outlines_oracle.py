#!/usr/bin/python3
"""Independent check of `tilewave serve`'s outline tiles drawn from a GeoJSON
overlay (tests/tools/serve_test.cpp).

usage: geojson_outlines_oracle.py FILE.geojson TILEDIR WIDTH HEIGHT TILE OVERLAP R,G,B

TILEDIR holds every overlay tile the server gave, as LEVEL/COL_ROW.png. The
expectation, computed here with Python's json and scikit-image: at Deep Zoom
level L (k = max_level - L halvings), every ring of every Polygon and
MultiPolygon (outer rings and holes alike) is drawn edge by edge with
skimage.draw.line between its consecutive vertices mapped to the pixels
(floor(x / 2^k), floor(y / 2^k)); pixels outside the level are dropped. A
tile must be exactly R,G,B with alpha 255 on those pixels and alpha 0
elsewhere. Prints a JSON summary; exit 1 with the first mismatch.
"""
import json
import math
import sys

import numpy as np
from PIL import Image
from skimage.draw import line


def dzi_levels(w, h):
    sizes = [(w, h)]
    while w > 1 or h > 1:
        w, h = (w + 1) // 2, (h + 1) // 2
        sizes.append((w, h))
    return sizes[::-1]  # level 0 is 1x1


def rings(doc):
    features = doc['features'] if isinstance(doc, dict) else doc
    for f in features:
        g = f['geometry']
        polys = [g['coordinates']] if g['type'] == 'Polygon' else g['coordinates']
        for p in polys:
            for ring in p:
                yield ring


def main():
    path, tiledir = sys.argv[1], sys.argv[2]
    w, h, t, o = (int(v) for v in sys.argv[3:7])
    color = [int(c) for c in sys.argv[7].split(',')]
    with open(path) as f:
        all_rings = list(rings(json.load(f)))
    levels = dzi_levels(w, h)
    top = len(levels) - 1
    total = 0
    for level, (lw, lh) in enumerate(levels):
        k = top - level
        # One row and column more: a vertex on the slide's right or bottom
        # edge (x == width) maps to the pixel just outside.
        want = np.zeros((lh + 1, lw + 1), bool)
        for ring in all_rings:
            pts = [(math.floor(x / 2 ** k), math.floor(y / 2 ** k)) for x, y, *_ in ring]
            for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
                rr, cc = line(y0, x0, y1, x1)
                want[rr, cc] = True
        want = want[:lh, :lw]
        total += int(want.sum()) if level == top else 0
        for r in range((lh + t - 1) // t):
            for c in range((lw + t - 1) // t):
                x0, y0 = c * t - (o if c else 0), r * t - (o if r else 0)
                x1, y1 = min(lw, (c + 1) * t + o), min(lh, (r + 1) * t + o)
                name = '%s/%d/%d_%d.png' % (tiledir, level, c, r)
                a = np.asarray(Image.open(name))
                if a.shape != (y1 - y0, x1 - x0, 4):
                    sys.exit('%s: shape %s, want %s' % (name, a.shape, (y1 - y0, x1 - x0, 4)))
                on = want[y0:y1, x0:x1]
                got = a[..., 3] == 255
                bad = np.argwhere(on != got)
                if len(bad):
                    y, x = bad[0]
                    sys.exit('%s: %d pixels differ, first at tile (%d, %d) = level (%d, %d): drawn %s, expected %s'
                             % (name, len(bad), x, y, x + x0, y + y0, bool(got[y, x]), bool(on[y, x])))
                if np.any((a[..., 3] != 0) & (a[..., 3] != 255)):
                    sys.exit('%s: alpha other than 0 and 255' % name)
                if np.any(a[got][:, :3] != color):
                    sys.exit('%s: outline pixels not %s' % (name, color))
    print(json.dumps({'rings': len(all_rings), 'levels': len(levels), 'outline_pixels': total}))


if __name__ == '__main__':
    main()
