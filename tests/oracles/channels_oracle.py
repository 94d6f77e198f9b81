#!/usr/bin/python3
"""N-channel TIFF and OME-TIFF inputs written by tifffile, and an independent
check of the pyramids tilewave makes of them.

usage:
  channels_oracle.py make OUT.tif OUT.npy H,W,C DTYPE [--planar] [--tile N | --rows N]
                     [--zlib] [--rgb] [--seed S]
      a TIFF of H x W pixels of C samples (u8, u16, f32), PlanarConfiguration
      contiguous or separate, tiled or in strips; OUT.npy holds its pixels (H, W, C).
  channels_oracle.py ome OUT.ome.tif OUT C,H,W DTYPE [--names a,b,c] [--subifds K]
                     [--tile N] [--z Z] [--t T] [--series 2] [--label] [--rgb]
      an OME-TIFF (one IFD per channel, K SubIFD levels each: every other pixel
      of the level above); OUT_levelL.npy hold level L's pixels (H, W, C).
  channels_oracle.py check OUT.tif REF.npy [--tolerance T]
      every level of OUT.tif as tifffile reads it: level 0 equal to REF.npy,
      each further level equal to scipy's REDUCE of the level above, per
      channel (reduce_oracle.py); floats within T. Prints JSON; exit 1 with
      the first difference otherwise.
"""
import json
import sys

import numpy as np
import tifffile

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from reduce_oracle import reduce_once  # noqa: E402

DTYPES = {'u8': np.uint8, 'u16': np.uint16, 'f32': np.float32}


def opt(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def content(shape_hwc, dtype, seed):
    """Smooth ramps (what REDUCE keeps), noise, and the extremes of the type
    (the largest sums) in every channel, each channel different."""
    h, w, c = shape_hwc
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    out = np.empty((h, w, c), np.float64)
    for k in range(c):
        out[:, :, k] = (0.5 + 0.5 * np.sin((x * (k + 1) + y * (c - k)) / 23.0)) * 0.7 + 0.3 * rng.random((h, w))
    if dtype == np.float32:
        a = (out * 1000 - 200).astype(np.float32)
    else:
        top = np.iinfo(dtype).max
        a = np.round(out * top).astype(dtype)
        a[: max(1, h // 7), : max(1, w // 5)] = top
        a[-max(1, h // 9):, -max(1, w // 6):] = 0
    return np.ascontiguousarray(a)


def make(args):
    out, npy, shape, dt = args[:4]
    h, w, c = (int(v) for v in shape.split(','))
    a = content((h, w, c), DTYPES[dt], int(opt(args, '--seed', 1)))
    kw = {'photometric': 'rgb' if '--rgb' in args else 'minisblack'}
    if '--rgb' in args and c > 3:
        kw['extrasamples'] = [0] * (c - 3)  # unspecified: channels, not alpha
    if '--zlib' in args:
        kw['compression'] = 'zlib'
    if '--tile' in args:
        n = int(opt(args, '--tile'))
        kw['tile'] = (n, n)
    if '--rows' in args:
        kw['rowsperstrip'] = int(opt(args, '--rows'))
    if '--planar' in args:
        tifffile.imwrite(out, np.moveaxis(a, 2, 0), planarconfig='separate', **kw)
    else:
        tifffile.imwrite(out, a, planarconfig='contig', **kw)
    np.save(npy, a)


def ome(args):
    out, stem, shape, dt = args[:4]
    c, h, w = (int(v) for v in shape.split(','))
    z, t = int(opt(args, '--z', 1)), int(opt(args, '--t', 1))
    a = np.moveaxis(content((h, w, c), DTYPES[dt], 3), 2, 0)  # C, H, W
    subifds = int(opt(args, '--subifds', 0))
    tile = int(opt(args, '--tile', 0))
    kw = {'tile': (tile, tile)} if tile else {}
    md = {'axes': 'CYX'}
    if '--names' in args:
        md['Channel'] = {'Name': opt(args, '--names').split(',')}
    data = a
    if z > 1 or t > 1:
        data = np.stack([a] * z, axis=1)  # C, Z, H, W
        md['axes'] = 'CZYX'
        if t > 1:
            data = np.stack([data] * t, axis=0)
            md['axes'] = 'TCZYX'
    if '--rgb' in args:
        data = np.ascontiguousarray(np.moveaxis(a, 0, 2))  # H, W, 3: one IFD of 3 samples
        md = {'axes': 'YXS'}
    with tifffile.TiffWriter(out, ome=True) as tw:
        tw.write(data, metadata=md, subifds=subifds or None, photometric='rgb' if '--rgb' in args else 'minisblack',
                 **kw)
        lvl = a
        for _ in range(subifds):
            lvl = np.ascontiguousarray(lvl[:, ::2, ::2])
            tw.write(lvl, subfiletype=1, photometric='minisblack', **kw)
        if int(opt(args, '--series', 1)) > 1:
            tw.write(a[:1, :32, :32], metadata={'axes': 'CYX'}, photometric='minisblack')
        if '--label' in args:  # a second Image named "label", RGB 30x20 of 7s
            tw.write(np.full((20, 30, 3), 7, np.uint8), metadata={'axes': 'YXS', 'Name': 'label'}, photometric='rgb')
    lvl = a
    for k in range(subifds + 1):
        np.save('%s_level%d.npy' % (stem, k), np.ascontiguousarray(np.moveaxis(lvl, 0, 2)))
        lvl = lvl[:, ::2, ::2]


def as_hwc(a, channels):
    if a.ndim == 2:
        return a[:, :, None]
    if a.shape[-1] == channels:
        return a
    return np.moveaxis(a, 0, 2)  # planar


def check(args):
    path, ref_path = args[:2]
    tol = float(opt(args, '--tolerance', 0))
    ref = np.load(ref_path)
    if ref.ndim == 2:
        ref = ref[:, :, None]
    res = {'levels': [], 'channels': int(ref.shape[2])}
    with tifffile.TiffFile(path) as tif:
        levels = [p for p in tif.pages if p.is_tiled]
        prev = None
        for i, p in enumerate(levels):
            a = as_hwc(p.asarray(), ref.shape[2])
            want = ref if prev is None else reduce_once(prev)
            res['levels'].append(list(a.shape))
            if a.shape != want.shape or a.dtype != want.dtype:
                print('level %d is %s %s, expected %s %s' % (i, a.shape, a.dtype, want.shape, want.dtype),
                      file=sys.stderr)
                sys.exit(1)
            if a.dtype == np.float32:
                # Floats: REDUCE in float64 here, float32 sums there.
                want = want if prev is None else reduce_float(prev)
                bad = ~np.isclose(a, want, rtol=tol, atol=tol)
            else:
                bad = a != want
            if bad.any():
                y, x, ch = np.argwhere(bad)[0]
                print('level %d differs at (x %d, y %d, channel %d): %s vs %s, %d samples' %
                      (i, x, y, ch, a[y, x, ch], want[y, x, ch], int(bad.sum())), file=sys.stderr)
                sys.exit(1)
            prev = a
    print(json.dumps(res))


def reduce_float(a):
    from scipy import ndimage
    w = np.array([1, 4, 6, 4, 1], dtype=np.float64)
    s = ndimage.correlate1d(a.astype(np.float64), w, axis=0, mode='mirror')
    s = ndimage.correlate1d(s, w, axis=1, mode='mirror')
    return (s[::2, ::2] / 256).astype(np.float32)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {'make': make, 'ome': ome, 'check': check}[cmd](args)


if __name__ == '__main__':
    main()
