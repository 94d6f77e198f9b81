# Thread safety: 8 threads reading regions of one slide and running ops at
# once (the GIL released in both) give the results of the same calls made
# one after another.
import threading

import numpy as np

import tilewave
from conftest import first_difference


def test_eight_threads_equal_serial(camera):
    slide = tilewave.open("synthetic:2000x1500,seed=11")
    rng = np.random.default_rng(1)
    regions = [((int(rng.integers(-100, 1900)), int(rng.integers(-100, 1400))), (int(rng.integers(1, 300)),
                int(rng.integers(1, 300)))) for _ in range(48)]

    def work(i):
        loc, size = regions[i]
        r = slide.read_region(loc, 0, size)
        sigma = 0.5 + (i % 5)
        return r, tilewave.ops.gaussian(camera, sigma=sigma, threads=2), tilewave.ops.edt(
            (camera > 100).astype(np.uint8) * 255)

    serial = [work(i) for i in range(len(regions))]
    results = [None] * len(regions)
    errors = []

    def worker(k):
        try:
            for i in range(k, len(regions), 8):
                results[i] = work(i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, (a, b) in enumerate(zip(serial, results)):
        for x, y in zip(a, b):
            assert first_difference(x, y) == "", "call %d" % i
    slide.close()
