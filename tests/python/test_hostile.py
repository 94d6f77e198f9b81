# Hostile calls from Python (found by a sweep of the API): each is a Python
# exception of the documented kind, never a crash, never a silent
# misreading. Calls that could crash run in a subprocess, so that a crash
# shows as a failed test rather than a dead test run.
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilewave

ops = tilewave.ops


def in_subprocess(code, timeout=60):
    """(return code, stdout, stderr) of the code run by this Python with this PYTHONPATH."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ))
    return r.returncode, r.stdout, r.stderr


def test_an_object_whose_array_conversion_fails_raises_its_error():
    rc, out, err = in_subprocess("""
        import tilewave
        class NoArray:
            def __array__(self, *a, **k): raise RuntimeError("no array here")
        class SaysGpuAsADict(NoArray):  # ops.py and the C++ side must agree it is one
            def __dlpack_device__(self): return {0: 2}
        for x in (NoArray(), SaysGpuAsADict()):
            try:
                tilewave.ops.invert(x)
            except Exception as e:
                print(type(e).__name__)
        """)
    assert rc == 0, err  # was a segmentation fault
    assert out.split() == ["RuntimeError", "AttributeError"]


# Racy by nature, so each case runs several times; before the atexit gate
# (tools/python/gil.hpp) about one run in eight aborted, and a job still
# running at exit read destroyed statics (a segmentation fault).
@pytest.mark.parametrize("what", ["read_region", "ops", "job"])
@pytest.mark.parametrize("round", range(4))
def test_daemon_threads_inside_tilewave_at_exit_do_not_abort(what, round, tmp_path):
    body = {
        "read_region": "s = tilewave.open('synthetic:2048x2048')\n"
                       "work = lambda: [s.read_region((0, 0), 0, (2048, 2048)) for _ in iter(int, 1)]",
        "ops": "a = np.zeros((2048, 2048), np.uint8)\n"
               "work = lambda: [tilewave.ops.gaussian(a, sigma=2) for _ in iter(int, 1)]",
        "job": "work = lambda: [tilewave.run('synthetic:1024x1024', %r, ['filter gray'], progress=lambda f: None)"
               " for _ in iter(int, 1)]" % str(tmp_path / "o.tif"),
    }[what]
    rc, out, err = in_subprocess("""
        import threading, time
        import numpy as np
        import tilewave
        %s
        for _ in range(3):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.3)
        print("main done")
        """ % textwrap.indent(body, " " * 8).strip())
    assert rc == 0, err  # was SIGABRT: "terminate called without an active exception"
    assert "main done" in out
    # A job stopped by the exit leaves no partial file behind.
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["o.tif"])


def test_tilewave_called_from_an_atexit_hook_after_its_own_runs(tmp_path):
    # atexit runs last in, first out: this hook runs after tilewave's, which
    # parks threads coming back to Python; the exiting thread itself runs on.
    rc, out, err = in_subprocess("""
        import atexit, threading, time
        def late():
            import numpy as np, tilewave
            print(tilewave.ops.gaussian(np.zeros((512, 512), np.uint8), sigma=2).shape)
        atexit.register(late)
        import numpy as np
        import tilewave
        a = np.zeros((2048, 2048), np.uint8)
        threading.Thread(target=lambda: [tilewave.ops.gaussian(a, sigma=2) for _ in iter(int, 1)],
                         daemon=True).start()
        time.sleep(0.2)
        """, timeout=30)
    assert rc == 0, err
    assert out.split() == ["(512,", "512)"]


class FakeCuda:
    def __init__(self, **cai):
        self.__cuda_array_interface__ = dict(dict(shape=(4, 4), typestr="|u1", data=(1, False), version=3), **cai)


@pytest.mark.parametrize("cai", [
    dict(shape="44"), dict(shape=("a", "b")), dict(shape=(2 ** 70, 2)), dict(typestr=5), dict(typestr="zz9"),
    dict(data=()), dict(data=(-1, False)), dict(strides="ab"), dict(shape=(4, 4, 3), strides=(12,)),
])
def test_malformed_cuda_array_interfaces_are_value_errors(cai):
    with pytest.raises(ValueError):
        ops.invert(FakeCuda(**cai))


def test_a_missing_interface_key_is_a_value_error():
    class NoShape:
        __cuda_array_interface__ = dict(typestr="|u1", data=(1, False), version=3)
    with pytest.raises(ValueError, match="malformed"):
        ops.invert(NoShape())


def test_none_for_an_image_is_a_type_error():
    with pytest.raises(TypeError, match="an image is required"):
        ops.invert(None)


def test_nul_bytes_are_refused_not_cut(tmp_path):
    a = np.zeros((8, 8), np.uint8)
    for call in (lambda: tilewave.open("synthetic:64x64\x00junk"),
                 lambda: tilewave.run("synthetic:64x64", str(tmp_path / "o.tif"), ["filter gray\x00 junk"]),
                 lambda: tilewave.pyramid("synthetic:64x64", str(tmp_path / "p.tif") + "\x00x"),
                 lambda: ops.gaussian(a, sigma="2\x00x"),
                 lambda: ops.gaussian(a, sigma=2, device="cpu\x00cuda")):
        with pytest.raises(ValueError, match="embedded null byte"):
            call()
    assert os.listdir(tmp_path) == []


def test_an_empty_option_is_refused_not_read_as_a_flag(tmp_path):
    # report="" once swallowed quality=50 (--report took --quality=50 as its file).
    out = str(tmp_path / "q.tif")
    with pytest.raises(ValueError, match="report='' is empty"):
        tilewave.pyramid("synthetic:256x256", out, report="", quality=50)
    with pytest.raises(ValueError, match="empty"):
        tilewave.run("synthetic:64x64", out, ["filter gray"], keep=[""])
    with pytest.raises(ValueError, match="memory='' is empty"):
        ops.gaussian(np.zeros((8, 8), np.uint8), sigma=1, memory="")
    assert not os.path.exists(out)


def test_a_process_forked_while_a_thread_runs_a_job_can_run_its_own(tmp_path):
    # multiprocessing's fork start method while another thread is in a job:
    # the child has only the forking thread, and the job lock held by the
    # parent's other thread made the child's first job wait for ever.
    rc, out, err = in_subprocess("""
        import os, threading, time, warnings
        import tilewave
        warnings.simplefilter("ignore")  # Python 3.12 warns about forking with threads
        d = %r
        started = threading.Event()
        def long_job():
            tilewave.run('synthetic:16384x16384', os.path.join(d, 'big.tif'), ['filter gray'],
                         progress=lambda f: started.set())
        threading.Thread(target=long_job, daemon=True).start()
        assert started.wait(30)
        pid = os.fork()
        if pid == 0:
            tilewave.run('synthetic:512x512', os.path.join(d, 'small.tif'), ['filter gray'])
            os._exit(0)
        t0 = time.time()
        while time.time() - t0 < 30:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("child", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("child hung")
        """ % str(tmp_path), timeout=90)
    assert rc == 0, err
    assert out.split()[-2:] == ["child", "0"], out + err
    assert (tmp_path / "small.tif").exists()
