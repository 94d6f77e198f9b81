#!/usr/bin/python3
"""Independent check of a pyramidal TIFF written by tilewave, with tifffile.

usage: check_pyramid.py FILE.tif [--pixels]

Prints one JSON object: levels (shape, tile, compression, subfiletype,
resolution per level), associated page descriptions, and with --pixels
(deflate/none only: tifffile has no LZW/zstd/JPEG decoder without
imagecodecs) whether every level equals scipy's REDUCE of the level above.
Exit 1 with a message on any structural problem.
"""
import json
import sys

import numpy as np
import tifffile

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from reduce_oracle import reduce_once  # noqa: E402


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def main():
    path = sys.argv[1]
    pixels = '--pixels' in sys.argv
    out = {'levels': [], 'associated': []}
    with tifffile.TiffFile(path) as tif:
        out['bigtiff'] = tif.is_bigtiff
        pages = list(tif.pages)
        levels = [p for p in pages if p.is_tiled]
        assoc = [p for p in pages if not p.is_tiled]
        for i, p in enumerate(levels):
            xres = p.tags.get('XResolution')
            out['levels'].append({
                'shape': list(p.shape),
                'tile': [p.tilelength, p.tilewidth],
                'compression': int(p.compression),
                'subfiletype': int(p.subfiletype),
                'xres': (xres.value[0] / xres.value[1]) if xres else 0,
            })
            if i > 0 and (p.subfiletype & 1) == 0:
                fail('level %d lacks NewSubfileType=reduced' % i)
            if i > 0:
                h0, w0 = levels[i - 1].shape[:2]
                if list(p.shape[:2]) != [(h0 + 1) // 2, (w0 + 1) // 2]:
                    fail('level %d is %s, expected half of %s rounded up' % (i, p.shape, levels[i - 1].shape))
        for p in assoc:
            out['associated'].append({'description': p.description, 'shape': list(p.shape)})
        if pixels:
            prev = None
            for i, p in enumerate(levels):
                a = p.asarray()
                if prev is not None:
                    ref = reduce_once(prev)
                    if not np.array_equal(a, ref):
                        d = np.argwhere(a != ref)
                        fail('level %d differs from REDUCE of level %d at %d samples, first %s: %s vs %s' % (
                            i, i - 1, len(d), d[0].tolist(), a[tuple(d[0])], ref[tuple(d[0])]))
                prev = a
            out['pixels_checked'] = True
    print(json.dumps(out))


if __name__ == '__main__':
    main()
