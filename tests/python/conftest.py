# Shared fixtures of the Python bindings' tests (docs/python.md): the CLI to
# compare with (TW_CLI, set by tests/python/CMakeLists.txt), test images,
# and helpers that write arrays as TIFFs and read the CLI's results back.
import os
import subprocess

import numpy as np
import pytest

tifffile = pytest.importorskip("tifffile")
import tilewave  # noqa: E402

CLI = os.environ.get("TW_CLI", "")


@pytest.fixture(scope="session")
def cli():
    if not CLI or not os.access(CLI, os.X_OK):
        pytest.skip("TW_CLI does not name the tilewave binary")
    return CLI


def run_cli(*args, ok=True):
    r = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                       env=dict(os.environ, TW_PROGRESS="0"))
    if ok and r.returncode != 0:
        raise AssertionError("tilewave %s failed: %s" % (" ".join(map(str, args)), r.stderr))
    return r


def cli_error(*args):
    """The one line the CLI prints for a failing command, without its prefix."""
    r = run_cli(*args, ok=False)
    assert r.returncode != 0, r.stdout
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("tilewave: error: "), r.stderr
    return line[len("tilewave: error: "):]


def write_tiff(path, a, tile=64):
    """An array as a tiled, uncompressed TIFF the CLI reads as it is."""
    photometric = "rgb" if a.ndim == 3 and a.shape[2] == 3 else "minisblack"
    tifffile.imwrite(str(path), a, tile=(tile, tile), photometric=photometric,
                     planarconfig="contig" if a.ndim == 3 else None)
    return str(path)


def read_tiff(path):
    with tifffile.TiffFile(str(path)) as t:
        return t.pages[0].asarray()


def cli_op(tmp_path, words, images, options=()):
    """The CLI's result of an op (words: its command, e.g. ["filter",
    "gaussian"]) on arrays, written losslessly and read back."""
    paths = [write_tiff(tmp_path / ("in%d.tif" % k), a) for k, a in enumerate(images)]
    out = tmp_path / "out.tif"
    run_cli(*words, *paths, out, "--compression", "deflate", *options)
    return read_tiff(out)


class DlpackOnly:
    """Another library's tensor, seen only through DLPack (no numpy or CUDA
    array interface): wraps any array that exports DLPack."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def first_difference(a, b):
    """'' when equal, else where and how they differ (first (x, y), both values, the count)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return "shapes differ: %s vs %s" % (a.shape, b.shape)
    d = a != b
    if not d.any():
        return ""
    idx = np.argwhere(d)[0]
    return "first difference at (x=%d, y=%d): %r vs %r, %d values differ" % (
        idx[1], idx[0], a[tuple(idx)], b[tuple(idx)], int(d.sum()))


@pytest.fixture(scope="session")
def camera():
    data = pytest.importorskip("skimage.data")
    return np.ascontiguousarray(data.camera())


@pytest.fixture(scope="session")
def ihc():
    data = pytest.importorskip("skimage.data")
    return np.ascontiguousarray(data.immunohistochemistry())


@pytest.fixture(scope="session")
def blobs_mask():
    """A binary 0/255 mask of round blobs with holes, odd-sized (301 x 257)."""
    ndi = pytest.importorskip("scipy.ndimage")
    rng = np.random.default_rng(7)
    m = ndi.gaussian_filter(rng.random((257, 301)), 6) > 0.52
    m[100:140, 100:140] = True
    m[115:125, 115:125] = False  # a hole
    return (m * 255).astype(np.uint8)
