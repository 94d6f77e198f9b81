# 10,000 small calls: the arrays' reference counts and the process's
# resident memory stay where they were (no reference or buffer kept per call).
import gc
import sys

import numpy as np
import pytest

import tilewave


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_ten_thousand_calls_keep_nothing():
    a = np.arange(32 * 24, dtype=np.uint8).reshape(24, 32)
    mask = ((a % 7) > 2).astype(np.uint8) * 255
    slide = tilewave.open("synthetic:256x256")
    for _ in range(200):  # warm up: allocators, caches, the registry
        tilewave.ops.invert(a)
        slide.read_region((0, 0), 0, (16, 16))
    gc.collect()
    refs = (sys.getrefcount(a), sys.getrefcount(mask), sys.getrefcount(slide))
    rss0 = rss_bytes()
    for i in range(10000):
        k = i % 5
        if k == 0:
            tilewave.ops.invert(a)
        elif k == 4:
            tilewave.ops.threshold(a, value=9, threads=2)  # an arena of its own
        elif k == 1:
            tilewave.ops.gaussian(a, sigma=1)
        elif k == 2:
            tilewave.ops.label(mask)
        else:
            slide.read_region((i % 200, 7), 0, (16, 16))
        if i % 1000 == 0:
            with pytest.raises(ValueError):
                tilewave.ops.gaussian(a, sigma=-1)
    gc.collect()
    assert (sys.getrefcount(a), sys.getrefcount(mask), sys.getrefcount(slide)) == refs
    grown = rss_bytes() - rss0
    assert grown < 4 << 20, "resident memory grew by %d bytes over 10,000 calls" % grown
