# tilewave.open / Slide.read_region against openslide-python: a pyramid
# written by `tilewave pyramid` (lossless: exact; JPEG: both decode the same
# stored tiles) and an Aperio-like SVS (tifffile-written), regions inside,
# across edges and outside, every level.
import os

import numpy as np
import pytest

import tilewave
from conftest import cli_error, first_difference, run_cli

openslide = pytest.importorskip("openslide")


def openslide_rgb(osl, loc, level, size):
    rgba = np.asarray(osl.read_region(loc, level, size))
    return rgba[..., :3], rgba[..., 3]


REGIONS = [((0, 0), (64, 64)), ((37, 11), (301, 77)), ((200, 150), (1, 1)), ((-30, -20), (90, 70)),
           ((450, 300), (200, 200)), ((5000, 5000), (10, 10)), ((17, 3), (1, 129))]


@pytest.fixture(scope="module")
def lossless_pyramid(tmp_path_factory, cli):
    path = tmp_path_factory.mktemp("slide") / "lossless.tif"
    run_cli("pyramid", "synthetic:611x431,seed=3,mpp=0.25", path, "--compression", "deflate", "--min-size", "64")
    return str(path)


@pytest.fixture(scope="module")
def jpeg_pyramid(tmp_path_factory, cli):
    """Sides that halve exactly: every level's downsample is a power of two,
    so level pixels have integer level-0 positions (openslide resamples
    between them)."""
    path = tmp_path_factory.mktemp("slide") / "jpeg.tif"
    run_cli("pyramid", "synthetic:1024x768,seed=5", path, "--quality", "85", "--min-size", "64")
    return str(path)


@pytest.fixture(scope="module")
def svs_like(tmp_path_factory):
    """An Aperio-like SVS: tiled levels without the reduced-image flag, MPP and
    AppMag in the description, a label image last (deflate: tifffile writes
    it without imagecodecs; OpenSlide's Aperio reader takes any libtiff codec)."""
    tifffile = pytest.importorskip("tifffile")
    data = pytest.importorskip("skimage.data")
    base = np.ascontiguousarray(np.tile(data.astronaut(), (1, 2, 1))[:500, :900])  # 900 x 500 RGB
    path = tmp_path_factory.mktemp("svs") / "slide.svs"
    desc = "Aperio Image Library v12.0.5\r\n900x500 [0,0 900x500] (128x128) Deflate|AppMag = 20|MPP = 0.499"
    with tifffile.TiffWriter(str(path)) as t:
        t.write(base, tile=(128, 128), photometric="rgb", compression="zlib", description=desc, metadata=None)
        half = base[::2, ::2].copy()
        t.write(half, tile=(128, 128), photometric="rgb", compression="zlib",
                description="Aperio Image Library v12.0.5\r\n900x500 -> 450x250", metadata=None)
        label = np.full((40, 60, 3), 200, np.uint8)
        t.write(label, photometric="rgb", compression="zlib", rowsperstrip=16,
                description="Aperio Image Library v12.0.5\r\nlabel 60x40", subfiletype=1, metadata=None)
    return str(path), base, half, label


def compare_with_openslide(path, levels):
    with tilewave.open(path) as s, openslide.OpenSlide(path) as o:
        assert s.dimensions == o.dimensions
        assert s.level_count == o.level_count
        assert s.level_dimensions == o.level_dimensions
        assert s.level_downsamples == pytest.approx(o.level_downsamples)
        for level in levels:
            ds = s.level_downsamples[level]
            for (x, y), size in REGIONS:
                # Positions on the level's own pixels (openslide resamples others).
                loc = (int(x * ds), int(y * ds))
                ours = s.read_region(loc, level, size)
                assert ours.dtype == np.uint8 and ours.shape == (size[1], size[0], 3)
                rgb, alpha = openslide_rgb(o, loc, level, size)
                inside = alpha == 255
                assert first_difference(np.where(inside[..., None], ours, 0), np.where(inside[..., None], rgb, 0)) == ""
                # Outside the slide: zeros, where openslide is transparent.
                assert (ours[~inside] == 0).all()
                assert inside.any() == (x < s.level_dimensions[level][0] and y < s.level_dimensions[level][1])


def test_jpeg_pyramid_equals_openslide(jpeg_pyramid):
    """Both decode the same stored JPEG tiles: identical at every level."""
    with tilewave.open(jpeg_pyramid) as s:
        assert all(d == int(d) for d in s.level_downsamples)
        compare_with_openslide(jpeg_pyramid, range(s.level_count))


def test_lossless_pyramid(lossless_pyramid):
    """Odd sides: level 0 against openslide (its levels beyond 0 are
    resampled at fractional downsamples, and OpenSlide 3.4.1 misreads this
    file's smaller deflate levels), every level against tifffile."""
    tifffile = pytest.importorskip("tifffile")
    compare_with_openslide(lossless_pyramid, [0])
    with tilewave.open(lossless_pyramid) as s, tifffile.TiffFile(lossless_pyramid) as t:
        for level in range(s.level_count):
            ref = t.pages[level].asarray()
            assert first_difference(s.read_region((0, 0), level, (ref.shape[1], ref.shape[0])), ref) == ""


def test_svs_like(svs_like):
    path, base, half, label = svs_like
    with tilewave.open(path) as s, openslide.OpenSlide(path) as o:
        assert o.properties["openslide.vendor"] == "aperio"
        assert s.dimensions == (900, 500) == o.dimensions
        assert s.level_dimensions == o.level_dimensions == ((900, 500), (450, 250))
        assert s.mpp == pytest.approx((0.499, 0.499))
        for (x, y), size in REGIONS:
            for level, ref in ((0, base), (1, half)):
                ours = s.read_region((x * 2 ** level, y * 2 ** level), level, size)
                rgb, alpha = openslide_rgb(o, (x * 2 ** level, y * 2 ** level), level, size)
                inside = alpha == 255
                assert first_difference(ours[inside], rgb[inside]) == ""
                # And the pixels tifffile wrote.
                x0, y0 = max(x, 0), max(y, 0)
                x1, y1 = min(x + size[0], ref.shape[1]), min(y + size[1], ref.shape[0])
                if x1 > x0 and y1 > y0:
                    assert first_difference(ours[y0 - y:y1 - y, x0 - x:x1 - x], ref[y0:y1, x0:x1]) == ""
        assert "label" in s.associated_images
        lab = s.associated_images["label"]  # (OpenSlide 3.4.1 lists no label for this file)
        assert first_difference(lab, label) == ""
        with pytest.raises(KeyError):
            s.associated_images["macro"]


def test_best_level_is_openslides(jpeg_pyramid):
    with tilewave.open(jpeg_pyramid) as s, openslide.OpenSlide(jpeg_pyramid) as o:
        for ds in (0.5, 1, 1.5, 2, 3, 4, 7.9, 8, 100, 1e9):
            assert s.get_best_level_for_downsample(ds) == o.get_best_level_for_downsample(ds)


def test_synthetic_and_dtypes():
    with tilewave.open("synthetic:300x200,gray,16bit,mpp=0.5") as s:
        assert s.dimensions == (300, 200)
        assert s.mpp == (0.5, 0.5)
        r = s.read_region((10, 10), 0, (20, 30))
        assert r.dtype == np.uint16 and r.shape == (30, 20, 1)
        assert r.any()
        assert isinstance(s.properties, dict)
        # The synthetic slide's label and macro, read when asked for.
        assert list(s.associated_images) == ["label", "macro"]
        assert s.associated_images["label"].ndim == 3
    with tilewave.open("synthetic:64x64") as s:
        assert s.mpp is None or len(s.mpp) == 2
        assert s.read_region((0, 0), 0, (0, 5)).shape == (5, 0, 3)


def test_closed_and_bad_arguments(lossless_pyramid):
    s = tilewave.open(lossless_pyramid)
    with pytest.raises(ValueError, match="level 9 is out of range"):
        s.read_region((0, 0), 9, (4, 4))
    with pytest.raises(ValueError, match="size"):
        s.read_region((0, 0), 0, (-1, 4))
    with pytest.raises(ValueError):
        s.read_region((0, 0), 0, (1 << 40, 4))
    with pytest.raises(TypeError):
        s.read_region((0, 0), 0, "big")
    s.close()
    assert s.closed
    with pytest.raises(ValueError, match="closed"):
        s.read_region((0, 0), 0, (4, 4))
    with pytest.raises(ValueError, match="closed"):
        s.dimensions


def test_open_errors_have_the_clis_messages(tmp_path, cli):
    missing = str(tmp_path / "nope.svs")
    with pytest.raises(FileNotFoundError) as e:
        tilewave.open(missing)
    assert str(e.value) == cli_error("info", missing)
    with pytest.raises(OSError) as e:
        tilewave.open(str(tmp_path))
    assert str(e.value) == cli_error("info", str(tmp_path))
    junk = tmp_path / "junk.tif"
    junk.write_bytes(b"II*\x00" + os.urandom(200))
    with pytest.raises(OSError) as e:
        tilewave.open(junk)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError):
        tilewave.open("synthetic:0x-5")
