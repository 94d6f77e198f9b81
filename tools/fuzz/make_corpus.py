#!/usr/bin/python3
"""Seed corpus for the fuzz targets (docs/FUZZING.md).

usage: /usr/bin/python3 tools/fuzz/make_corpus.py OUTDIR

Writes OUTDIR/<target>/<seed> for fuzz_tiff_source, fuzz_openslide_guard, fuzz_jpeg_decode,
fuzz_tile_codecs and fuzz_specs, every seed under 64 KB. TIFFs are written
by libtiff itself (through ctypes: every codec it has, YCbCr JPEG, planar,
palette, BigTIFF, SubIFDs, several directories), a few by tifffile, and, when
TW_TILEWAVE names a release build of the tilewave CLI, by our own
`tilewave pyramid synthetic:...`. JPEG streams come from Pillow and from the
JPEG tiles of those TIFFs (as TIFF stores them: tables apart).
"""
import ctypes
import ctypes.util
import io
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

MAX_SEED = 64 * 1024

# --- libtiff through ctypes ------------------------------------------------
_lib = ctypes.CDLL(ctypes.util.find_library("tiff") or "libtiff.so.6")
_lib.TIFFOpen.restype = ctypes.c_void_p
_lib.TIFFOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.TIFFClose.argtypes = [ctypes.c_void_p]
_lib.TIFFWriteDirectory.argtypes = [ctypes.c_void_p]
_lib.TIFFWriteEncodedTile.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_ssize_t]
_lib.TIFFWriteEncodedTile.restype = ctypes.c_ssize_t
_lib.TIFFWriteEncodedStrip.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_ssize_t]
_lib.TIFFWriteEncodedStrip.restype = ctypes.c_ssize_t
_lib.TIFFSetField.restype = ctypes.c_int

# tags and values (tiff.h)
WIDTH, LENGTH, BITS, COMPRESSION, PHOTOMETRIC = 256, 257, 258, 259, 262
DESCRIPTION, SPP, RPS, XRES, YRES, PLANAR, RESUNIT = 270, 277, 278, 282, 283, 284, 296
SUBFILETYPE, PREDICTOR, COLORMAP, TILEW, TILEH = 254, 317, 320, 322, 323
SUBIFD, EXTRASAMPLES, SAMPLEFORMAT, YCBCRSUB = 330, 338, 339, 530
JPEGQUALITY, JPEGCOLORMODE = 65537, 65538
NONE, LZW, JPEG, DEFLATE, PACKBITS, ZSTD = 1, 5, 7, 8, 32773, 50000
MINISWHITE, MINISBLACK, RGB, PALETTE, YCBCR = 0, 1, 2, 3, 6


def _set(t, tag, *args):
    if not _lib.TIFFSetField(ctypes.c_void_p(t), ctypes.c_uint32(tag), *args):
        raise RuntimeError("TIFFSetField %d failed" % tag)


def pattern(h, w, c, dtype=np.uint8, seed=0):
    """Smooth content with some noise: realistic for codecs, small once compressed."""
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(seed)
    chans = []
    for k in range(c):
        v = 0.5 + 0.4 * np.sin(x / (5.0 + 3 * k) + seed) * np.cos(y / (7.0 + k)) + 0.05 * rng.standard_normal((h, w))
        chans.append(np.clip(v, 0, 1))
    a = np.stack(chans, axis=-1)
    if dtype == np.float32:
        return a.astype(np.float32)
    return (a * np.iinfo(dtype).max).astype(dtype)


def write_dir(t, img, comp=NONE, tile=None, rps=None, photometric=None, planar=False, predictor=None,
              quality=None, ycbcr=True, sub=(2, 2), description=None, subfile=None, colormap=None,
              res=None, subifds=0, min_is_white=False):
    """One directory of img (H x W x C numpy array) with libtiff's encoders."""
    h, w, c = img.shape
    bits = img.dtype.itemsize * 8
    _set(t, WIDTH, ctypes.c_uint32(w))
    _set(t, LENGTH, ctypes.c_uint32(h))
    _set(t, BITS, ctypes.c_int(bits))
    _set(t, SPP, ctypes.c_int(c))
    if img.dtype == np.float32:
        _set(t, SAMPLEFORMAT, ctypes.c_int(3))
    if photometric is None:
        photometric = RGB if c >= 3 else (MINISWHITE if min_is_white else MINISBLACK)
    if comp == JPEG and c == 3 and ycbcr:
        photometric = YCBCR
    _set(t, COMPRESSION, ctypes.c_int(comp))
    _set(t, PHOTOMETRIC, ctypes.c_int(photometric))
    if comp == JPEG:
        _set(t, JPEGQUALITY, ctypes.c_int(quality or 75))
        if photometric == YCBCR:
            _set(t, YCBCRSUB, ctypes.c_int(sub[0]), ctypes.c_int(sub[1]))
            _set(t, JPEGCOLORMODE, ctypes.c_int(1))  # feed RGB, store YCbCr
    _set(t, PLANAR, ctypes.c_int(2 if planar else 1))
    if c in (2, 4):
        extra = (ctypes.c_uint16 * 1)(2)
        _set(t, EXTRASAMPLES, ctypes.c_int(1), extra)
    if predictor:
        _set(t, PREDICTOR, ctypes.c_int(predictor))
    if description:
        _set(t, DESCRIPTION, ctypes.c_char_p(description.encode()))
    if subfile is not None:
        _set(t, SUBFILETYPE, ctypes.c_uint32(subfile))
    if colormap is not None:
        cm = [(ctypes.c_uint16 * len(colormap[i]))(*colormap[i]) for i in range(3)]
        _set(t, COLORMAP, *cm)
    if res:
        _set(t, XRES, ctypes.c_double(res))
        _set(t, YRES, ctypes.c_double(res))
        _set(t, RESUNIT, ctypes.c_int(3))
    if subifds:
        offs = (ctypes.c_uint64 * subifds)()
        _set(t, SUBIFD, ctypes.c_int(subifds), offs)
    planes = [np.ascontiguousarray(img[:, :, k:k + 1]) for k in range(c)] if planar else [img]
    if tile:
        tw_, th = tile
        _set(t, TILEW, ctypes.c_uint32(tw_))
        _set(t, TILEH, ctypes.c_uint32(th))
        across, down = -(-w // tw_), -(-h // th)
        for p, plane in enumerate(planes):
            for ty in range(down):
                for tx in range(across):
                    buf = np.zeros((th, tw_, plane.shape[2]), img.dtype)
                    part = plane[ty * th:(ty + 1) * th, tx * tw_:(tx + 1) * tw_]
                    buf[:part.shape[0], :part.shape[1]] = part
                    b = buf.tobytes()
                    idx = p * across * down + ty * across + tx
                    if _lib.TIFFWriteEncodedTile(ctypes.c_void_p(t), idx, b, len(b)) < 0:
                        raise RuntimeError("TIFFWriteEncodedTile failed")
    else:
        rps = rps or h
        _set(t, RPS, ctypes.c_uint32(rps))
        n = -(-h // rps)
        for p, plane in enumerate(planes):
            for s in range(n):
                b = np.ascontiguousarray(plane[s * rps:(s + 1) * rps]).tobytes()
                if _lib.TIFFWriteEncodedStrip(ctypes.c_void_p(t), p * n + s, b, len(b)) < 0:
                    raise RuntimeError("TIFFWriteEncodedStrip failed")
    if not _lib.TIFFWriteDirectory(ctypes.c_void_p(t)):
        raise RuntimeError("TIFFWriteDirectory failed")


def libtiff_file(path, dirs, big=False):
    """dirs: list of (img, kwargs) written in order."""
    t = _lib.TIFFOpen(path.encode(), b"w8" if big else b"w")
    if not t:
        raise RuntimeError("TIFFOpen failed: " + path)
    try:
        for img, kw in dirs:
            write_dir(t, img, **kw)
    finally:
        _lib.TIFFClose(ctypes.c_void_p(t))


# --- seeds ----------------------------------------------------------------
def tiff_seeds(tmp):
    """name -> bytes of a TIFF."""
    out = {}
    g8 = pattern(36, 40, 1)
    rgb = pattern(40, 48, 3, seed=1)
    rgba = pattern(24, 40, 4, seed=2)
    ga = pattern(20, 30, 2, seed=3)
    g16 = pattern(30, 34, 1, np.uint16, seed=4)
    rgb16 = pattern(20, 20, 3, np.uint16, seed=5)
    f32 = pattern(24, 20, 1, np.float32, seed=6)
    f32rgb = pattern(16, 18, 3, np.float32, seed=7)
    idx = (pattern(30, 26, 1, seed=8) // 32).astype(np.uint8)
    cmap = [[(i * 37 % 256) * 257 for i in range(256)], [(i * 91 % 256) * 257 for i in range(256)],
            [i * 257 for i in range(256)]]
    cases = {
        "gray8_tiled_none": [(g8, dict(tile=(16, 16)))],
        "gray8_strips_lzw": [(g8, dict(comp=LZW, rps=5))],
        "gray8_strips_none_onestrip": [(g8, dict())],
        "gray8_miniswhite": [(g8, dict(rps=8, min_is_white=True))],
        "rgb8_tiled_lzw_pred": [(rgb, dict(comp=LZW, tile=(16, 16), predictor=2))],
        "rgb8_tiled_deflate_pred": [(rgb, dict(comp=DEFLATE, tile=(32, 16), predictor=2))],
        "rgb8_tiled_zstd": [(rgb, dict(comp=ZSTD, tile=(16, 32)))],
        "rgb8_strips_packbits": [(rgb, dict(comp=PACKBITS, rps=7))],
        "rgb8_strips_deflate_res": [(rgb, dict(comp=DEFLATE, rps=16, res=40000.0))],
        "rgba8_tiled_deflate": [(rgba, dict(comp=DEFLATE, tile=(16, 16)))],
        "graya8_strips_lzw": [(ga, dict(comp=LZW, rps=4))],
        "gray16_tiled_deflate_pred": [(g16, dict(comp=DEFLATE, tile=(16, 16), predictor=2))],
        "gray16_strips_lzw": [(g16, dict(comp=LZW, rps=10))],
        "rgb16_tiled_zstd_pred": [(rgb16, dict(comp=ZSTD, tile=(16, 16), predictor=2))],
        "f32_tiled_deflate_pred3": [(f32, dict(comp=DEFLATE, tile=(16, 16), predictor=3))],
        "f32_strips_none": [(f32, dict(rps=6))],
        "f32rgb_tiled_lzw": [(f32rgb, dict(comp=LZW, tile=(16, 16)))],
        "palette8_strips": [(idx, dict(photometric=PALETTE, colormap=cmap, rps=9))],
        "palette8_tiled_lzw": [(idx, dict(photometric=PALETTE, colormap=cmap, comp=LZW, tile=(16, 16)))],
        "rgb8_planar_tiled_lzw": [(rgb, dict(comp=LZW, tile=(16, 16), planar=True))],
        "rgb8_planar_strips_none": [(rgb, dict(rps=11, planar=True))],
        # N channels (docs/channels.md): contiguous and planar, tiles and strips.
        "ch5_u8_tiled_deflate": [(pattern(40, 36, 5), dict(comp=DEFLATE, tile=(16, 16), photometric=MINISBLACK))],
        "ch8_u16_planar_tiled_lzw": [(pattern(33, 40, 8, np.uint16), dict(comp=LZW, tile=(16, 16), planar=True,
                                                                          photometric=MINISBLACK))],
        "ch40_u8_planar_strips": [(pattern(20, 18, 40), dict(rps=7, planar=True, photometric=MINISBLACK))],
        "jpeg_ycbcr420_tiled": [(rgb, dict(comp=JPEG, tile=(16, 16)))],
        "jpeg_ycbcr422_tiled": [(rgb, dict(comp=JPEG, tile=(32, 16), sub=(2, 1)))],
        "jpeg_ycbcr444_tiled": [(rgb, dict(comp=JPEG, tile=(16, 16), sub=(1, 1)))],
        "jpeg_rgb_tiled": [(rgb, dict(comp=JPEG, tile=(16, 16), ycbcr=False))],
        "jpeg_gray_tiled": [(g8, dict(comp=JPEG, tile=(16, 16)))],
        "jpeg_ycbcr_strips": [(rgb, dict(comp=JPEG, rps=16))],
        "jpeg_gray_strips": [(g8, dict(comp=JPEG, rps=8))],
        "tile_larger_than_image": [(pattern(5, 7, 3), dict(comp=DEFLATE, tile=(16, 16)))],
        "one_pixel": [(pattern(1, 1, 1), dict())],
        # Pyramids in the main chain, then associated images.
        "pyramid_chain_jpeg": [
            (pattern(64, 80, 3, seed=9), dict(comp=JPEG, tile=(16, 16))),
            (pattern(32, 40, 3, seed=9), dict(comp=JPEG, tile=(16, 16), subfile=1)),
            (pattern(16, 20, 3, seed=9), dict(comp=JPEG, tile=(16, 16), subfile=1)),
            (pattern(12, 20, 3, seed=10), dict(comp=LZW, description="label", subfile=1)),
            (pattern(10, 24, 3, seed=11), dict(comp=JPEG, rps=10, description="macro", subfile=9)),
        ],
        "pyramid_chain_deflate16": [
            (pattern(48, 40, 1, np.uint16), dict(comp=DEFLATE, tile=(16, 16), predictor=2)),
            (pattern(24, 20, 1, np.uint16), dict(comp=DEFLATE, tile=(16, 16), predictor=2, subfile=1)),
            (pattern(12, 10, 1, np.uint16), dict(rps=12, subfile=1)),
        ],
        # Aperio SVS-like: level 0, thumbnail strip, level 1, label, macro.
        "aperio_like": [
            (pattern(48, 64, 3, seed=12), dict(comp=JPEG, tile=(16, 16), description=(
                "Aperio Image Library v12.0.15 \r\n64x48 [0,0 64x48] (16x16) JPEG/RGB Q=70|AppMag = 20|"
                "StripeWidth = 16|ScanScope ID = SS1234|MPP = 0.4990|Left = 25.0|Top = 20.0"))),
            (pattern(12, 16, 3, seed=12), dict(comp=JPEG, rps=12, description=(
                "Aperio Image Library v12.0.15 \r\n64x48 -> 16x12 - |AppMag = 20|MPP = 0.4990"))),
            (pattern(24, 32, 3, seed=12), dict(comp=JPEG, tile=(16, 16), description=(
                "Aperio Image Library v12.0.15 \r\n64x48 [0,0 64x48] (16x16) -> 32x24 JPEG/RGB Q=70"))),
            (pattern(10, 10, 3, seed=13), dict(comp=LZW, rps=10, subfile=1,
                                               description="Aperio Image Library v12.0.15\r\nlabel 10x10")),
            (pattern(10, 20, 3, seed=14), dict(comp=JPEG, rps=10, subfile=9,
                                               description="Aperio Image Library v12.0.15\r\nmacro 20x10")),
        ],
    }
    for name, dirs in cases.items():
        p = os.path.join(tmp, name + ".tif")
        libtiff_file(p, dirs)
        out[name] = open(p, "rb").read()
    # BigTIFF, and a SubIFD pyramid (OME style) by libtiff: level 0 says it
    # has two SubIFDs, the next two directories written become them.
    p = os.path.join(tmp, "bigtiff.tif")
    libtiff_file(p, [(rgb, dict(comp=DEFLATE, tile=(16, 16), predictor=2))], big=True)
    out["bigtiff_deflate"] = open(p, "rb").read()
    p = os.path.join(tmp, "bigtiff_jpeg_pyramid.tif")
    libtiff_file(p, [(pattern(64, 64, 3), dict(comp=JPEG, tile=(16, 16))),
                     (pattern(32, 32, 3), dict(comp=JPEG, tile=(16, 16), subfile=1))], big=True)
    out["bigtiff_jpeg_pyramid"] = open(p, "rb").read()
    p = os.path.join(tmp, "subifd.tif")
    libtiff_file(p, [(pattern(64, 64, 1), dict(comp=LZW, tile=(16, 16), subifds=2)),
                     (pattern(32, 32, 1), dict(comp=LZW, tile=(16, 16), subfile=1)),
                     (pattern(16, 16, 1), dict(comp=LZW, tile=(16, 16), subfile=1))])
    out["subifd_lzw_pyramid"] = open(p, "rb").read()

    # tifffile: its own layout (directory before the data), big-endian, OME.
    try:
        import tifffile
        for name, kw, arr in [
            ("tifffile_bigendian_tiled", dict(tile=(16, 16), byteorder=">"), rgb),
            ("tifffile_bigtiff_deflate", dict(tile=(16, 16), bigtiff=True, compression="zlib"), g16),
            ("tifffile_f32_strips", dict(rowsperstrip=5), f32[:, :, 0]),
        ]:
            b = io.BytesIO()
            tifffile.imwrite(b, arr, **kw)
            out[name] = b.getvalue()
        b = io.BytesIO()
        with tifffile.TiffWriter(b, bigtiff=True) as tw:
            tw.write(pattern(64, 64, 3), tile=(16, 16), subifds=2, compression="zlib",
                     metadata={"axes": "YXS"}, photometric="rgb")
            tw.write(pattern(32, 32, 3), tile=(16, 16), subfiletype=1, compression="zlib", photometric="rgb")
            tw.write(pattern(16, 16, 3), tile=(16, 16), subfiletype=1, compression="zlib", photometric="rgb")
        out["tifffile_subifd_pyramid"] = b.getvalue()
        # OME-TIFF, channels one IFD each with SubIFD levels and names.
        b = io.BytesIO()
        chw = np.moveaxis(pattern(48, 40, 3, np.uint16), 2, 0).copy()
        with tifffile.TiffWriter(b, ome=True) as tw:
            tw.write(chw, tile=(16, 16), subifds=1, compression="zlib",
                     metadata={"axes": "CYX", "Channel": {"Name": ["DAPI", "CD3", "CD8"]}})
            tw.write(chw[:, ::2, ::2].copy(), tile=(16, 16), subfiletype=1, compression="zlib")
        out["tifffile_ome_channels"] = b.getvalue()
    except Exception as e:  # noqa: BLE001 - seeds are best effort
        print("make_corpus: tifffile seeds skipped: %s" % e, file=sys.stderr)

    # Our own pyramids, when a release build of the CLI is given.
    cli = os.environ.get("TW_TILEWAVE")
    if cli and os.access(cli, os.X_OK):
        for name, spec, opts in [
            ("tilewave_jpeg", "synthetic:200x150", ["--compression", "jpeg", "--quality", "50"]),
            ("tilewave_jpeg444_gray", "synthetic:160x160,gray", ["--compression", "jpeg", "--subsampling", "444"]),
            ("tilewave_zstd16", "synthetic:96x80,16bit", ["--compression", "zstd"]),
            ("tilewave_lzw", "synthetic:100x90", ["--compression", "lzw"]),
            ("tilewave_deflate_gray", "synthetic:128x100,gray", ["--compression", "deflate"]),
            ("tilewave_none", "synthetic:64x48,gray", ["--compression", "none"]),
        ]:
            p = os.path.join(tmp, name + ".tif")
            r = subprocess.run([cli, "pyramid", spec, p, "--tile", "32", "--min-size", "16", "--device", "cpu", "--no-associated"]
                               + opts, capture_output=True, text=True)
            if r.returncode == 0:
                out[name] = open(p, "rb").read()
            else:
                print("make_corpus: %s failed: %s" % (name, r.stderr.strip()), file=sys.stderr)
    elif cli:
        print("make_corpus: TW_TILEWAVE=%s is not executable; no tilewave pyramids" % cli, file=sys.stderr)
    return out


def tiff_jpeg_tiles(data):
    """(tables, first tile, photometric, tile w, h, subsampling) of a tiled JPEG TIFF, via tifffile."""
    import tifffile
    with tifffile.TiffFile(io.BytesIO(data)) as tf:
        page = tf.pages[0]
        tables = page.tags["JPEGTables"].value if "JPEGTables" in page.tags else b""
        fh = tf.filehandle
        fh.seek(page.dataoffsets[0])
        tile = fh.read(page.databytecounts[0])
        sub = page.tags["YCbCrSubSampling"].value if "YCbCrSubSampling" in page.tags else (1, 1)
        return bytes(tables), tile, int(page.photometric), page.tilewidth, page.tilelength, tuple(sub)


SIDES = [8, 16, 17, 64, 100, 256, 512]
PHOTOMETRICS = [1, 2, 6]
CHANNELS = [1, 3, 3, 3, 2, 4]
COEF_TILES = [16, 32, 64, 256]


def jpeg_seed(stream, w, h, photometric, channels, split=False, coef_components=None, coef_samp=1, merge=False):
    """fuzz_jpeg_decode's input: its parameter bytes, then the stream."""
    def idx(lst, v):
        return lst.index(v) if v in lst else 0
    flags = (1 if split else 0) | (8 if coef_components == 3 else 0) | (16 if coef_samp == 2 else 0)
    flags |= 32 if merge else 0
    head = bytes([idx(SIDES, w), idx(SIDES, h), idx(PHOTOMETRICS, photometric), idx(CHANNELS, channels), flags,
                  idx(COEF_TILES, w)])
    return head + stream


def jpeg_seeds(tiffs):
    from PIL import Image
    out = {}
    for name, (h, w, c), kw in [
        ("baseline_rgb420", (16, 16, 3), dict(quality=80, subsampling=2)),
        ("baseline_rgb444", (16, 16, 3), dict(quality=90, subsampling=0)),
        ("baseline_rgb422", (16, 17, 3), dict(quality=70, subsampling=1)),
        ("baseline_gray", (64, 64, 1), dict(quality=75)),
        ("progressive_rgb", (16, 16, 3), dict(quality=75, progressive=True)),
        ("progressive_gray", (64, 64, 1), dict(quality=60, progressive=True)),
        ("optimized_rgb", (100, 100, 3), dict(quality=30, optimize=True)),
        ("restart_rgb", (64, 64, 3), dict(quality=50, restart_marker_blocks=1)),
        ("cmyk", (16, 16, 4), dict(quality=50)),
    ]:
        arr = pattern(h, w, c, seed=w + c)
        mode = {1: "L", 3: "RGB", 4: "CMYK"}[c]
        img = Image.fromarray(arr[:, :, 0] if c == 1 else arr, mode)
        b = io.BytesIO()
        try:
            img.save(b, "JPEG", **kw)
        except (TypeError, OSError):
            kw.pop("restart_marker_blocks", None)
            img.save(b, "JPEG", **kw)
        s = b.getvalue()
        photometric = 1 if c == 1 else 6
        out[name] = jpeg_seed(s, w, h, photometric, min(c, 4), coef_components=1 if c == 1 else 3,
                              coef_samp=2 if kw.get("subsampling") == 2 else 1)
        out[name + "_split"] = jpeg_seed(s, w, h, photometric, min(c, 4), split=True, merge=True)
    # Tiles as TIFF stores them: abbreviated streams with the tables apart.
    for name in ("jpeg_ycbcr420_tiled", "jpeg_ycbcr444_tiled", "jpeg_rgb_tiled", "jpeg_gray_tiled"):
        if name not in tiffs:
            continue
        tables, tile, photometric, w, h, sub = tiff_jpeg_tiles(tiffs[name])
        channels = 1 if photometric == 1 else 3
        # fuzz_jpeg_decode splits a whole stream itself: join them back.
        whole = tables[:-2] + tile[2:] if tables.endswith(b"\xff\xd9") else tile
        out["tiff_" + name] = jpeg_seed(whole, w, h, photometric, channels, split=True,
                                        coef_components=channels, coef_samp=sub[0], merge=True)
    return out


CODECS_MODE2 = [1, 5, 32946, 8, 50000, 32773, 7, 5, 32946]
BITS_MODE2 = [8, 8, 16, 32]
PHOTO_MODE2 = [1, 2, 6, 0, 3]


def tile_codec_seeds(tiffs):
    out = {}
    rng = np.random.default_rng(1)
    smooth = pattern(32, 32, 3).tobytes()
    noise = rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
    # Mode 0: codec, type, channels-1, predictor, level, tile_w/16-1, tile_h/16-1, nx-1, ny-1, w, h, pixels.
    for ci, codec in enumerate(["none", "lzw", "deflate", "zstd"]):
        for ti, typ in enumerate(["u8", "u16", "f32"]):
            out["rt_%s_%s" % (codec, typ)] = bytes([0, ci, ti, (ci + ti) % 4, 1, 5, 1, 2, 1, 1, 7, 9]) + smooth[:1500]
    # Mode 1: how, seed bytes.
    out["lzw_raw"] = bytes([1, 0]) + smooth[:2000]
    out["lzw_noise"] = bytes([1, 1]) + noise[:64]
    out["lzw_mixed"] = bytes([1, 2]) + noise[:40] + bytes(range(0, 256, 7))
    # Mode 2: real compressed tiles of a 16x16 gray8 (or RGB) tile.
    g = pattern(16, 16, 1)
    gb = g.tobytes()

    def mode2(comp_idx, data, bits_idx=0, photo_idx=0, spp=1, pred_idx=0, tables=b""):
        flags = 16 if tables else 0
        head = bytes([2, comp_idx, pred_idx, bits_idx, photo_idx, flags, spp - 1, 0, 0, 15, 15, 0])
        if tables:
            head += struct.pack("<H", len(tables)) + tables
        return head + data

    out["m2_none"] = mode2(0, gb)
    out["m2_deflate"] = mode2(2, zlib.compress(gb))
    out["m2_deflate_pred"] = mode2(3, zlib.compress(gb), pred_idx=1)
    out["m2_packbits"] = mode2(5, bytes([127]) + gb[:128] + bytes([127]) + gb[128:256])
    try:
        import tifffile
        for name, key in [("m2_lzw", "gray8_strips_lzw"), ("m2_zstd", "rgb8_tiled_zstd")]:
            if key not in tiffs:
                continue
            with tifffile.TiffFile(io.BytesIO(tiffs[key])) as tf:
                page = tf.pages[0]
                tf.filehandle.seek(page.dataoffsets[0])
                data = tf.filehandle.read(page.databytecounts[0])
            out[name] = mode2(1 if "lzw" in name else 4, data, spp=1 if "lzw" in name else 3,
                              photo_idx=0 if "lzw" in name else 1)
        if "jpeg_ycbcr420_tiled" in tiffs:
            tables, tile, *_ = tiff_jpeg_tiles(tiffs["jpeg_ycbcr420_tiled"])
            out["m2_jpeg"] = mode2(6, tile, photo_idx=2, spp=3, tables=tables)
    except Exception as e:  # noqa: BLE001
        print("make_corpus: some tile codec seeds skipped: %s" % e, file=sys.stderr)
    # Mode 3: channels flag, subsampling flag, quality, tile, coefficient bytes.
    out["jpeg_coefs_gray"] = bytes([3, 0, 0, 75, 0]) + noise[:256]
    out["jpeg_coefs_rgb420"] = bytes([3, 1, 1, 90, 1]) + bytes(2000)
    out["jpeg_coefs_rgb444"] = bytes([3, 1, 0, 50, 0]) + noise[:512]
    return out


def spec_seeds():
    specs = [
        "16384x12288", "200x150,seed=7", "64x48,gray,16bit", "100x100,mpp=0.5", "2147483647x512,seed=18446744073709551615",
        "1G", "512M", "64MiB", "300k", "1048576", "1.5G", "4T", "jpeg", "zstd", "420", "4:4:4", "auto",
        "tiff", "openslide", "reflect101", "constant", "cuda:0", "cpu", "dilation", "erosion",
        "in.tif\0out.tif\0--tile\0512\0--memory=64M\0--compression\0zstd\0--level\09",
        "a.tif\0--quality=80\0--subsampling\0444\0--threads\02\0--device\0cpu\0--\0--tile",
        "x\0--sigma\01.5\0--factor=-2e3\0--gpu-memory\01G\0--reader\0tiff\0--method\0erosion",
        "--no-predictor\0--otsu\0--min-size\0100\0--border\0mirror\0--report\0r.json",
    ]
    # A registered op's name, then its options as NAME=VALUE.
    specs += ["gaussian\0sigma=2", "canny\0low=10\0high=30\0variant=itk", "hdome\0h=300",
              "threshold\0otsu\0value=4", "reconstruct\0method=erosion\0connectivity=6", "edt\0threshold=1e400"]
    return {"spec_%02d" % i: s.encode() for i, s in enumerate(specs)}


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        tiffs = tiff_seeds(tmp)
    sets = {
        "fuzz_tiff_source": tiffs,
        "fuzz_jpeg_decode": jpeg_seeds(tiffs),
        "fuzz_tile_codecs": tile_codec_seeds(tiffs),
        "fuzz_specs": spec_seeds(),
        "fuzz_openslide_guard": tiffs,
    }
    for target, seeds in sets.items():
        d = os.path.join(outdir, target)
        os.makedirs(d, exist_ok=True)
        kept = 0
        for name, data in sorted(seeds.items()):
            if len(data) > MAX_SEED:
                print("make_corpus: %s/%s is %d bytes, left out" % (target, name, len(data)), file=sys.stderr)
                continue
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            kept += 1
        print("make_corpus: %s: %d seeds in %s" % (target, kept, d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
