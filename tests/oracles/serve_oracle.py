#!/usr/bin/python3
"""Independent checks of `tilewave serve`'s tiles (tests/tools/serve_test.cpp).

usage: serve_oracle.py tiles PYRAMID.tif TILEDIR TILE OVERLAP EXT [--vips]
       serve_oracle.py outlines LABELS.tif TILEDIR TILE OVERLAP R,G,B
       serve_oracle.py descriptor FILE.dzi WIDTH HEIGHT TILE OVERLAP FORMAT

tiles: TILEDIR holds every tile the server gave, as LEVEL/COL_ROW.EXT. The
grid is computed here from the Deep Zoom spec (levels down to 1x1, halving
with rounding up; tile (c, r) spans [c*T - O, (c+1)*T + O) clipped, no
overlap past the image's edge); every tile must exist with that size, and
its pixels must equal the lossless pyramid's stored level (tifffile), or
scipy's REDUCE (reduce_oracle.py) of the smallest stored level for levels
below it. PNG exactly; JPEG within PSNR >= 30 dB. --vips also checks that
`vips dzsave` cuts the same grid (file names and tile sizes).
outlines: the overlay's PNG tiles (RGBA) against outlines computed here from
the labels (the overlay op's rule: a non-zero label with a 4-neighbour of
another label or outside the image; lower levels: labels sampled at
(2^k x, 2^k y), i.e. nearest).
Prints a JSON summary; exit 1 with a message on the first mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import tifffile
from PIL import Image

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from reduce_oracle import reduce_once  # noqa: E402


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def dzi_levels(w, h):
    sizes = [(w, h)]
    while w > 1 or h > 1:
        w, h = (w + 1) // 2, (h + 1) // 2
        sizes.append((w, h))
    return sizes[::-1]  # level 0 is 1x1


def tile_box(w, h, c, r, t, o):
    x0 = c * t - (o if c > 0 else 0)
    y0 = r * t - (o if r > 0 else 0)
    return x0, y0, min(w, (c + 1) * t + o), min(h, (r + 1) * t + o)


def grid(w, h, t, o):
    for level, (lw, lh) in enumerate(dzi_levels(w, h)):
        for r in range((lh + t - 1) // t):
            for c in range((lw + t - 1) // t):
                yield level, c, r, tile_box(lw, lh, c, r, t, o)


def stored_levels(path):
    with tifffile.TiffFile(path) as tif:
        return [p.asarray() for p in tif.pages if p.is_tiled]


def psnr(a, b):
    d = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if d == 0 else 10 * np.log10(255.0 ** 2 / d)


def check_tiles(args):
    path, tiledir, t, o, ext = args[0], args[1], int(args[2]), int(args[3]), args[4]
    levels = stored_levels(path)
    h, w = levels[0].shape[:2]
    n_levels = len(dzi_levels(w, h))
    refs = {}
    worst = 99.0
    count = 0
    for level, c, r, (x0, y0, x1, y1) in grid(w, h, t, o):
        k = n_levels - 1 - level
        if k not in refs:
            if k < len(levels):
                refs[k] = levels[k]
            else:  # levels below the stored ones: REDUCE of the level above
                a = levels[-1]
                for _ in range(k - len(levels) + 1):
                    a = reduce_once(a)
                refs[k] = a
        ref = refs[k][y0:y1, x0:x1]
        f = os.path.join(tiledir, str(level), '%d_%d.%s' % (c, r, ext))
        if not os.path.exists(f):
            fail('missing tile %s' % f)
        a = np.asarray(Image.open(f))
        if a.shape[:2] != (y1 - y0, x1 - x0):
            fail('tile %s is %s, the grid says %dx%d' % (f, a.shape, x1 - x0, y1 - y0))
        if a.shape != ref.shape:
            fail('tile %s has shape %s, the level %s' % (f, a.shape, ref.shape))
        if ext == 'png':
            if not np.array_equal(a, ref):
                d = np.argwhere(a != ref)
                y, x = d[0][:2]
                fail('tile %s differs at (%d, %d): %s vs %s, %d samples' % (f, x, y, a[y, x], ref[y, x], len(d)))
        else:
            p = psnr(a, ref)
            worst = min(worst, p)
            if p < 30:
                fail('tile %s: PSNR %.1f dB against the level' % (f, p))
        count += 1
    extra = sum(len(files) for _, _, files in os.walk(tiledir)) - count
    out = {'tiles': count, 'levels': n_levels, 'worst_psnr': round(worst, 2), 'extra_files': extra}
    if '--vips' in args:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(['vips', 'dzsave', path, d + '/v', '--tile-size', str(t), '--overlap', str(o),
                            '--suffix', '.png'], check=True, capture_output=True)
            v = {}
            for root, _, files in os.walk(d + '/v_files'):
                for name in files:
                    if not name.endswith('.png'):
                        continue  # vips-properties.xml
                    with Image.open(os.path.join(root, name)) as im:
                        v[(int(os.path.basename(root)), name.rsplit('.', 1)[0])] = im.size
            ours = {(level, '%d_%d' % (c, r)): (b[2] - b[0], b[3] - b[1]) for level, c, r, b in grid(w, h, t, o)}
            if v != ours:
                diff = sorted(set(v.items()) ^ set(ours.items()))[:5]
                fail('vips dzsave cuts another grid: first differences %s' % diff)
            out['vips_tiles'] = len(v)
    print(json.dumps(out))


def outlines(lab):
    p = np.pad(lab, 1, constant_values=0)
    c = p[1:-1, 1:-1]
    edge = (c != 0) & ((p[:-2, 1:-1] != c) | (p[2:, 1:-1] != c) | (p[1:-1, :-2] != c) | (p[1:-1, 2:] != c))
    return edge


def check_outlines(args):
    path, tiledir, t, o = args[0], args[1], int(args[2]), int(args[3])
    color = [int(v) for v in args[4].split(',')]
    lab = tifffile.imread(path, key=0)
    h, w = lab.shape[:2]
    n_levels = len(dzi_levels(w, h))
    count = on = 0
    edges = {}
    for level, c, r, (x0, y0, x1, y1) in grid(w, h, t, o):
        k = n_levels - 1 - level
        f = os.path.join(tiledir, str(level), '%d_%d.png' % (c, r))
        if not os.path.exists(f):
            continue  # the test fetches some levels only
        if k not in edges:
            edges[k] = outlines(lab[::2 ** k, ::2 ** k])
        e = edges[k][y0:y1, x0:x1]
        a = np.asarray(Image.open(f))
        if a.shape != (y1 - y0, x1 - x0, 4):
            fail('outline tile %s is %s, expected %dx%d RGBA' % (f, a.shape, x1 - x0, y1 - y0))
        ref = np.zeros_like(a)
        ref[e] = color + [255]
        if not np.array_equal(a, ref):
            d = np.argwhere(np.any(a != ref, axis=2))
            y, x = d[0]
            fail('outline tile %s differs at (%d, %d): %s vs %s, %d pixels' % (f, x, y, a[y, x], ref[y, x], len(d)))
        count += 1
        on += int(e.sum())
    print(json.dumps({'tiles': count, 'outline_pixels': on}))


def check_descriptor(args):
    root = ET.parse(args[0]).getroot()
    ns = '{http://schemas.microsoft.com/deepzoom/2008}'
    if root.tag != ns + 'Image':
        fail('root element is %s' % root.tag)
    size = root.find(ns + 'Size')
    got = [size.get('Width'), size.get('Height'), root.get('TileSize'), root.get('Overlap'), root.get('Format')]
    if got != args[1:6]:
        fail('descriptor says %s, expected %s' % (got, args[1:6]))
    print(json.dumps({'descriptor': got}))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {'tiles': check_tiles, 'outlines': check_outlines, 'descriptor': check_descriptor}[cmd](args)


if __name__ == '__main__':
    main()
