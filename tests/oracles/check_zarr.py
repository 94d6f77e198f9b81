#!/usr/bin/python3
"""Independent check of an OME-Zarr store written by tilewave, with
python3-zarr (Debian's 2.13) and numpy.

usage: check_zarr.py STORE CHUNK [--tif REF.tif] [--npy LEVEL0.npy] [--mpp X]
                     [--names A,B,C] [--levels N]

Opens the group and every level with zarr and checks the OME-Zarr 0.4
multiscales rules that can be checked here: version, axes c,y,x with types
channel/space/space (units micrometer exactly when --mpp is given),
datasets "0".."n-1" each with exactly one scale transform of 3 entries,
1 for c and mpp*2^L (or 2^L) for y and x; each level's .zarray: shape
(C, ceil(H/2^L), ceil(W/2^L)), chunks (C, CHUNK, CHUNK), order C,
fill_value 0, dimension_separator "/"; the omero channels.

Pixels: --tif compares level L with page L of a lossless generic pyramidal
TIFF of the same input read by tifffile (exact); --npy compares level 0
with the array (H, W, C) and each further level with Burt-Adelson REDUCE of
the one before (tests/oracles/reduce_oracle.py, scipy), or for uint32
labels with nearest (every other pixel). Prints one JSON summary; exit 1
with a message on the first problem.
"""
import argparse
import json
import os
import sys

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def same(a, b):
    # Floats bit for bit (NaN included): the store must hold the very samples.
    if a.dtype.kind == 'f':
        return np.array_equal(a.view(np.uint32), b.view(np.uint32))
    return np.array_equal(a, b)


def first_difference(a, b):
    bad = np.argwhere(a.view(np.uint32) != b.view(np.uint32)) if a.dtype.kind == 'f' else np.argwhere(a != b)
    c, y, x = bad[0]
    return f"first at c={c} y={y} x={x}: {a[c, y, x]} vs {b[c, y, x]}, {len(bad)} differ"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('store')
    ap.add_argument('chunk', type=int)
    ap.add_argument('--tif')
    ap.add_argument('--npy')
    ap.add_argument('--mpp', type=float, default=0)
    ap.add_argument('--names')
    ap.add_argument('--levels', type=int)
    a = ap.parse_args()

    with open(os.path.join(a.store, '.zgroup')) as f:
        if json.load(f).get('zarr_format') != 2:
            fail('.zgroup: zarr_format is not 2')
    g = zarr.open_group(a.store, mode='r')
    attrs = g.attrs.asdict()
    ms = attrs.get('multiscales')
    if not isinstance(ms, list) or len(ms) != 1:
        fail(f'multiscales: expected a list of one, got {ms!r}')
    m = ms[0]
    if m.get('version') != '0.4':
        fail(f"multiscales version {m.get('version')!r}")
    axes = m.get('axes')
    if [x.get('name') for x in axes] != ['c', 'y', 'x'] or [x.get('type') for x in axes] != ['channel', 'space', 'space']:
        fail(f'axes {axes!r}')
    if 'unit' in axes[0]:
        fail('the channel axis has a unit')
    for ax in axes[1:]:
        if a.mpp > 0 and ax.get('unit') != 'micrometer':
            fail(f'axis {ax!r}: expected unit micrometer')
        if a.mpp == 0 and 'unit' in ax:
            fail(f'axis {ax!r}: a unit without a known pixel size')
    datasets = m.get('datasets')
    if not datasets:
        fail('no datasets')
    if a.levels is not None and len(datasets) != a.levels:
        fail(f'{len(datasets)} levels, expected {a.levels}')
    if sorted(g.array_keys(), key=int) != [d['path'] for d in datasets]:
        fail(f"arrays {list(g.array_keys())} vs datasets {[d['path'] for d in datasets]}")

    ref_pages = None
    if a.tif:
        import tifffile
        ref_pages = tifffile.TiffFile(a.tif).pages
    prev = None
    if a.npy:
        prev = np.load(a.npy)
        if prev.ndim == 2:
            prev = prev[..., None]

    shapes = []
    C = None
    for level, d in enumerate(datasets):
        if d['path'] != str(level):
            fail(f"dataset {level} has path {d['path']!r}")
        ct = d.get('coordinateTransformations')
        if not isinstance(ct, list) or len(ct) != 1 or ct[0].get('type') != 'scale':
            fail(f'level {level}: coordinateTransformations {ct!r} (expected one scale)')
        f = 2.0 ** level
        want = [1.0, a.mpp * f, a.mpp * f] if a.mpp > 0 else [1.0, f, f]
        if not np.allclose(ct[0]['scale'], want, rtol=1e-12):
            fail(f"level {level}: scale {ct[0]['scale']} expected {want}")
        arr = g[d['path']]
        meta = json.load(open(os.path.join(a.store, d['path'], '.zarray')))
        if meta.get('dimension_separator') != '/' or meta.get('order') != 'C' or meta.get('fill_value') != 0:
            fail(f'level {level}: .zarray {meta!r}')
        if C is None:
            C = arr.shape[0]
            H0, W0 = arr.shape[1], arr.shape[2]
        expect_shape = (C, -(-H0 // (1 << level)), -(-W0 // (1 << level)))
        if arr.shape != expect_shape:
            fail(f'level {level}: shape {arr.shape}, expected {expect_shape}')
        if arr.chunks != (C, a.chunk, a.chunk):
            fail(f'level {level}: chunks {arr.chunks}, expected {(C, a.chunk, a.chunk)}')
        px = arr[:]
        if ref_pages is not None:
            ref = ref_pages[level].asarray()
            ref = ref[None] if ref.ndim == 2 else ref.transpose(2, 0, 1)
            if ref.shape != px.shape or ref.dtype != px.dtype:
                fail(f'level {level}: {px.shape} {px.dtype} vs the TIFF level {ref.shape} {ref.dtype}')
            if not same(px, ref):
                fail(f'level {level}: pixels differ from the TIFF level, ' + first_difference(px, ref))
        if prev is not None:
            if level > 0:
                if prev.dtype == np.uint32:
                    prev = prev[::2, ::2]
                else:
                    from reduce_oracle import reduce_once
                    prev = reduce_once(prev)
            ref = prev.transpose(2, 0, 1)
            if ref.shape != px.shape or ref.dtype != px.dtype:
                fail(f'level {level}: {px.shape} {px.dtype} vs the reference {ref.shape} {ref.dtype}')
            if not same(px, ref):
                fail(f'level {level}: pixels differ from the reference, ' + first_difference(px, ref))
        shapes.append(list(arr.shape))

    if ref_pages is not None and len(ref_pages) > len(datasets):
        # The TIFF's next page, if it is a further pyramid level, would mean a level is missing.
        nxt = ref_pages[len(datasets)]
        h, w = nxt.shape[:2]
        if (h, w) == (-(-shapes[-1][1] // 2), -(-shapes[-1][2] // 2)) and nxt.is_reduced:
            fail('the TIFF has more pyramid levels than the store')

    om = attrs.get('omero', {})
    chans = om.get('channels', [])
    if len(chans) != C:
        fail(f'omero: {len(chans)} channels for {C}')
    for ch in chans:
        w = ch.get('window', {})
        if not all(k in w for k in ('min', 'max', 'start', 'end')) or len(ch.get('color', '')) != 6:
            fail(f'omero channel {ch!r}')
    labels = [ch['label'] for ch in chans]
    if a.names is not None and labels != a.names.split(','):
        fail(f'channel labels {labels}, expected {a.names.split(",")}')
    print(json.dumps({'levels': shapes, 'dtype': str(g['0'].dtype), 'labels': labels,
                      'colors': [ch['color'] for ch in chans], 'scale0': datasets[0]['coordinateTransformations'][0]['scale'],
                      'compressor': g['0'].compressor.get_config() if g['0'].compressor else None,
                      'filters': [f.get_config() for f in (g['0'].filters or [])]}))


if __name__ == '__main__':
    main()
