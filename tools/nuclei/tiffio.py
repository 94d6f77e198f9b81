"""TIFF input/output shared by the nuclei tools: tiled writing (JPEG RGB
slides, deflate uint32 labels) and band-by-band reading of level 0, both
streaming so that slide size is bounded by disk, not memory.

Debian's tifffile has no imagecodecs, so it can neither encode nor decode
JPEG tiles. We encode with OpenCV (libjpeg: YCbCr, 4:2:0, a whole JFIF
stream per tile, as Aperio writes them; the TIFF says Photometric YCbCr and
YCbCrSubSampling 2x2) and decode JPEG tiles with OpenCV too, splicing in the
JPEGTables of abbreviated streams. Everything else goes through tifffile.
"""
import re

import cv2
import numpy as np
import tifffile


def _cv2_jpeg_encode(data, level=None, subsampling=None, colorspace=None, outcolorspace=None, **_):
    a = np.asarray(data)
    a = a.reshape(a.shape[-3:])
    if subsampling not in (None, (2, 2)) or a.shape[-1] != 3:
        raise ValueError('the OpenCV JPEG encoder writes 3-channel 4:2:0 (YCbCr 2x2) only')
    ok, buf = cv2.imencode('.jpg', cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, int(level or 90)])
    if not ok:
        raise RuntimeError('OpenCV failed to encode a JPEG tile')
    return buf.tobytes()


def _install_jpeg_encoder():
    """Give tifffile a JPEG encoder when it has none (no imagecodecs).

    tifffile looks codecs up in TIFF.COMPRESSORS and caches them in its
    `_codecs` dict; we fill that slot only when the lookup fails, so a
    tifffile with imagecodecs keeps its own encoder (which would then write
    the same layout: YCbCr 2x2 by default)."""
    try:
        tifffile.TIFF.COMPRESSORS[7]
    except KeyError:
        tifffile.TIFF.COMPRESSORS._codecs[7] = _cv2_jpeg_encode


def write_tiled(path, shape, dtype, tiles, tile=256, jpeg=None, mpp=None, description=None):
    """Write one tiled level from an iterator of tiles in row-major order.

    shape (h, w) or (h, w, 3); tiles must be full tile x tile (pad the right
    and bottom ones). jpeg=Q: JPEG RGB (u8 x3); else deflate (zlib). mpp puts
    XResolution/YResolution in pixels per centimetre (what Tilewave, libtiff
    and OpenSlide read as microns per pixel)."""
    kw = dict(shape=shape, dtype=dtype, tile=(tile, tile), bigtiff=np.prod(shape) * np.dtype(dtype).itemsize > 2**31)
    if jpeg is not None:
        _install_jpeg_encoder()
        kw.update(compression=('jpeg', int(jpeg)), photometric='rgb', subsampling=(2, 2))
    else:
        kw.update(compression='zlib', photometric='rgb' if len(shape) == 3 else 'minisblack')
    if mpp:
        kw.update(resolution=(1e4 / mpp, 1e4 / mpp), resolutionunit='CENTIMETER')
    if description:
        kw.update(description=description)
    with tifffile.TiffWriter(path, bigtiff=kw.pop('bigtiff')) as w:
        w.write(tiles, metadata=None, **kw)


def slide_mpp(path):
    """Microns per pixel of level 0 as Tilewave reads it: the resolution tags
    in cm or inch, else an Aperio "MPP = x"; None when unknown."""
    with tifffile.TiffFile(path) as tf:
        p = tf.pages[0]
        unit = p.tags.get('ResolutionUnit')
        xres = p.tags.get('XResolution')
        if unit is not None and xres is not None:
            num, den = xres.value
            if num > 0 and den > 0:
                res = num / den
                if unit.value == 3:
                    return 1e4 / res
                if unit.value == 2:
                    return 25400.0 / res
        m = re.search(r'MPP = ([0-9.]+)', p.description or '')
        return float(m.group(1)) if m else None


class LevelReader:
    """Reads rows [y0, y1) of a TIFF's first page, all columns, one chunk row
    (tile row or strip) at a time, keeping only the last chunk row decoded.
    JPEG chunks are decoded with OpenCV; others by tifffile."""

    def __init__(self, path):
        self.tf = tifffile.TiffFile(path)
        p = self.tf.pages[0]
        self.page = p
        self.height, self.width = p.imagelength, p.imagewidth
        self.spp = p.samplesperpixel
        self.dtype = p.dtype
        if p.planarconfig != 1 and self.spp > 1:
            raise ValueError(f'{path}: planar-separate samples are not supported')
        if p.is_tiled:
            self.ch, self.cw = p.tilelength, p.tilewidth
        else:
            self.ch, self.cw = min(p.rowsperstrip or self.height, self.height), self.width
        self.across = (self.width + self.cw - 1) // self.cw
        self.jpeg = p.compression == 7
        self.tables = p.jpegtables
        self._row, self._buf = -1, None

    def close(self):
        self.tf.close()

    def shape(self):
        return (self.height, self.width) + ((self.spp,) if self.spp > 1 else ())

    def _decode(self, i):
        p, fh = self.page, self.tf.filehandle
        off, n = p.dataoffsets[i], p.databytecounts[i]
        if n == 0:
            return None
        fh.seek(off)
        data = fh.read(n)
        if not self.jpeg:
            seg = p.decode(data, i)[0]
            return seg.reshape(seg.shape[-3:])
        if self.tables is not None and len(self.tables) > 4:
            # Abbreviated stream: tables (less their EOI) then data (less SOI).
            data = bytes(self.tables[:-2]) + data[2:]
        a = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        if a is None:
            raise ValueError(f'cannot decode JPEG chunk {i}')
        if a.ndim == 3:
            # libjpeg converted YCbCr to BGR; an RGB-photometric stream would
            # need no conversion (Adobe marker), which OpenCV also honours.
            a = cv2.cvtColor(a, cv2.COLOR_BGR2RGB)
        return a.reshape(a.shape[0], a.shape[1], -1)

    def _chunk_row(self, r):
        if r != self._row:
            y0 = r * self.ch
            h = min(self.ch, self.height - y0)
            buf = np.zeros((h, self.width, self.spp), self.dtype)
            for c in range(self.across):
                seg = self._decode(r * self.across + c)
                if seg is None:
                    continue
                x0 = c * self.cw
                w = min(self.cw, self.width - x0)
                buf[:, x0:x0 + w] = seg[:h, :w]
            self._row, self._buf = r, buf
        return self._buf

    def region(self, x0, y0, x1, y1):
        """Pixels [x0,x1) x [y0,y1) (clipped to the image), decoding only the
        chunks that meet them; nothing cached (for random access by tiles)."""
        x0, y0, x1, y1 = max(0, x0), max(0, y0), min(self.width, x1), min(self.height, y1)
        out = np.zeros((y1 - y0, x1 - x0, self.spp), self.dtype)
        for r in range(y0 // self.ch, (y1 - 1) // self.ch + 1):
            for c in range(x0 // self.cw, (x1 - 1) // self.cw + 1):
                seg = self._decode(r * self.across + c)
                if seg is None:
                    continue
                cy, cx = r * self.ch, c * self.cw
                ya, yb = max(y0, cy), min(y1, cy + self.ch, self.height)
                xa, xb = max(x0, cx), min(x1, cx + self.cw, self.width)
                out[ya - y0:yb - y0, xa - x0:xb - x0] = seg[ya - cy:yb - cy, xa - cx:xb - cx]
        return out if self.spp > 1 else out[..., 0]

    def read(self, y0, y1):
        y0, y1 = max(0, y0), min(self.height, y1)
        out = np.empty((y1 - y0, self.width, self.spp), self.dtype)
        y = y0
        while y < y1:
            r = y // self.ch
            buf = self._chunk_row(r)
            a, b = y - r * self.ch, min(y1, (r + 1) * self.ch) - r * self.ch
            out[y - y0:y - y0 + b - a] = buf[a:b]
            y += b - a
        return out if self.spp > 1 else out[..., 0]


def read_level0(path):
    r = LevelReader(path)
    try:
        return r.read(0, r.height)
    finally:
        r.close()
