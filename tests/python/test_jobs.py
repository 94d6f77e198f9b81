# tilewave.pyramid / run / nuclei: the CLI's commands with keywords as their
# options; the report as a dict; the progress callback; a KeyboardInterrupt
# raised from it stops the job with nothing left at the output's path.
import json
import os

import numpy as np
import pytest

import tilewave
from conftest import cli_error, first_difference, read_tiff, run_cli

openslide = pytest.importorskip("openslide")


def listing(folder):
    return sorted(os.listdir(folder))


def test_pyramid_equals_the_clis(tmp_path, cli):
    ours, theirs = tmp_path / "py.tif", tmp_path / "cli.tif"
    report = tilewave.pyramid("synthetic:900x700,seed=2", ours, quality=80, tile=128, min_size=100)
    run_cli("pyramid", "synthetic:900x700,seed=2", theirs, "--quality", "80", "--tile", "128", "--min-size", "100",
            "--report", tmp_path / "cli.json")
    cli_report = json.loads((tmp_path / "cli.json").read_text())
    assert report["command"] == "pyramid" and report["output"] == str(ours)
    assert report["levels"] == cli_report["levels"]
    assert report["tiles_encoded"] == cli_report["tiles_encoded"]
    with openslide.OpenSlide(str(ours)) as a, openslide.OpenSlide(str(theirs)) as b:
        assert a.level_dimensions == b.level_dimensions
        for level in range(a.level_count):
            size = a.level_dimensions[level]
            assert first_difference(np.asarray(a.read_region((0, 0), level, size)),
                                    np.asarray(b.read_region((0, 0), level, size))) == ""
    assert listing(tmp_path) == ["cli.json", "cli.tif", "py.tif"]


def test_run_and_keep(tmp_path, cli):
    steps = ["g: filter gray", "filter gaussian --sigma 1.5", "filter threshold --otsu", "fill-holes"]
    report = tilewave.run("synthetic:500x400,seed=9", tmp_path / "py.tif", steps, keep={"g": tmp_path / "g.tif"})
    run_cli("run", "synthetic:500x400,seed=9", tmp_path / "cli.tif", *steps)
    assert first_difference(read_tiff(tmp_path / "py.tif"), read_tiff(tmp_path / "cli.tif")) == ""
    assert len(report["steps"]) == 4 and report["kept"][0]["path"] == str(tmp_path / "g.tif")
    assert read_tiff(tmp_path / "g.tif").shape == (400, 500)


def test_progress_is_called_with_fractions(tmp_path):
    seen = []
    tilewave.pyramid("synthetic:2048x1024", tmp_path / "p.tif", tile=256, progress=seen.append, threads=2)
    assert seen and all(0 <= f <= 1 for f in seen)
    assert seen == sorted(seen) and seen[-1] == 1.0


class Stop(Exception):
    pass


@pytest.mark.parametrize("exc", [KeyboardInterrupt, Stop])
def test_interrupt_from_the_callback_leaves_no_output(tmp_path, exc):
    calls = []

    def progress(f):
        calls.append(f)
        raise exc()

    out = tmp_path / "big.tif"
    with pytest.raises(exc):
        tilewave.pyramid("synthetic:4096x4096", out, tile=256, progress=progress)
    assert len(calls) == 1
    assert listing(tmp_path) == []  # neither the output nor a temporary
    # The next job runs normally.
    tilewave.pyramid("synthetic:300x200", tmp_path / "ok.tif")
    assert listing(tmp_path) == ["ok.tif"]


def test_interrupted_run(tmp_path):
    def stop(f):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        tilewave.run("synthetic:3000x3000", tmp_path / "r.tif", ["filter gray", "fill-holes"], progress=stop)
    assert listing(tmp_path) == []


def test_errors_are_the_clis(tmp_path, cli):
    missing = str(tmp_path / "missing.svs")
    with pytest.raises(FileNotFoundError) as e:
        tilewave.pyramid(missing, tmp_path / "o.tif")
    assert str(e.value) == cli_error("pyramid", missing, tmp_path / "o.tif")
    with pytest.raises(ValueError) as e:
        tilewave.pyramid("synthetic:64x64", tmp_path / "o.tif", quality=101)
    assert str(e.value) == cli_error("pyramid", "synthetic:64x64", tmp_path / "o.tif", "--quality", "101")
    with pytest.raises(ValueError) as e:
        tilewave.pyramid("synthetic:64x64", tmp_path / "o.tif", qualty=80)
    assert str(e.value) == cli_error("pyramid", "synthetic:64x64", tmp_path / "o.tif", "--qualty", "80")
    with pytest.raises(ValueError) as e:
        tilewave.run("synthetic:64x64", tmp_path / "o.tif", ["filter hed", "edt"])
    assert str(e.value) == cli_error("run", "synthetic:64x64", tmp_path / "o.tif", "filter hed", "edt")
    with pytest.raises(ValueError) as e:
        tilewave.pyramid("synthetic:64x64", tmp_path, quality=80)  # a folder as the output
    assert str(e.value) == cli_error("pyramid", "synthetic:64x64", tmp_path)
    with pytest.raises(ValueError):
        tilewave.run("synthetic:64x64", tmp_path / "o.tif", [])
    assert listing(tmp_path) == []


def test_nuclei(tmp_path):
    report = tilewave.nuclei("synthetic:600x500,seed=4,mpp=0.25", tmp_path / "out", threads=2)
    assert set(listing(tmp_path / "out")) == {"labels.tif", "nuclei.csv", "nuclei.geojson", "overlay.tif"}
    assert report["command"] == "nuclei" and report["features"]["csv"]["objects"] >= 0
    with pytest.raises(ValueError) as e:
        tilewave.nuclei("synthetic:100x100", tmp_path / "none", sigma_um=-1)
    assert str(e.value) == cli_error("nuclei", "synthetic:100x100", tmp_path / "none", "--sigma-um", "-1")
    assert not (tmp_path / "none").exists()


def test_ctrl_c_stops_the_job(tmp_path):
    """A real SIGINT while a job runs: the waiting thread sees it (Python runs
    signal handlers there only), the job stops at its next tile, no output."""
    import signal
    import time
    sent = []

    def progress(f):
        if not sent:
            sent.append(f)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # the job waits here: the main thread sees the signal first

    with pytest.raises(KeyboardInterrupt):
        tilewave.pyramid("synthetic:4096x4096", tmp_path / "big.tif", tile=256, progress=progress)
    assert sent and listing(tmp_path) == []


def test_a_job_from_a_callback_is_refused(tmp_path):
    def nested(f):
        tilewave.pyramid("synthetic:64x64", tmp_path / "inner.tif")

    with pytest.raises(ValueError, match="progress callback"):
        tilewave.pyramid("synthetic:512x512", tmp_path / "outer.tif", progress=nested)
    assert listing(tmp_path) == []
