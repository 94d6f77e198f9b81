#!/usr/bin/python3
"""Which numcodecs compressor for OME-Zarr chunks (docs/outputs/zarr.md):
compression ratio and single-thread speed of zlib, zstd (each with and
without numcodecs' Delta filter) and Blosc (LZ4 and Zstd, byte and bit
shuffle) on C-first 256x256 chunks of scikit-image's IHC, astronaut and
camera images, 3 repetitions. Uses Debian's python3-numcodecs (0.11).

usage: tools/bench/zarr_codecs.py
"""
import time, numpy as np, numcodecs, skimage.data as d
from numcodecs import Zlib, Zstd, Blosc, Delta
imgs = {"ihc": d.immunohistochemistry(), "astronaut": d.astronaut(), "camera": d.camera()}
for name, im in imgs.items():
    if im.ndim == 2: im = im[..., None]
    # C-first 256x256 chunks
    chunks = []
    for y in range(0, im.shape[0] - 255, 256):
        for x in range(0, im.shape[1] - 255, 256):
            chunks.append(np.ascontiguousarray(im[y:y+256, x:x+256].transpose(2, 0, 1)))
    raw = sum(c.nbytes for c in chunks)
    for cname, codec, filt in [("zlib6", Zlib(6), None), ("zlib6+delta", Zlib(6), Delta("u1")),
                               ("zstd3", Zstd(3), None), ("zstd3+delta", Zstd(3), Delta("u1")),
                               ("blosc-lz4-shuf", Blosc("lz4", 5, Blosc.SHUFFLE), None),
                               ("blosc-zstd-shuf", Blosc("zstd", 5, Blosc.SHUFFLE), None),
                               ("blosc-zstd-bitshuf", Blosc("zstd", 5, Blosc.BITSHUFFLE), None)]:
        Blosc.use_threads = False
        t = time.perf_counter(); n = 0
        for _ in range(3):
            for c in chunks:
                b = c if filt is None else filt.encode(c)
                n += len(codec.encode(b))
        dt = (time.perf_counter() - t) / 3
        print(f"{name:10s} {cname:20s} ratio {n/3/raw:.3f}  {raw/dt/1e6:7.1f} MB/s")
