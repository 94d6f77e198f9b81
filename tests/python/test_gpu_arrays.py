# Arrays in GPU memory (docs/python.md, "GPU arrays"): CuPy arrays, PyTorch
# CUDA tensors and anything with __cuda_array_interface__ or a CUDA DLPack
# tensor are read where they lie, and results come back in GPU memory as the
# caller's kind of array. Zero-copy is checked by pointer (the result wraps
# the memory the engine wrote) and by the engine's count of bytes copied
# between host and device. The tests that need a GPU and CuPy skip cleanly
# without them; the error cases run everywhere.
import sys
import threading

import numpy as np
import pytest

import tilewave
from conftest import DlpackOnly, first_difference

ops = tilewave.ops


def gpu_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, no GPU
        return 0


needs_gpu = pytest.mark.skipif(gpu_count() == 0, reason="needs CuPy and a CUDA GPU")


def transfers():
    return tilewave._tilewave._transfer_bytes()


# ---- everywhere: bad GPU arrays are clear errors, never a crash ----------

class FakeCudaArray:
    """Claims GPU memory but points at host memory (or at nothing)."""

    def __init__(self, ptr, shape=(8, 8), typestr="|u1", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def test_a_pointer_that_is_not_gpu_memory_is_an_error():
    host = np.zeros((8, 8), np.uint8)
    for ptr in (host.ctypes.data, 0):
        with pytest.raises((ValueError, RuntimeError), match="GPU array"):
            ops.invert(FakeCudaArray(ptr))


def test_a_dlpack_producer_that_fails_raises_its_error():
    class Broken:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError, match="producer failed"):
        ops.invert(Broken())


def test_device_arrays_are_documented_in_the_signatures():
    assert "GPU" in ops.gaussian.__doc__ and ops.gaussian.__signature__.parameters["device"].default is None
    assert tilewave.DeviceArray.__doc__


# ---- on a GPU ------------------------------------------------------------

@pytest.fixture
def cp():
    if gpu_count() == 0:
        pytest.skip("needs CuPy and a CUDA GPU")
    import cupy
    return cupy


@needs_gpu
def test_a_gpu_chain_moves_no_bytes_through_the_host(cp, camera):
    a = cp.asarray(camera)
    a.device.synchronize()
    before = transfers()
    g = ops.gaussian(a, sigma=2)
    e = ops.erode(g, radius=2)
    i = ops.invert(e)
    assert transfers() == before  # no byte crossed PCIe either way
    assert isinstance(i, cp.ndarray) and i.dtype == np.uint8 and i.shape == camera.shape
    # Equal to the CPU backend's result on the same pixels, exactly.
    want = ops.invert(ops.erode(ops.gaussian(camera, sigma=2, device="cpu"), radius=2, device="cpu"))
    assert first_difference(cp.asnumpy(i), want) == ""


@needs_gpu
def test_the_result_wraps_the_memory_the_engine_wrote(cp, camera):
    a = cp.asarray(camera)
    d = tilewave._tilewave._run_op("invert", [a], ["image"], {}, [], True)
    assert isinstance(d, tilewave.DeviceArray) and d.device == a.device.id
    assert d.__cuda_array_interface__["data"][0] == d.ptr != a.data.ptr
    w = cp.asarray(d)
    assert w.data.ptr == d.ptr  # CuPy wraps it: no copy
    assert cp.from_dlpack(d).data.ptr == d.ptr  # so does DLPack
    assert first_difference(d.get(), 255 - camera) == ""


@needs_gpu
@pytest.mark.parametrize("name, make, kw", [
    ("invert", lambda x: [x["camera"]], {}),
    ("gray", lambda x: [x["ihc"]], {}),
    ("gaussian", lambda x: [x["ihc"][:301, :257]], {"sigma": 2.5}),
    ("sobel", lambda x: [x["camera"]], {}),
    ("erode", lambda x: [x["camera"]], {"radius": 3, "shape": "square"}),
    ("max", lambda x: [x["camera"], x["camera"][::-1].copy()], {}),
    ("threshold", lambda x: [x["camera"]], {"otsu": True}),
    ("fill_holes", lambda x: [x["mask"]], {}),
    ("edt", lambda x: [x["mask"]], {}),
    ("label", lambda x: [x["mask"]], {"connectivity": 8}),
    ("hdome", lambda x: [x["camera"]], {"h": 20}),
])
def test_every_op_category_on_gpu_arrays_equals_numpy(cp, camera, ihc, blobs_mask, name, make, kw):
    images = make({"camera": camera, "ihc": ihc, "mask": blobs_mask})
    fn = getattr(ops, name)
    got = fn(*[cp.asarray(x) for x in images], **kw)
    assert isinstance(got, cp.ndarray)
    assert first_difference(cp.asnumpy(got), fn(*images, device="cuda", **kw)) == ""
    assert first_difference(cp.asnumpy(got), fn(*images, device="cpu", **kw)) == ""


@needs_gpu
def test_row_slices_are_read_in_place_and_strided_views_refused(cp, camera):
    a = cp.asarray(camera)
    before = transfers()
    got = ops.invert(a[17:301, 5:400])  # rows with a gap between them: readable in place
    assert transfers() == before
    assert first_difference(cp.asnumpy(got), 255 - camera[17:301, 5:400]) == ""
    with pytest.raises(ValueError, match="contiguous"):
        ops.invert(a[:, ::2])
    assert first_difference(cp.asnumpy(ops.invert(cp.ascontiguousarray(a[:, ::2]))), 255 - camera[:, ::2]) == ""


@needs_gpu
def test_bad_gpu_arrays_are_errors(cp, camera):
    with pytest.raises(ValueError, match="dtype"):
        ops.invert(cp.zeros((8, 8), cp.float64))
    with pytest.raises(ValueError, match="dimensions"):
        ops.invert(cp.zeros((8,), cp.uint8))
    with pytest.raises(ValueError, match="empty"):
        ops.invert(cp.zeros((0, 8), cp.uint8))
    with pytest.raises(ValueError):
        ops.gaussian(cp.asarray(camera), sigma=-1)


@needs_gpu
def test_a_dlpack_only_tensor_on_the_gpu(cp, camera):
    a = cp.asarray(camera)
    before = transfers()
    got = ops.gaussian(DlpackOnly(a), sigma=1.5)  # another library's CUDA tensor
    assert transfers() == before
    assert isinstance(got, tilewave.DeviceArray)  # a kind we do not know: the engine's own, both protocols
    assert first_difference(got.get(), ops.gaussian(camera, sigma=1.5)) == ""


@needs_gpu
def test_pytorch_cuda_tensors_in_and_out(cp, camera):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    t = torch.from_numpy(camera).cuda()
    got = ops.invert(t)
    assert isinstance(got, torch.Tensor) and got.is_cuda
    assert first_difference(got.cpu().numpy(), 255 - camera) == ""


@needs_gpu
def test_device_cpu_on_gpu_arrays_copies_and_gives_back_gpu_arrays(cp, camera):
    before = transfers()
    got = ops.gaussian(cp.asarray(camera), sigma=2, device="cpu")
    after = transfers()
    assert isinstance(got, cp.ndarray)
    assert after["downloaded"] > before["downloaded"] and after["uploaded"] > before["uploaded"]
    assert first_difference(cp.asnumpy(got), ops.gaussian(camera, sigma=2)) == ""


@needs_gpu
def test_references_and_gpu_memory_are_stable_over_many_calls(cp, camera):
    a = cp.asarray(camera)
    refs = sys.getrefcount(a)
    for _ in range(50):  # warm the pools
        ops.gaussian(a, sigma=2)
    cp.cuda.Device().synchronize()
    free0 = cp.cuda.runtime.memGetInfo()[0]
    for _ in range(2000):
        r = ops.gaussian(a, sigma=2)
        d = tilewave._tilewave._run_op("invert", [a], ["image"], {}, [], True)
        cp.from_dlpack(d)
    del r, d
    cp.cuda.Device().synchronize()
    assert sys.getrefcount(a) == refs
    # 2000 results of 0.25 MB each would be 1 GB if any were kept.
    assert free0 - cp.cuda.runtime.memGetInfo()[0] < 64 << 20


@needs_gpu
def test_eight_threads_on_gpu_arrays(cp, camera):
    a = cp.asarray(camera)
    want = ops.gaussian(camera, sigma=3)
    errors = []

    def work():
        try:
            for _ in range(20):
                got = ops.gaussian(a, sigma=3)
                if first_difference(cp.asnumpy(got), want):
                    errors.append("differs")
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@needs_gpu
def test_daemon_threads_on_gpu_arrays_at_exit_do_not_abort():
    # The atexit gate (tools/python/gil.hpp) with the GPU path's GIL takes:
    # three daemon threads still running ops on a CuPy array when Python exits.
    import os
    import subprocess
    code = ("import threading, time, cupy as cp, tilewave\n"
            "a = cp.zeros((4096, 4096), cp.uint8)\n"
            "work = lambda: [tilewave.ops.gaussian(a, sigma=2) for _ in iter(int, 1)]\n"
            "for _ in range(3): threading.Thread(target=work, daemon=True).start()\n"
            "time.sleep(0.5)\n"
            "print('main done')\n")
    for _ in range(4):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        assert "main done" in r.stdout
