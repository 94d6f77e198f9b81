# tilewave.ops: every op category equal to the CLI's result on the same
# pixels (one engine, two front ends), and to scipy / OpenCV / scikit-image
# where the op suite compares; parameters checked as on the command line.
import numpy as np
import pytest

import tilewave
from conftest import DlpackOnly, cli_error, cli_op, first_difference, read_tiff, run_cli, write_tiff

ndi = pytest.importorskip("scipy.ndimage")


def words(fn):
    return [t for t in tilewave._tilewave._op_table() if t["name"] == fn.registry_name][0]["command"]


def marker_of(img):
    return np.maximum(img.astype(np.int16) - 40, 0).astype(np.uint8)


# (op, images(fixtures), keywords, CLI options): point, neighbourhood,
# whole-image, two-input, label and watershed, a reduction.
CASES = [
    ("invert", lambda f: [f["camera"]], {}, []),
    ("threshold", lambda f: [f["camera"]], {"value": 100}, ["--value", "100"]),
    ("gray", lambda f: [f["ihc"]], {}, []),
    ("gaussian", lambda f: [f["ihc"][:301, :257]], {"sigma": 2.5}, ["--sigma", "2.5"]),
    ("sobel", lambda f: [f["camera"][3:260, 5:306]], {}, []),
    ("erode", lambda f: [f["camera"]], {"radius": 3, "shape": "square"}, ["--radius", "3", "--shape", "square"]),
    ("threshold", lambda f: [f["camera"]], {"otsu": True}, ["--otsu"]),
    ("fill_holes", lambda f: [f["mask"]], {}, []),
    ("edt", lambda f: [f["mask"]], {}, []),
    ("hdome", lambda f: [f["camera"]], {"h": 20}, ["--h", "20"]),
    ("reconstruct", lambda f: [marker_of(f["camera"]), f["camera"]], {}, []),
    ("max", lambda f: [f["camera"], f["camera"][::-1].copy()], {}, []),
    ("label", lambda f: [f["mask"]], {"connectivity": 4}, ["--connectivity", "4"]),
    ("objects", lambda f: [f["mask"]], {"min_area": 50, "exclude_border": True}, ["--min-area", "50",
                                                                                  "--exclude-border"]),
    # The rest of the registry, so that every op is compared once.
    ("brightness", lambda f: [f["camera"]], {"add": -30}, ["--add", "-30"]),
    ("contrast", lambda f: [f["ihc"]], {"factor": 1.5, "center": 100.0}, ["--factor", "1.5", "--center", "100.0"]),
    ("gamma", lambda f: [f["camera"]], {"gamma": 0.5}, ["--gamma", "0.5"]),
    ("dilate", lambda f: [f["camera"][:301, :257]], {"radius": 4}, ["--radius", "4"]),
    ("canny", lambda f: [f["camera"]], {"sigma": 1.4, "low": 20, "high": 60}, ["--sigma", "1.4", "--low", "20",
                                                                              "--high", "60"]),
    ("hed", lambda f: [f["ihc"]], {}, []),
    ("channel", lambda f: [f["ihc"]], {"index": 2}, ["--index", "2"]),
    ("convert", lambda f: [f["camera"]], {"type": "f32", "from_": 10, "to": 200}, ["--type", "f32", "--from", "10",
                                                                                   "--to", "200"]),
    ("subtract", lambda f: [f["camera"], f["camera"].T.copy()], {}, []),
    ("min", lambda f: [f["camera"], f["camera"][::-1].copy()], {}, []),
    ("mask", lambda f: [f["camera"][:257, :301], f["mask"]], {}, []),
    ("overlay", lambda f: [f["ihc"][:257, :301], tilewave.ops.label(f["mask"])], {}, []),
]


@pytest.fixture(scope="module")
def images(camera, ihc, blobs_mask):
    return {"camera": camera, "ihc": ihc, "mask": blobs_mask}


@pytest.mark.parametrize("name,make,kwargs,options", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_equals_the_cli(name, make, kwargs, options, images, tmp_path, cli):
    fn = getattr(tilewave.ops, name)
    arrays = make(images)
    ours = fn(*arrays, **kwargs)
    theirs = cli_op(tmp_path, words(fn), arrays, options)
    if theirs.ndim == 3 and theirs.shape[2] == 1:
        theirs = theirs[..., 0]
    assert ours.dtype == theirs.dtype
    assert first_difference(ours, theirs) == ""


def test_every_op_is_compared():
    compared = {c[0] for c in CASES} | {"watershed", "stats"}
    assert {t["pyname"] for t in tilewave._tilewave._op_table()} <= compared


def test_watershed_equals_the_cli(blobs_mask, tmp_path, cli):
    dist = tilewave.ops.edt(blobs_mask)
    img = (255 - np.clip(dist * 8, 0, 255)).astype(np.uint8)
    markers = tilewave.ops.label(((dist > 6) * 255).astype(np.uint8))
    ours = tilewave.ops.watershed(img, markers, mask=blobs_mask)
    paths = [tmp_path / "img.tif", tmp_path / "markers.tif", tmp_path / "mask.tif"]
    for p, a in zip(paths, (img, markers, blobs_mask)):
        write_tiff(p, a)
    run_cli("watershed", paths[0], paths[1], tmp_path / "out.tif", "--mask", paths[2])
    assert first_difference(ours, read_tiff(tmp_path / "out.tif")) == ""
    assert ours.dtype == np.uint32 and (ours[blobs_mask == 0] == 0).all()


def test_reduction_is_a_dict(ihc, tmp_path, cli):
    import json
    from conftest import run_cli, write_tiff
    stats = tilewave.ops.stats(ihc)
    assert isinstance(stats, dict)
    out = run_cli("stats", write_tiff(tmp_path / "ihc.tif", ihc)).stdout
    theirs = json.loads(out)
    assert stats.pop("input") == "input" and theirs.pop("input").endswith("ihc.tif")
    assert stats == theirs


def test_against_scipy_and_opencv(camera, blobs_mask):
    # edt: exact Euclidean distances to the nearest 0 pixel.
    ref = ndi.distance_transform_edt(blobs_mask > 0)
    assert np.abs(tilewave.ops.edt(blobs_mask) - ref).max() < 1e-4
    # label: the same partition, numbered in raster order as scipy does.
    ours = tilewave.ops.label(blobs_mask)
    theirs, n = ndi.label(blobs_mask > 0, structure=np.ones((3, 3)))
    assert ours.max() == n and first_difference(ours, theirs.astype(np.uint32)) == ""
    # fill_holes: scipy's binary_fill_holes (4-connected background).
    filled = tilewave.ops.fill_holes(blobs_mask)
    assert first_difference(filled > 0, ndi.binary_fill_holes(blobs_mask > 0)) == ""
    # gaussian: OpenCV's GaussianBlur (kernel 2*ceil(3 sigma)+1, reflect-101),
    # within one level, under 1% of pixels off (the op suite's tolerance).
    cv2 = pytest.importorskip("cv2")
    for sigma in (0.5, 2.0, 4.5):
        k = 2 * int(np.ceil(3 * sigma)) + 1
        ref = cv2.GaussianBlur(camera.astype(np.float32), (k, k), sigma, sigmaY=sigma,
                               borderType=cv2.BORDER_REFLECT_101)
        ref = np.clip(np.floor(ref + 0.5), 0, 255).astype(np.uint8)
        d = np.abs(tilewave.ops.gaussian(camera, sigma=sigma).astype(int) - ref)
        assert d.max() <= 1 and (d > 0).sum() < camera.size / 100


def test_array_layouts_and_dtypes(camera, ihc):
    ref = tilewave.ops.gaussian(ihc, sigma=1.5)
    # Not C-contiguous: a slice with a step, a Fortran copy, a reversed view.
    assert first_difference(tilewave.ops.gaussian(np.asfortranarray(ihc), sigma=1.5), ref) == ""
    assert first_difference(tilewave.ops.gaussian(ihc[:, ::2], sigma=1.5),
                            tilewave.ops.gaussian(ihc[:, ::2].copy(), sigma=1.5)) == ""
    assert first_difference(tilewave.ops.invert(camera[::-1]), 255 - camera[::-1]) == ""
    # A column of a larger array (rows in order, pixels contiguous): read in place.
    wide = np.zeros((100, 300), np.uint8)
    wide[:, 100:200] = camera[:100, :100]
    assert first_difference(tilewave.ops.invert(wide[:, 100:200]), 255 - camera[:100, :100]) == ""
    # H x W x 1 gives H x W; 1 x N and N x 1 images.
    assert tilewave.ops.invert(camera[..., None]).shape == camera.shape
    assert first_difference(tilewave.ops.gaussian(camera[:1], sigma=1), tilewave.ops.gaussian(camera[:1].copy(), sigma=1)) == ""
    assert tilewave.ops.gaussian(camera[:, :1], sigma=1).shape == (512, 1)
    # Other sample types: 16-bit, float and int32 in.
    wide16 = (camera > 100).astype(np.uint16) * 1000
    assert first_difference(tilewave.ops.label(wide16), tilewave.ops.label((camera > 100).astype(np.uint8))) == ""
    assert tilewave.ops.edt(camera.astype(np.float32)).dtype == np.float32
    assert tilewave.ops.label(camera.astype(np.int32)).dtype == np.uint32
    # Array-likes go through np.asarray (lists give int64: refused below).
    assert tilewave.ops.invert(np.asarray([[0, 255]], np.uint8)).tolist() == [[255, 0]]


def test_bad_input_raises(camera, tmp_path, cli):
    g = tilewave.ops.gaussian
    # Parameters: the CLI's messages, as ValueError.
    p = write_tiff(tmp_path / "c.tif", camera)
    for kwargs, opts in [({"sigma": -1}, ["--sigma", "-1"]), ({"sigma": "x"}, ["--sigma", "x"]),
                         ({"sigma": 1e300}, ["--sigma", "1e+300"]), ({}, [])]:
        with pytest.raises(ValueError) as e:
            g(camera, **kwargs)
        assert str(e.value) == cli_error("filter", "gaussian", p, tmp_path / "o.tif", *opts)
    with pytest.raises(ValueError) as e:
        tilewave.ops.erode(camera, radius=2, shape="round")
    assert str(e.value) == cli_error("filter", "erode", p, tmp_path / "o.tif", "--radius", "2", "--shape", "round")
    with pytest.raises(ValueError):
        tilewave.ops.threshold(camera, otsu="yes")
    with pytest.raises(ValueError) as e:
        g(camera, sigma=1, tile=100)
    assert "multiple of 16" in str(e.value)
    with pytest.raises(ValueError):
        g(camera, sigma=1, memory="lots")
    with pytest.raises(ValueError):
        g(camera, sigma=1, device="tpu")
    # Python's own mistakes: TypeError.
    with pytest.raises(TypeError):
        g(camera, sigmaa=1)
    with pytest.raises(TypeError):
        g()
    with pytest.raises(TypeError):
        tilewave.ops.reconstruct(camera)
    # Arrays the engine cannot take: ValueError naming the argument.
    for bad in (camera.astype(np.float64), camera.astype(bool), camera.astype(">u2"), np.zeros((0, 5), np.uint8),
                np.zeros((2, 3, 4, 5), np.uint8), np.zeros(7, np.uint8), np.zeros((4, 4, 0), np.uint8),
                [[1, 2]], "camera.png"):
        with pytest.raises(ValueError, match="input"):
            g(bad, sigma=1)
    # Wrong pixel types for the op, mismatched sizes: the engine's messages.
    with pytest.raises(ValueError):
        tilewave.ops.fill_holes(np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(ValueError):
        tilewave.ops.reconstruct(camera, camera[:100])
    with pytest.raises(ValueError):
        tilewave.ops.watershed(camera, camera.astype(np.uint32), mask=camera[:10])


def test_docstrings_and_signatures():
    import inspect
    sig = inspect.signature(tilewave.ops.watershed)
    assert list(sig.parameters)[:2] == ["image", "markers"] and "mask" in sig.parameters
    assert "sigma" in tilewave.ops.gaussian.__doc__ and "tilewave filter gaussian" in tilewave.ops.gaussian.__doc__
    assert "from_" in inspect.signature(tilewave.ops.convert).parameters
    names = {t["pyname"] for t in tilewave._tilewave._op_table()}
    assert names == set(tilewave.ops.__all__) and {"gaussian", "fill_holes", "edt", "label", "watershed"} <= names


def cuda_or_skip():
    try:
        tilewave.ops.invert(np.zeros((4, 4), np.uint8), device="cuda")
    except ValueError as e:  # the CLI's usage error for --device cuda without one
        pytest.skip("no CUDA device: %s" % e)


def test_cuda_equals_cpu(camera, blobs_mask):
    cuda_or_skip()
    for name, args, kwargs in [("gaussian", [camera], {"sigma": 2}), ("edt", [blobs_mask], {}),
                               ("label", [blobs_mask], {}), ("fill_holes", [blobs_mask], {}),
                               ("reconstruct", [marker_of(camera), camera], {})]:
        fn = getattr(tilewave.ops, name)
        assert first_difference(fn(*args, device="cuda", **kwargs), fn(*args, device="cpu", **kwargs)) == "", name


def test_cupy_arrays_in_and_out(camera):
    cupy = pytest.importorskip("cupy")
    cuda_or_skip()
    out = tilewave.ops.gaussian(cupy.asarray(camera), sigma=2, device="cuda")
    assert isinstance(out, cupy.ndarray)
    assert first_difference(cupy.asnumpy(out), tilewave.ops.gaussian(camera, sigma=2)) == ""


def test_out_of_core(blobs_mask):
    """An image 8x --memory: whole-image ops keep their stores under the
    budget (spilling to scratch files) and give the in-memory result."""
    big = np.tile(blobs_mask, (23, 19))[:5800, :5800]  # 33.6 MB of u8, memory 4 MB
    for name in ("fill_holes", "label"):
        fn = getattr(tilewave.ops, name)
        assert first_difference(fn(big, memory="4M"), fn(big)) == "", name


def test_stub_lists_every_op():
    import ast
    import os
    path = os.path.join(os.path.dirname(tilewave.__file__), "ops.pyi")
    tree = ast.parse(open(path).read())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert names == set(tilewave.ops.__all__)


def test_arrays_are_read_in_place_where_they_can_be(camera, ihc):
    in_place = tilewave._tilewave._reads_in_place
    assert in_place(camera) and in_place(ihc) and in_place(camera[10:20, 30:40]) and in_place(ihc[5:9])
    assert in_place(camera[:, :1]) and in_place(camera[::2])  # rows with a gap between them
    assert not in_place(np.asfortranarray(ihc)) and not in_place(camera[:, ::2]) and not in_place(camera[::-1])


def test_dlpack_objects(camera):
    assert first_difference(tilewave.ops.invert(DlpackOnly(camera)), 255 - camera) == ""  # a CPU tensor
