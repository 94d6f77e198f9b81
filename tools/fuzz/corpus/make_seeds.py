#!/usr/bin/python3
"""Write the seed files of the hardening corpus (issue 14).

  TILEWAVE=build/tools/tilewave /usr/bin/python3 tools/fuzz/corpus/make_seeds.py OUTDIR

OUTDIR/seeds/  valid files of every kind the readers meet, each a few hundred
               pixels a side and under 1 MB, so that thousands of mutants of
               them run fast: 8/16-bit gray and RGB, RGBA, float16/32/64,
               int8/int16, uint32/uint64, 1/4/12-bit, planar separate, palette,
               2/5/40 samples, multi-page stacks, strips and tiles, none /
               deflate / LZMA / LZW / zstd / packbits / JPEG / WebP / JPEG 2000,
               big-endian, BigTIFF, reduced-resolution pyramids, OME-TIFF with
               SubIFDs, Aperio-like SVS (JPEG and JPEG 2000), vips pyramids and
               Tilewave's own pyramids.
OUTDIR/lying/  hand-made files (struct-packed, a few KB each) whose headers
               lie: 65536^2 tiles, 10^6 x 10^6 sparse images, a strip image
               4294967295 pixels wide, tiles of 2^31-1, SVS tile byte counts
               of 0xFFFFFFF0 or past the end, offsets at the header, IFD and
               SubIFD loops, BigTIFF counts of 2^62, JPEG/J2K tiles whose
               frame header claims 65500 x 65500, ...

Writers: tifffile (no imagecodecs here, so only none/deflate/LZMA), our own
tiffbytes.py (JPEG tiles with JPEGTables, J2K, odd bit depths, every lie),
Pillow's libtiff (LZW, packbits, JPEG strips), vips (pyramids, zstd, WebP,
SubIFDs) and $TILEWAVE (its own pyramids; skipped with a warning when unset
and no `tilewave` is on PATH). Everything is deterministic: same inputs, same
bytes (up to the writers' versions). Prints one line per file written.
"""
import io
import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
import tifffile
from PIL import Image
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiffbytes as tb  # noqa: E402

MAX_SEED_BYTES = 1 << 20
APERIO_HEAD = "Aperio Image Library v12.0.15 \r\n"


# ------------------------------------------------------------------ pixels

def tissue(h, w, seed=0):
    """A tissue-like RGB float image in [0, 1]: white background, pink stroma,
    purple nuclei (smoothed noise thresholded), plus fine noise."""
    rng = np.random.default_rng(seed)
    mask = ndimage.gaussian_filter(rng.random((h, w)), 12) > 0.5
    nuclei = ndimage.gaussian_filter(rng.random((h, w)), 2) > 0.56
    img = np.ones((h, w, 3)) * np.array([0.95, 0.94, 0.96])
    img[mask] = [0.90, 0.55, 0.70]
    img[mask & nuclei] = [0.40, 0.25, 0.60]
    img += rng.normal(0, 0.03, img.shape)
    return np.clip(img, 0, 1)


def as_u8(a):
    return (a * 255 + 0.5).astype(np.uint8)


def as_u16(a, bits=16):
    return (a * ((1 << bits) - 1) + 0.5).astype(np.uint16)


def gray(a):
    return a @ np.array([0.299, 0.587, 0.114])


def channels(h, w, n, seed=0):
    """n fluorescence-like channels, float in [0, 1], shape (h, w, n)."""
    rng = np.random.default_rng(seed + 100)
    out = np.empty((h, w, n))
    for c in range(n):
        out[..., c] = ndimage.gaussian_filter(rng.random((h, w)), 3 + c % 4)
    out -= out.min(axis=(0, 1))
    out /= out.max(axis=(0, 1))
    return out


def tiles_of(a, th, tw):
    """Row-major tiles of a (H, W[, C]) array, zero-padded at the edges."""
    h, w = a.shape[:2]
    for y in range(0, h, th):
        for x in range(0, w, tw):
            t = np.zeros((th, tw) + a.shape[2:], a.dtype)
            part = a[y:y + th, x:x + tw]
            t[:part.shape[0], :part.shape[1]] = part
            yield t


# ------------------------------------------------------------------ JPEG / J2K

def jpeg_bytes(a, quality=80, subsampling=2):
    b = io.BytesIO()
    Image.fromarray(a).save(b, "JPEG", quality=quality, subsampling=subsampling)
    return b.getvalue()


def jpeg_segments(data):
    """Split a JPEG into (marker, bytes-including-marker) segments up to SOS;
    the last item is the SOS segment with the entropy-coded data and EOI."""
    segs, p = [], 2
    while p + 4 <= len(data):
        marker = data[p + 1]
        length = struct.unpack_from(">H", data, p + 2)[0]
        if marker == 0xDA:
            segs.append((marker, data[p:]))
            break
        segs.append((marker, data[p:p + 2 + length]))
        p += 2 + length
    return segs


def jpeg_split(data):
    """(tables, abbreviated image): the JPEGTables a TIFF shares among tiles
    (SOI DQT DHT EOI) and the tile stream without them (SOI SOF SOS .. EOI)."""
    segs = jpeg_segments(data)
    tables = b"\xff\xd8" + b"".join(s for m, s in segs if m in (0xDB, 0xC4)) + b"\xff\xd9"
    image = b"\xff\xd8" + b"".join(s for m, s in segs if m not in (0xDB, 0xC4, 0xE0))
    return tables, image


def jpeg_set_frame(data, height, width):
    """Rewrite the SOF0/1/2 frame size of a JPEG stream (the lie)."""
    buf = bytearray(data)
    for m in (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2"):
        p = buf.find(m)
        if p >= 0:
            struct.pack_into(">HH", buf, p + 5, height, width)
            break
    return bytes(buf)


def j2k_bytes(a):
    b = io.BytesIO()
    Image.fromarray(a).save(b, "JPEG2000", no_jp2=True, irreversible=True,
                            quality_mode="rates", quality_layers=[20])
    return b.getvalue()


def j2k_set_size(data, size):
    """Rewrite the SIZ marker's image and tile sizes of a J2K codestream."""
    buf = bytearray(data)
    p = buf.find(b"\xff\x51")
    struct.pack_into(">II", buf, p + 6, size, size)        # Xsiz, Ysiz
    struct.pack_into(">II", buf, p + 22, size, size)       # XTsiz, YTsiz
    return bytes(buf)


# ------------------------------------------------------------------ tiffbytes pages

def base_ifd(w, h, spp=1, bps=8, photometric=1, compression=1, fmt=1,
             description=None, subfile=None):
    ifd = tb.Ifd()
    if subfile is not None:
        ifd.tag(tb.NEW_SUBFILE_TYPE, tb.LONG, subfile)
    ifd.tag(tb.IMAGE_WIDTH, tb.LONG, w).tag(tb.IMAGE_LENGTH, tb.LONG, h)
    ifd.tag(tb.BITS_PER_SAMPLE, tb.SHORT, [bps] * spp)
    ifd.tag(tb.COMPRESSION, tb.SHORT, compression)
    ifd.tag(tb.PHOTOMETRIC, tb.SHORT, photometric)
    ifd.tag(tb.SAMPLES_PER_PIXEL, tb.SHORT, spp)
    ifd.tag(tb.PLANAR_CONFIG, tb.SHORT, 1)
    if fmt != 1:
        ifd.tag(tb.SAMPLE_FORMAT, tb.SHORT, [fmt] * spp)
    if description is not None:
        ifd.tag(tb.IMAGE_DESCRIPTION, tb.ASCII, description)
    return ifd


def tiled(ifd, tw, th, tiles):
    ifd.tag(tb.TILE_WIDTH, tb.LONG, tw).tag(tb.TILE_LENGTH, tb.LONG, th)
    return ifd.chunks(tb.TILE_TAGS, tiles)


def striped(ifd, rows, strips):
    ifd.tag(tb.ROWS_PER_STRIP, tb.LONG, rows)
    return ifd.chunks(tb.STRIP_TAGS, strips)


def jpeg_level(rgb, tile, description=None, subfile=None, quality=80):
    """A tiled JPEG level as Aperio writes it: YCbCr 4:2:0 tiles sharing one
    JPEGTables."""
    h, w = rgb.shape[:2]
    streams = [jpeg_bytes(t, quality) for t in tiles_of(rgb, tile, tile)]
    tables = jpeg_split(streams[0])[0]
    ifd = base_ifd(w, h, 3, 8, 6, 7, description=description, subfile=subfile)
    ifd.tag(tb.YCBCR_SUBSAMPLING, tb.SHORT, [2, 2])
    ifd.tag(tb.JPEG_TABLES, tb.UNDEFINED, tables)
    return tiled(ifd, tile, tile, [jpeg_split(s)[1] for s in streams])


def aperio_desc(w, h, tile, extra="", codec="JPEG/RGB Q=80", mpp="0.25"):
    return (f"{APERIO_HEAD}{w}x{h} [0,0 {w}x{h}] ({tile}x{tile}) {extra}{codec}"
            f"|AppMag = 40|StripeWidth = 1000|ScanScope ID = SS1234"
            f"|Filename = tw-seed|Date = 01/02/26|Time = 12:00:00"
            f"|MPP = {mpp}|Left = 10.5|Top = 20.25|ImageID = 1")


def aperio_ifds(w=768, h=512, tile=128, j2k=False):
    """Level 0, thumbnail, level 1, label, macro: the order Aperio writes."""
    rgb = as_u8(tissue(h, w, seed=7))
    if j2k:
        lv0 = base_ifd(w, h, 3, 8, 2, 33005,
                       description=aperio_desc(w, h, tile, codec="J2K/KAKADU Q=70"))
        lv0 = tiled(lv0, tile, tile, [j2k_bytes(t) for t in tiles_of(rgb, tile, tile)])
    else:
        lv0 = jpeg_level(rgb, tile, aperio_desc(w, h, tile))
    small = rgb[::4, ::4]
    size = f"{small.shape[1]}x{small.shape[0]}"
    thumb = base_ifd(small.shape[1], small.shape[0], 3, 8, 2, 1,
                     description=f"{APERIO_HEAD}{w}x{h} -> {size} - |AppMag = 40|MPP = 0.25")
    thumb = striped(thumb, 16, [small[y:y + 16].tobytes() for y in range(0, small.shape[0], 16)])
    half = rgb[::2, ::2]
    desc1 = aperio_desc(w, h, tile, extra=f"-> {half.shape[1]}x{half.shape[0]} ")
    if j2k:
        lv1 = base_ifd(half.shape[1], half.shape[0], 3, 8, 2, 33005, description=desc1)
        lv1 = tiled(lv1, tile, tile, [j2k_bytes(t) for t in tiles_of(half, tile, tile)])
    else:
        lv1 = jpeg_level(half, tile, desc1)
    label = np.full((96, 96, 3), 230, np.uint8)
    label[30:60, 10:86] = 20
    # associated images: OpenSlide names them by the description's second line
    lab = base_ifd(96, 96, 3, 8, 2, 8, description=f"{APERIO_HEAD.strip()}\nlabel 96x96", subfile=1)
    lab = striped(lab, 96, [zlib.compress(label.tobytes())])
    macro = as_u8(tissue(100, 260, seed=8))
    mac = base_ifd(260, 100, 3, 8, 6, 7, description=f"{APERIO_HEAD.strip()}\nmacro 260x100", subfile=9)
    mac.tag(tb.YCBCR_SUBSAMPLING, tb.SHORT, [2, 2])
    mac = striped(mac, 100, [jpeg_bytes(macro)])
    return [lv0, thumb, lv1, lab, mac]


# ------------------------------------------------------------------ seeds

SEEDS = []


def seed(name):
    def register(fn):
        SEEDS.append((name, fn))
        return fn
    return register


def tf(path, data, **kw):
    tifffile.imwrite(path, data, metadata=None, **kw)


RGB = as_u8(tissue(240, 320))
RGB_ODD = as_u8(tissue(201, 299, seed=2))
G8 = as_u8(gray(tissue(240, 320, seed=3)))
G16 = as_u16(gray(tissue(240, 320, seed=4)))
FL = gray(tissue(192, 256, seed=5))


PALETTE = (np.stack([np.linspace(0, 1, 256) ** g for g in (0.5, 1, 2)]) * 65535).astype(np.uint16)
MB = dict(photometric="minisblack")
TILE64 = dict(tile=(64, 64))
ZIP = dict(compression="zlib")
# name, pixels, tifffile.imwrite options
TIFFFILE_SEEDS = [
    ("gray8_strips.tif", G8, dict(rowsperstrip=16)),
    ("gray8_tiles_deflate.tif", G8, dict(**TILE64, **ZIP)),
    ("gray8_miniswhite_strips.tif", 255 - G8, dict(photometric="miniswhite", rowsperstrip=40)),
    ("rgb8_strips_deflate_pred.tif", RGB, dict(rowsperstrip=32, predictor=True, **ZIP)),
    ("rgb8_tiles_odd_none.tif", RGB_ODD, TILE64),
    ("rgb8_tiles_bigendian_deflate.tif", RGB, dict(byteorder=">", **TILE64, **ZIP)),
    ("rgba8_tiles_deflate.tif", np.dstack([RGB, G8]), dict(extrasamples=["unassalpha"], **TILE64, **ZIP)),
    ("gray8_alpha_strips.tif", np.dstack([G8, 255 - G8]), dict(extrasamples=["assocalpha"], **MB)),
    ("gray16_tiles_deflate.tif", G16, dict(predictor=True, **TILE64, **ZIP)),
    ("gray16_strips_bigendian.tif", G16, dict(rowsperstrip=24, byteorder=">")),
    ("rgb16_strips.tif", as_u16(tissue(160, 200, seed=6)), dict(rowsperstrip=20)),
    ("float16_tiles.tif", FL.astype(np.float16), TILE64),
    ("float32_tiles_deflate.tif", FL.astype(np.float32), dict(**TILE64, **ZIP)),
    ("float64_strips.tif", FL[:128, :192], dict(rowsperstrip=16)),
    ("rgb_float32_tiles.tif", tissue(128, 192).astype(np.float32), dict(photometric="rgb", **TILE64)),
    ("int8_strips.tif", (G8.astype(np.int16) - 128).astype(np.int8), dict(rowsperstrip=60)),
    ("int16_tiles.tif", (G16.astype(np.int32) - 32768).astype(np.int16), TILE64),
    ("uint32_strips.tif", G16.astype(np.uint32) * 65537, dict(rowsperstrip=30)),
    ("uint64_tiles_deflate.tif", G16[:128, :128].astype(np.uint64) << 40, dict(**TILE64, **ZIP)),
    ("rgb8_planar_tiles_deflate.tif", np.moveaxis(RGB, 2, 0),
     dict(planarconfig="separate", photometric="rgb", **TILE64, **ZIP)),
    ("rgb16_planar_strips.tif", np.moveaxis(as_u16(tissue(128, 160, seed=9)), 2, 0),
     dict(planarconfig="separate", photometric="rgb", rowsperstrip=32)),
    ("palette8_strips.tif", G8, dict(photometric="palette", colormap=PALETTE, rowsperstrip=48)),
    ("ch2_uint16_tiles.tif", as_u16(channels(160, 192, 2)), dict(planarconfig="contig", **MB, **TILE64)),
    ("ch5_uint8_tiles_deflate.tif", as_u8(channels(192, 256, 5)),
     dict(planarconfig="contig", **MB, **TILE64, **ZIP)),
    ("ch5_uint16_planar_tiles.tif", np.moveaxis(as_u16(channels(128, 192, 5)), 2, 0),
     dict(planarconfig="separate", **MB, **TILE64)),
    ("ch40_uint8_tiles.tif", as_u8(channels(96, 128, 40)), dict(planarconfig="contig", tile=(32, 32), **MB)),
    ("stack_gray8_6pages.tif", np.stack([np.roll(G8, 9 * i, 1) for i in range(6)]),
     dict(rowsperstrip=64, **MB)),
    ("stack_rgb8_3pages_tiles.tif", np.stack([np.roll(RGB, 9 * i, 0) for i in range(3)]),
     dict(photometric="rgb", **TILE64, **ZIP)),
    ("lzma_rgb8_tiles.tif", RGB, dict(compression="lzma", **TILE64)),
    ("bigtiff_rgb8_tiles_deflate.tif", RGB, dict(bigtiff=True, **TILE64, **ZIP)),
    ("bigtiff_gray16_strips.tif", G16, dict(rowsperstrip=32, bigtiff=True)),
]
for _name, _pixels, _options in TIFFFILE_SEEDS:
    SEEDS.append((_name, lambda p, a=_pixels, o=_options: tf(p, a, **o)))


@seed("pyramid_rgb8_reduced_deflate.tif")
def _(p):
    a = as_u8(tissue(384, 512, seed=11))
    with tifffile.TiffWriter(p) as w:
        for i in range(3):
            w.write(a[::2 ** i, ::2 ** i], tile=(64, 64), compression="zlib",
                    subfiletype=1 if i else 0, metadata=None)


@seed("pyramid_gray16_reduced.tif")
def _(p):
    a = as_u16(gray(tissue(256, 384, seed=12)))
    with tifffile.TiffWriter(p) as w:
        for i in range(3):
            w.write(a[::2 ** i, ::2 ** i], tile=(64, 64), compression="zlib",
                    subfiletype=1 if i else 0, metadata=None)


def ome_pyramid(p, a, planes=False, **kw):
    """OME-TIFF, levels 1 and 2 in SubIFDs; planes: a is (C, H, W)."""
    with tifffile.TiffWriter(p, ome=True) as w:
        # a fixed UUID: tifffile would make a time-based one
        w.write(a, subifds=2, tile=(64, 64), compression="zlib",
                metadata={"UUID": "urn:uuid:00000000-0000-4000-8000-000000000014"}, **kw)
        for i in (1, 2):
            level = a[:, ::2 ** i, ::2 ** i] if planes else a[::2 ** i, ::2 ** i]
            w.write(level, subfiletype=1, tile=(64, 64), compression="zlib", **kw)


@seed("ome_gray16_subifds.ome.tif")
def _(p): ome_pyramid(p, as_u16(gray(tissue(256, 320, seed=13))), photometric="minisblack")
@seed("ome_rgb8_subifds.ome.tif")
def _(p): ome_pyramid(p, as_u8(tissue(256, 320, seed=14)), photometric="rgb")
@seed("ome_ch3_planes_subifds.ome.tif")
def _(p):
    ome_pyramid(p, np.moveaxis(as_u8(channels(192, 256, 3)), 2, 0), planes=True, photometric="minisblack")


# --- written byte by byte (tiffbytes)

def tbwrite(p, ifds, **kw):
    with open(p, "wb") as f:
        f.write(tb.build(ifds, **kw))


@seed("gray12_strips.tif")
def _(p):
    a = as_u16(gray(tissue(120, 160, seed=15)), 12)
    pairs = a.reshape(-1, 2).astype(np.uint32)       # two 12-bit samples -> 3 bytes
    packed = np.stack([pairs[:, 0] >> 4, ((pairs[:, 0] & 15) << 4) | (pairs[:, 1] >> 8),
                       pairs[:, 1] & 255], 1).astype(np.uint8).reshape(120, -1)
    strips = [packed[y:y + 30].tobytes() for y in range(0, 120, 30)]
    tbwrite(p, [striped(base_ifd(160, 120, 1, 12), 30, strips)], byteorder=">")


@seed("bilevel1_strips.tif")
def _(p):
    bits = np.packbits(G8 > 128, axis=1)
    strips = [bits[y:y + 60].tobytes() for y in range(0, 240, 60)]
    tbwrite(p, [striped(base_ifd(320, 240, 1, 1, photometric=0), 60, strips)])


@seed("palette4_strips.tif")
def _(p):
    idx = (G8 >> 4).astype(np.uint8)
    packed = (idx[:, 0::2] << 4) | idx[:, 1::2]
    ifd = base_ifd(320, 240, 1, 4, photometric=3)
    ifd.tag(tb.COLOR_MAP, tb.SHORT, [v * 4369 for v in range(16)] + [65535 - v * 4369 for v in range(16)]
            + [v * 2000 for v in range(16)])
    tbwrite(p, [striped(ifd, 80, [packed[y:y + 80].tobytes() for y in range(0, 240, 80)])])


@seed("rgb8_jpeg_tiles_ycbcr.tif")
def _(p): tbwrite(p, [jpeg_level(RGB_ODD, 64)])


@seed("rgb8_jpeg_tiles_selfcontained_rgb444.tif")
def _(p):
    ifd = base_ifd(320, 240, 3, 8, 2, 7)
    tbwrite(p, [tiled(ifd, 64, 64, [jpeg_bytes(t, 85, 0) for t in tiles_of(RGB, 64, 64)])])


@seed("gray8_jpeg_tiles.tif")
def _(p):
    streams = [jpeg_bytes(t) for t in tiles_of(G8, 64, 64)]
    ifd = base_ifd(320, 240, 1, 8, 1, 7).tag(tb.JPEG_TABLES, tb.UNDEFINED, jpeg_split(streams[0])[0])
    tbwrite(p, [tiled(ifd, 64, 64, [jpeg_split(s)[1] for s in streams])])


@seed("aperio_jpeg.svs")
def _(p): tbwrite(p, aperio_ifds())


@seed("aperio_j2k.svs")
def _(p): tbwrite(p, aperio_ifds(384, 256, 128, j2k=True))


# --- Pillow through libtiff (LZW, packbits, JPEG strips)

def pil(p, a, compression, **kw):
    Image.fromarray(a).save(p, "TIFF", compression=compression, **kw)


@seed("rgb8_lzw_strips_pil.tif")
def _(p): pil(p, RGB, "tiff_lzw")
@seed("gray8_packbits_strips_pil.tif")
def _(p): pil(p, G8, "packbits")
@seed("rgb8_jpeg_strips_pil.tif")
def _(p): pil(p, RGB, "jpeg", quality=80)
@seed("gray16_lzw_strips_pil.tif")
def _(p): pil(p, G16, "tiff_lzw")


# --- vips

def vips(src, dst, *args):
    subprocess.run(["vips", "tiffsave", src, dst, *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def vips_seed(name, src_key, *args):
    def fn(p):
        vips(SOURCES[src_key], p, *args)
    SEEDS.append((name, fn))


SOURCES = {}  # written into a scratch folder by main()


def vips_tiles(n):
    return ["--tile", "--tile-width", str(n), "--tile-height", str(n)]


VIPS_SEEDS = [
    ("vips_rgb8_pyramid_jpeg.tif", "rgb", "--pyramid", "--compression", "jpeg", "--Q", "80", *vips_tiles(128)),
    ("vips_rgb8_pyramid_deflate_pred.tif", "rgb", "--pyramid", "--compression", "deflate",
     "--predictor", "horizontal", *vips_tiles(128)),
    ("vips_gray16_pyramid_lzw.tif", "g16", "--pyramid", "--compression", "lzw", *vips_tiles(64)),
    ("vips_rgb8_tiles_zstd.tif", "rgb", "--compression", "zstd", *vips_tiles(64)),
    ("vips_gray8_tiles_packbits.tif", "g8", "--compression", "packbits", *vips_tiles(64)),
    ("vips_rgb8_pyramid_webp.tif", "rgb", "--pyramid", "--compression", "webp", "--Q", "70", *vips_tiles(128)),
    ("vips_rgb8_subifd_jpeg_bigtiff.tif", "rgb", "--pyramid", "--subifd", "--bigtiff", "--compression", "jpeg",
     *vips_tiles(128)),
    ("vips_float32_tiles.tif", "f32", *vips_tiles(64)),
    ("vips_rgb8_strips_lzw.tif", "rgb", "--compression", "lzw"),
    ("vips_ch5_uint8_tiles_deflate.tif", "ch5", "--compression", "deflate", *vips_tiles(64)),
]
for _v in VIPS_SEEDS:
    vips_seed(*_v)


def write_sources(tmp):
    srcs = {"rgb": as_u8(tissue(320, 480, seed=20)), "g8": G8,
            "g16": as_u16(gray(tissue(300, 400, seed=21))),
            "f32": FL.astype(np.float32), "ch5": as_u8(channels(160, 192, 5))}
    for k, a in srcs.items():
        SOURCES[k] = os.path.join(tmp, k + ".tif")
        tifffile.imwrite(SOURCES[k], a, photometric="rgb" if k == "rgb" else "minisblack",
                         planarconfig="contig", metadata=None)


# --- Tilewave's own pyramids

TW_SEEDS = [
    ("tw_rgb8_jpeg.tif", "synthetic:600x400"),
    ("tw_rgb8_deflate.tif", "synthetic:480x320,seed=2", "--compression", "deflate"),
    ("tw_gray16_deflate.tif", "synthetic:480x320,gray,16bit"),
    ("tw_gray8_zstd.tif", "synthetic:500x300,gray,seed=3", "--compression", "zstd"),
    ("tw_rgb8_lzw_tile128.tif", "synthetic:400x300,seed=4", "--compression", "lzw", "--tile", "128",
     "--min-size", "64"),
    ("tw_from_aperio.tif", "@aperio_jpeg.svs"),
]


def tilewave_seeds(binary, seeds_dir):
    for name, src, *args in TW_SEEDS:
        if src.startswith("@"):
            src = os.path.join(seeds_dir, src[1:])
        dst = os.path.join(seeds_dir, name)
        subprocess.run([binary, "pyramid", src, dst, "--threads", "1", *args], check=True,
                       stdout=subprocess.DEVNULL)
        report(dst)


# ------------------------------------------------------------------ lying headers

LYING = []


def lie(name):
    def register(fn):
        LYING.append((name, fn))
        return fn
    return register


def patched(data, fn):
    """Apply fn(buf, parsed) to a copy of data; return bytes."""
    buf = bytearray(data)
    fn(buf, tb.parse(bytes(buf)))
    return bytes(buf)


def set_all(buf, t, ifd_index, tag, value_of_index):
    e = t.ifds[ifd_index].get(tag)
    for i in range(e.count):
        tb.set_value(buf, t, e, i, value_of_index(i))


def set_tag(tag, value, ifd=0, index=0):
    """A patch for patched(): element `index` of `tag` in directory `ifd`."""
    return lambda b, t: tb.set_value(b, t, t.ifds[ifd].get(tag), index, value)


def set_count(tag, value, ifd=0):
    """A patch for patched(): the element count of `tag` (a lie)."""
    return lambda b, t: tb.set_field(b, t, t.ifds[ifd].get(tag).count_pos, 8 if t.bigtiff else 4, value)


def set_next(ifd, target):
    """A patch for patched(): the next-IFD field of directory `ifd`; target
    is a directory index or, as a string, a raw offset."""
    return lambda b, t: tb.set_field(b, t, t.ifds[ifd].next_pos, 8 if t.bigtiff else 4,
                                     int(target) if isinstance(target, str) else t.ifds[target].pos)


@lie("tile65536_rgb8_none_short.tif")
def _():
    ifd = tiled(base_ifd(65536, 65536, 3, 8, 2), 65536, 65536, [bytes(4096)])
    return tb.build([ifd])


@lie("tile65536_gray8_deflate.tif")
def _():
    z = zlib.compress(bytes(1 << 18), 9)
    return tb.build([tiled(base_ifd(131072, 65536, 1, 8, 1, 8), 65536, 65536, [z, z])])


@lie("tile65536_rgb8_jpeg.tif")
def _():
    ifd = tiled(base_ifd(65536, 65536, 3, 8, 2, 7), 65536, 65536, [jpeg_bytes(RGB)])
    return tb.build([ifd])


@lie("tile65536_ch5_u16_deflate.tif")
def _():
    z = zlib.compress(bytes(1 << 16), 9)
    return tb.build([tiled(base_ifd(65536, 65536, 5, 16, 1, 8), 65536, 65536, [z])])


@lie("huge_1e6_sparse_tiles16384.tif")
def _():
    n = (-(-1000000 // 16384)) ** 2
    return tb.build([tiled(base_ifd(1000000, 1000000, 3, 8, 2, 8), 16384, 16384, [b""] * n)])


@lie("huge_1e6_tiles256_count1.tif")
def _():
    # one tile where 3907^2 are needed
    ifd = tiled(base_ifd(1000000, 1000000, 3, 8, 2, 8), 256, 256, [zlib.compress(bytes(256 * 256 * 3))])
    return tb.build([ifd])


@lie("huge_1e6_onestrip_sparse.tif")
def _():
    return tb.build([striped(base_ifd(1000000, 1000000, 1, 8), 1000000, [b""])])


@lie("huge_1e6_onestrip_deflate.tif")
def _():
    z = zlib.compress(bytes(1 << 20), 9)
    return tb.build([striped(base_ifd(1000000, 1000000, 3, 8, 2, 8), 1000000, [z])])


@lie("wide_4294967295_gray8_strips.tif")
def _():
    return tb.build([striped(base_ifd(4294967295, 4, 1, 8), 1, [bytes(1000)] * 4)])


@lie("wide_4294967295_rgb8_deflate_strips.tif")
def _():
    z = zlib.compress(bytes(1 << 16))
    return tb.build([striped(base_ifd(4294967295, 2, 3, 8, 2, 8), 1, [z, z])])


def tile2g(spp, bps, tw, th, w=512, h=512, photometric=1, compression=8, fmt=1):
    """One tile of tw x th (near 2**31) over a small image: a reader that
    sizes its tile buffer from the header asks for up to 2**62 bytes."""
    data = zlib.compress(bytes(w * min(h, 512) * spp * bps // 8)) if compression == 8 else bytes(4096)
    ifd = base_ifd(w, h, spp, bps, photometric, compression, fmt=fmt)
    return tb.build([tiled(ifd, tw, th, [data])])


M31 = 2 ** 31 - 1


@lie("tile2g_gray16.tif")
def _(): return tile2g(1, 16, M31, M31)
@lie("tile2g_mult16_gray16.tif")
def _(): return tile2g(1, 16, 2147483632, 2147483632)
@lie("tile_16x2g_gray16.tif")
def _(): return tile2g(1, 16, 16, M31, w=16)
@lie("tile_16x2g_int16.tif")
def _(): return tile2g(1, 16, 16, M31, w=16, fmt=2)
@lie("tile_16x2g_ch5_u8.tif")
def _(): return tile2g(5, 8, 16, M31, w=16)
@lie("tile_16x2g_ch40_u8.tif")
def _(): return tile2g(40, 8, 16, M31, w=16)
@lie("tile_2gx1_ch5_u8.tif")
def _(): return tile2g(5, 8, M31, 1, h=1)
@lie("tile2g_ch5_u8.tif")
def _(): return tile2g(5, 8, M31, M31)
@lie("tile2g_ch40_u8.tif")
def _(): return tile2g(40, 8, M31, M31)
@lie("tile2g_rgb8_none.tif")
def _(): return tile2g(3, 8, 2147483632, 2147483632, photometric=2, compression=1)
@lie("tile4g_gray8.tif")
def _(): return tile2g(1, 8, 2 ** 32 - 1, 2 ** 32 - 1)
@lie("tile65536_gray16_deflate.tif")
def _(): return tile2g(1, 16, 65536, 65536)


def aperio_lie(fn):
    return patched(tb.build(aperio_ifds()), fn)


@lie("svs_bytecounts_fffffff0.svs")
def _(): return aperio_lie(lambda b, t: set_all(b, t, 0, tb.TILE_BYTE_COUNTS, lambda i: 0xFFFFFFF0))
@lie("svs_one_bytecount_fffffff0.svs")
def _(): return aperio_lie(set_tag(tb.TILE_BYTE_COUNTS, 0xFFFFFFF0, index=5))
@lie("svs_level1_bytecounts_7fffffff.svs")
def _(): return aperio_lie(lambda b, t: set_all(b, t, 2, tb.TILE_BYTE_COUNTS, lambda i: 0x7FFFFFFF))
@lie("svs_offsets_past_eof.svs")
def _(): return aperio_lie(lambda b, t: set_all(b, t, 0, tb.TILE_OFFSETS, lambda i: len(b) + 1000 * i))
@lie("svs_offsets_at_header.svs")
def _(): return aperio_lie(lambda b, t: set_all(b, t, 0, tb.TILE_OFFSETS, lambda i: (0, 8)[i % 2]))
@lie("svs_jpegtables_count_huge.svs")
def _(): return aperio_lie(set_count(tb.JPEG_TABLES, 0x7FFFFFFF))
@lie("svs_tile2g.svs")
def _():
    def f(b, t):
        for tag in (tb.TILE_WIDTH, tb.TILE_LENGTH):
            tb.set_value(b, t, t.ifds[0].get(tag), 0, 2147483647)
    return aperio_lie(f)
@lie("svs_thumbnail_strip_huge.svs")
def _():
    def f(b, t):
        tb.set_value(b, t, t.ifds[1].get(tb.IMAGE_WIDTH), 0, 200000)
        tb.set_value(b, t, t.ifds[1].get(tb.IMAGE_LENGTH), 0, 200000)
        tb.set_value(b, t, t.ifds[1].get(tb.ROWS_PER_STRIP), 0, 200000)
    return aperio_lie(f)
@lie("svs_label_huge.svs")
def _():
    def f(b, t):
        for tag in (tb.IMAGE_WIDTH, tb.IMAGE_LENGTH, tb.ROWS_PER_STRIP):
            tb.set_value(b, t, t.ifds[3].get(tag), 0, 1000000)
    return aperio_lie(f)


@lie("svs_j2k_siz_65500.svs")
def _():
    ifds = aperio_ifds(384, 256, 128, j2k=True)
    ifds[0].chunk_data = [j2k_set_size(c, 65500) for c in ifds[0].chunk_data]
    return tb.build(ifds)


@lie("svs_j2k_bytecounts_fffffff0.svs")
def _():
    return patched(tb.build(aperio_ifds(384, 256, 128, j2k=True)),
                   lambda b, t: set_all(b, t, 0, tb.TILE_BYTE_COUNTS, lambda i: 0xFFFFFFF0))


def small_rgb_tiled(n=2):
    return [tiled(base_ifd(128, 128, 3, 8, 2, 8), 64, 64,
                  [zlib.compress(t.tobytes()) for t in tiles_of(RGB[:128, :128], 64, 64)]) for _ in range(n)]


@lie("ifd_loop_self.tif")
def _():
    return patched(tb.build(small_rgb_tiled(1)), set_next(0, 0))
@lie("ifd_loop_pair.tif")
def _():
    return patched(tb.build(small_rgb_tiled(2)), set_next(1, 0))
@lie("ifd_next_at_header.tif")
def _():
    return patched(tb.build(small_rgb_tiled(1)), set_next(0, "4"))
@lie("ifd_first_at_odd_header.tif")
def _():
    return patched(tb.build(small_rgb_tiled(1)), lambda b, t: tb.set_field(b, t, t.first_pos, 4, 1))


def with_subifd():
    """A 128^2 tiled RGB directory with one 64^2 reduced level in a SubIFD."""
    main = small_rgb_tiled(1)[0]
    sub = base_ifd(64, 64, 3, 8, 2, 8, subfile=1)
    main.subifds = [tiled(sub, 64, 64, [zlib.compress(RGB[:64, :64].tobytes())])]
    return main


@lie("subifd_loop_parent.tif")
def _():
    # the SubIFD offset points back at directory 0
    return patched(tb.build([with_subifd()]), lambda b, t: set_tag(tb.SUB_IFDS, t.ifds[0].pos)(b, t))


@lie("subifd_chain_loop.ome.tif")
def _():
    main = with_subifd()
    main.tag(tb.IMAGE_DESCRIPTION, tb.ASCII, OME_XML)
    # the SubIFD's next-IFD field points back at itself
    return patched(tb.build([main]), set_next(1, 1))


OME_XML = ('<?xml version="1.0" encoding="UTF-8"?>'
           '<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0">'
           '<Pixels ID="Pixels:0" DimensionOrder="XYCZT" Type="uint8" SizeX="128" SizeY="128" '
           'SizeC="3" SizeZ="1" SizeT="1"><Channel ID="Channel:0" SamplesPerPixel="3"/><TiffData/>'
           '</Pixels></Image></OME>')


@lie("subifd_count_huge.tif")
def _():
    main = with_subifd()
    return patched(tb.build([main]), set_count(tb.SUB_IFDS, 0xFFFFFFFF))


@lie("bigtiff_strip_count_2p62.tif")
def _():
    data = tb.build([striped(base_ifd(256, 64, 1, 8), 16, [bytes(4096)] * 4)], bigtiff=True)
    def f(b, t):
        for tag in tb.STRIP_TAGS:
            tb.set_field(b, t, t.ifds[0].get(tag).count_pos, 8, 1 << 62)
    return patched(data, f)


@lie("bigtiff_description_count_2p40.tif")
def _():
    ifd = striped(base_ifd(256, 64, 1, 8, description="hello " * 10), 64, [bytes(256 * 64)])
    return patched(tb.build([ifd], bigtiff=True),
                   lambda b, t: tb.set_field(b, t, t.ifds[0].get(tb.IMAGE_DESCRIPTION).count_pos, 8, 1 << 40))


@lie("bigtiff_entry_count_2p60.tif")
def _():
    ifd = striped(base_ifd(256, 64, 1, 8), 64, [bytes(256 * 64)])
    return patched(tb.build([ifd], bigtiff=True), lambda b, t: tb.set_field(b, t, t.ifds[0].pos, 8, 1 << 60))


@lie("bigtiff_tile_counts_2p63.tif")
def _():
    def f(b, t):
        tb.set_field(b, t, t.ifds[0].get(tb.TILE_OFFSETS).count_pos, 8, (1 << 63) + 4)
        tb.set_field(b, t, t.ifds[0].get(tb.TILE_BYTE_COUNTS).count_pos, 8, (1 << 64) - 1)
    return patched(tb.build(small_rgb_tiled(1), bigtiff=True), f)


def jpeg_tiled(sof, tables=True):
    streams = [jpeg_bytes(t) for t in tiles_of(RGB_ODD, 64, 64)]
    if tables:
        ifd = base_ifd(299, 201, 3, 8, 6, 7).tag(tb.JPEG_TABLES, tb.UNDEFINED, jpeg_split(streams[0])[0])
        ifd.tag(tb.YCBCR_SUBSAMPLING, tb.SHORT, [2, 2])
        chunks = [jpeg_split(s)[1] for s in streams]
    else:
        ifd, chunks = base_ifd(299, 201, 3, 8, 6, 7), streams
    return tb.build([tiled(ifd, 64, 64, [jpeg_set_frame(c, *sof) for c in chunks])])


@lie("jpeg_sof_65500.tif")
def _(): return jpeg_tiled((65500, 65500))
@lie("jpeg_sof_65500_selfcontained.tif")
def _(): return jpeg_tiled((65500, 65500), tables=False)
@lie("jpeg_sof_0x0.tif")
def _(): return jpeg_tiled((0, 0))
@lie("svs_jpeg_sof_65500.svs")
def _():
    ifds = aperio_ifds()
    ifds[0].chunk_data = [jpeg_set_frame(c, 65500, 65500) for c in ifds[0].chunk_data]
    return tb.build(ifds)


@lie("jpeg_tables_sof_65500_in_tables.tif")
def _():
    streams = [jpeg_bytes(t) for t in tiles_of(RGB_ODD, 64, 64)]
    tables = jpeg_split(streams[0])[0]
    sof = [s for m, s in jpeg_segments(jpeg_set_frame(streams[0], 65500, 65500)) if m == 0xC0][0]
    tables = tables[:-2] + sof + b"\xff\xd9"
    ifd = base_ifd(299, 201, 3, 8, 6, 7).tag(tb.JPEG_TABLES, tb.UNDEFINED, tables)
    ifd.tag(tb.YCBCR_SUBSAMPLING, tb.SHORT, [2, 2])
    return tb.build([tiled(ifd, 64, 64, [jpeg_split(s)[1] for s in streams])])


def one_strip(w=256, h=64):
    """A valid 8-bit gray image in one uncompressed strip, to patch."""
    return tb.build([striped(base_ifd(w, h, 1, 8), h, [bytes(w * h)])])


@lie("bits64_u8data.tif")
def _(): return patched(one_strip(), set_tag(tb.BITS_PER_SAMPLE, 64))
@lie("bits_65535.tif")
def _(): return patched(one_strip(), set_tag(tb.BITS_PER_SAMPLE, 65535))
@lie("spp_65535.tif")
def _(): return patched(one_strip(), set_tag(tb.SAMPLES_PER_PIXEL, 65535))
@lie("rowsperstrip_0.tif")
def _(): return patched(one_strip(), set_tag(tb.ROWS_PER_STRIP, 0))
@lie("width_0.tif")
def _(): return patched(one_strip(), set_tag(tb.IMAGE_WIDTH, 0))
@lie("strip_offset_at_ifd.tif")
def _(): return patched(one_strip(), lambda b, t: set_tag(tb.STRIP_OFFSETS, t.ifds[0].pos)(b, t))
@lie("strip_bytecount_fffffff0.tif")
def _(): return patched(one_strip(), set_tag(tb.STRIP_BYTE_COUNTS, 0xFFFFFFF0))


@lie("colormap_count_3.tif")
def _():
    ifd = striped(base_ifd(256, 64, 1, 8, 3), 64, [bytes(256 * 64)])
    ifd.tag(tb.COLOR_MAP, tb.SHORT, [0] * 768)
    return patched(tb.build([ifd]), set_count(tb.COLOR_MAP, 3))


@lie("planar_counts_one_plane.tif")
def _():
    ifd = base_ifd(128, 128, 3, 8, 2, 8)
    ifd.tag(tb.PLANAR_CONFIG, tb.SHORT, 2)
    return tb.build([tiled(ifd, 64, 64, [zlib.compress(bytes(64 * 64))] * 4)])


@lie("tile_width_17.tif")
def _():
    ifd = base_ifd(128, 128, 3, 8, 2, 8)
    return tb.build([tiled(ifd, 17, 17, [zlib.compress(bytes(17 * 17 * 3))] * 64)])


@lie("ycbcr_subsampling_3x5_jpeg.tif")
def _():
    def f(b, t):
        set_tag(tb.YCBCR_SUBSAMPLING, 3, index=0)(b, t)
        set_tag(tb.YCBCR_SUBSAMPLING, 5, index=1)(b, t)
    return patched(jpeg_tiled((64, 64)), f)


@lie("pyramid_level1_larger.tif")
def _():
    # a "reduced-resolution" directory 1000x the size of level 0, sparse
    lv0 = small_rgb_tiled(1)[0]
    lv1 = tiled(base_ifd(128000, 128000, 3, 8, 2, 8, subfile=1), 32000, 32000, [b""] * 16)
    return tb.build([lv0, lv1])


@lie("rgb8_tiles_bps16_declared.tif")
def _():
    # data written as 8-bit, header says 16-bit (every tile too short)
    ifd = tiled(base_ifd(128, 128, 3, 8, 2), 64, 64, [t.tobytes() for t in tiles_of(RGB[:128, :128], 64, 64)])
    return patched(tb.build([ifd]), lambda b, t: set_all(b, t, 0, tb.BITS_PER_SAMPLE, lambda i: 16))


# ------------------------------------------------------------------ main

def report(path):
    size = os.path.getsize(path)
    flag = "  (over 1 MB!)" if size > MAX_SEED_BYTES else ""
    print(f"{size:9d}  {path}{flag}")


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: make_seeds.py OUTDIR   (TILEWAVE=path/to/tilewave for its own pyramids)")
    out = sys.argv[1]
    seeds_dir, lying_dir = os.path.join(out, "seeds"), os.path.join(out, "lying")
    scratch = os.path.join(out, ".sources")
    for d in (seeds_dir, lying_dir, scratch):
        os.makedirs(d, exist_ok=True)
    write_sources(scratch)
    for name, fn in SEEDS:
        path = os.path.join(seeds_dir, name)
        fn(path)
        report(path)
    shutil.rmtree(scratch)
    binary = os.environ.get("TILEWAVE") or shutil.which("tilewave")
    if binary:
        tilewave_seeds(binary, seeds_dir)
    else:
        print("warning: no TILEWAVE set and no tilewave on PATH: Tilewave's own pyramids left out",
              file=sys.stderr)
    for name, fn in LYING:
        path = os.path.join(lying_dir, name)
        with open(path, "wb") as f:
            f.write(fn())
        report(path)


if __name__ == "__main__":
    main()
