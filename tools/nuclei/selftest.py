#!/usr/bin/python3
"""Self-test of the nuclei tools (no pytest): exit 0 when all pass.

  tools/nuclei/selftest.py [-v]

score.py: hand-computed cases (perfect match, a split, a miss, a merge, a
tiny AJI by hand), random label images against a brute-force per-object
implementation of F1 and of Kumar's AJI, and the file path (tiled and
stripped TIFFs, bands merged across rows) against the in-memory one.
synth_he.py: same seed -> identical files; another seed -> other labels;
ground truth independent of --tile and of the render chunk width; labels
1..N; nuclei where rgb2hed finds the hematoxylin. real_ihc_slide.py: the
mosaic decodes to the mirrored sample. skimage_pipeline.py: runs on the
synthetic slide and scores well.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import tifffile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import score  # noqa: E402
import synth_he  # noqa: E402
import tiffio  # noqa: E402

FAILS = []
VERBOSE = '-v' in sys.argv


def check(cond, what):
    if VERBOSE or not cond:
        print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        FAILS.append(what)


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol


# ------------------------------------------------------------------ score
def brute(pred, gt, thr=0.5):
    """Per-object reference: IoU by masks; F1 by one-to-one matching at
    IoU > thr (unique there); AJI by Kumar et al.'s Algorithm 1 literally."""
    gids = [g for g in np.unique(gt) if g]
    pids = [p for p in np.unique(pred) if p]
    masks_p = {p: pred == p for p in pids}
    tp = 0
    C = U = 0
    used = set()
    for g in gids:
        mg = gt == g
        best, bi, bu, bp = -1.0, 0, 0, None
        for p in pids:
            i = np.logical_and(mg, masks_p[p]).sum()
            u = np.logical_or(mg, masks_p[p]).sum()
            if i and i / u > thr:
                tp += 1
            if i and i / u > best:
                best, bi, bu, bp = i / u, i, u, p
        if bp is None:
            U += mg.sum()
        else:
            C += bi
            U += bu
            used.add(bp)
    for p in pids:
        if p not in used:
            U += masks_p[p].sum()
    f1 = 2 * tp / (len(gids) + len(pids)) if gids or pids else 1.0
    return f1, (C / U if U else 1.0), tp


def test_score():
    rng = np.random.default_rng(5)
    gt = np.zeros((40, 50), np.uint32)
    for k in range(1, 13):
        y, x = rng.integers(0, 36), rng.integers(0, 46)
        gt[y:y + rng.integers(2, 6), x:x + rng.integers(2, 6)] = k
    s = score.score_arrays(gt, gt)
    n = len(np.unique(gt)) - 1
    check(s['f1'] == 1 and s['aji'] == 1 and s['true_positives'] == n, 'score: perfect match gives F1 = AJI = 1')
    # permuted label values do not matter
    perm = np.concatenate([[0], rng.permutation(np.arange(1, 13)) + 100]).astype(np.uint32)
    s = score.score_arrays(perm[gt], gt)
    check(s['f1'] == 1 and s['aji'] == 1, 'score: relabelled prediction still perfect')

    # split: one 10x10 nucleus predicted as 60 + 40 pixels
    g = np.zeros((12, 12), np.uint32)
    g[1:11, 1:11] = 1
    p = np.zeros_like(g)
    p[1:7, 1:11] = 4
    p[7:11, 1:11] = 9
    s = score.score_arrays(p, g)
    check(s['true_positives'] == 1 and s['false_positives'] == 1 and close(s['f1'], 2 / 3),
          f"score: split object: TP 1, FP 1, F1 2/3 (got {s['f1']})")
    check(close(s['aji'], 60 / 140), f"score: split object AJI = 60/140 (got {s['aji']})")

    # missed: two nuclei, one found exactly
    g = np.zeros((10, 20), np.uint32)
    g[2:6, 2:6] = 1
    g[2:8, 10:16] = 2
    p = np.where(g == 1, 3, 0).astype(np.uint32)
    s = score.score_arrays(p, g)
    check(s['recall'] == 0.5 and s['precision'] == 1 and close(s['f1'], 2 / 3) and s['false_negatives'] == 1,
          'score: missed object: recall 1/2, precision 1, F1 2/3')
    check(close(s['aji'], 16 / (16 + 36)), f"score: missed object AJI = 16/52 (got {s['aji']})")

    # hand-computed AJI
    g = np.array([[1, 1, 1, 0, 2, 2], [1, 1, 1, 0, 2, 2]], np.uint32)
    p = np.array([[5, 5, 0, 0, 7, 7], [5, 5, 0, 7, 7, 7]], np.uint32)
    s = score.score_arrays(p, g)
    # G1: best S5, |G1&S5| = 4, |G1|S5| = 6; G2: best S7, 4 and 5
    check(close(s['aji'], 8 / 11) and s['f1'] == 1, f"score: hand AJI 8/11, F1 1 (got {s['aji']}, {s['f1']})")

    # merge: one prediction covering two nuclei is chosen by both (the
    # original AJI counts its union twice; AJI+ would not)
    g = np.zeros((4, 10), np.uint32)
    g[1:3, 1:3] = 1
    g[1:3, 5:7] = 2
    p = np.zeros_like(g)
    p[1:3, 1:7] = 8
    p[0, 1] = 8  # 13 pixels
    s = score.score_arrays(p, g)
    check(close(s['aji'], 8 / 26) and s['f1'] == 0, f"score: merge AJI 8/26, F1 0 (got {s['aji']}, {s['f1']})")

    # empty cases
    z = np.zeros((5, 5), np.uint32)
    s = score.score_arrays(z, z)
    check(s['f1'] == 1 and s['aji'] == 1, 'score: both empty: F1 = AJI = 1')
    s = score.score_arrays(np.zeros_like(g), g)
    check(s['f1'] == 0 and s['aji'] == 0 and s['recall'] == 0, 'score: empty prediction: F1 = AJI = 0')

    # random blobs vs brute force
    from scipy import ndimage as ndi
    for t in range(4):
        r = np.random.default_rng(t)
        gl = ndi.label(ndi.gaussian_filter(r.random((60, 70)), 2) > 0.52)[0].astype(np.uint32)
        pl = ndi.label(ndi.gaussian_filter(r.random((60, 70)) * 0.3 + (gl > 0) * 0.7, 1.5) > 0.5)[0].astype(np.uint32)
        f1, aji, tp = brute(pl, gl)
        s = score.score_arrays(pl, gl)
        check(close(s['f1'], f1) and close(s['aji'], aji) and s['true_positives'] == tp,
              f"score: random case {t} equals brute force (F1 {s['f1']:.4f} vs {f1:.4f}, AJI {s['aji']:.4f} vs {aji:.4f})")
    return gl, pl


def test_score_files(tmp, gl, pl):
    gp, pp = os.path.join(tmp, 'g.tif'), os.path.join(tmp, 'p.tif')
    tifffile.imwrite(gp, gl, tile=(32, 32), compression='zlib')
    tifffile.imwrite(pp, pl.astype(np.uint16), rowsperstrip=7)
    old = score.BAND_ROWS
    score.BAND_ROWS = 9  # bands that cut objects and chunk rows
    try:
        s1 = score.scores(*score.contingency(pp, gp))
    finally:
        score.BAND_ROWS = old
    s0 = score.score_arrays(pl, gl)
    check(s1 == s0, 'score: files read in bands (tiled u32, stripped u16) = in memory')
    out = subprocess.run([sys.executable, os.path.join(HERE, 'score.py'), pp, gp, '--json'], capture_output=True,
                         text=True)
    check(out.returncode == 0 and json.loads(out.stdout) == json.loads(json.dumps(s0)), 'score.py --json runs')
    bad = os.path.join(tmp, 'bad.tif')
    tifffile.imwrite(bad, np.zeros((3, 3), np.uint32))
    out = subprocess.run([sys.executable, os.path.join(HERE, 'score.py'), bad, gp], capture_output=True, text=True)
    check(out.returncode != 0 and 'error' in out.stderr + out.stdout, 'score.py: size mismatch is an error')


# ------------------------------------------------------------------ synth
def test_synth(tmp):
    from skimage.color import rgb2hed
    from skimage.filters import threshold_otsu
    W, H = 400, 336  # not tile multiples
    f = lambda n: os.path.join(tmp, n)
    n1 = synth_he.generate(f('a.tif'), f('ga.tif'), W, H, 0.5, 5, tile=128)
    n2 = synth_he.generate(f('b.tif'), f('gb.tif'), W, H, 0.5, 5, tile=128, chunk_w=128)
    same = all(open(f(x + '.tif'), 'rb').read() == open(f(y + '.tif'), 'rb').read()
               for x, y in (('a', 'b'), ('ga', 'gb')))
    check(n1 == n2 and same, 'synth: same seed -> identical slide and GT files (render chunk width 128 vs 2048)')
    synth_he.generate(f('c.tif'), f('gc.tif'), W, H, 0.5, 5, tile=256, jpeg=70)
    ga, gc = tifffile.imread(f('ga.tif')), tifffile.imread(f('gc.tif'))
    check(np.array_equal(ga, gc), 'synth: GT does not depend on --tile or --jpeg')
    synth_he.generate(f('d.tif'), f('gd.tif'), W, H, 0.5, 1, tile=128)
    check(not np.array_equal(ga, tifffile.imread(f('gd.tif'))), 'synth: another seed gives other nuclei')
    ids = np.unique(ga)
    check(ga.dtype == np.uint32 and ga.shape == (H, W) and ids[-1] == n1 and len(ids) - 1 >= 0.98 * n1 and n1 > 50,
          f'synth: GT u32 labels 1..N, N = {n1} reported')
    check(abs(tiffio.slide_mpp(f('a.tif')) - 0.5) < 1e-6, 'synth: resolution tags give mpp 0.5')
    rgb = tiffio.read_level0(f('a.tif'))
    check(rgb.shape == (H, W, 3) and rgb.dtype == np.uint8, 'synth: slide decodes to u8 RGB of the size asked')
    h = rgb2hed(rgb)[..., 0]
    fg = ga > 0
    od = -np.log(np.maximum(rgb, 1) / 255.0).mean(axis=2)
    tissue = od > 0.1
    thr = threshold_otsu(h[tissue])
    inside = (h[fg] > thr).mean()
    outside = (h[tissue & ~fg] > thr).mean()
    check(inside > 0.85 and outside < 0.10,
          f'synth: nuclei are where the hematoxylin is ({inside:.3f} of GT above Otsu, {outside:.3f} of the rest)')
    check(np.median(h[fg]) > 2 * np.median(h[tissue & ~fg]), 'synth: GT hematoxylin median > 2x the rest of tissue')
    # the small-mpp version: nuclei 2x larger in pixels
    n4 = synth_he.generate(f('e.tif'), f('ge.tif'), W, H, 0.25, 5, tile=128)
    ge = tifffile.imread(f('ge.tif'))
    a05 = np.median(np.bincount(ga.ravel())[1:][np.bincount(ga.ravel())[1:] > 0])
    a025 = np.median(np.bincount(ge.ravel())[1:][np.bincount(ge.ravel())[1:] > 0])
    check(n4 > 5 and 2.5 < a025 / a05 < 6, f'synth: at 0.25 um/px nuclei have ~4x the pixels ({a025 / a05:.2f}x)')
    out = subprocess.run([sys.executable, os.path.join(HERE, 'synth_he.py'), f('z.tif'), f('gz.tif'), '--size', '64x48',
                          '--seed', '1'], capture_output=True, text=True)
    check(out.returncode == 0 and 'nuclei' in json.loads(out.stdout), 'synth_he.py CLI runs')
    out = subprocess.run([sys.executable, os.path.join(HERE, 'synth_he.py'), f('z.tif'), f('gz.tif'), '--size', '64y48'],
                         capture_output=True, text=True)
    check(out.returncode == 2 and 'bad size' in out.stderr, 'synth_he.py: bad --size is a usage error')
    return f('a.tif'), f('ga.tif')


def test_pipeline(tmp, slide, gt):
    import skimage_pipeline
    out = os.path.join(tmp, 'pred.tif')
    csv = os.path.join(tmp, 'f.csv')
    r = skimage_pipeline.run(slide, out, tile=128, overlap=32, processes=1, features=csv)
    s = score.scores(*score.contingency(out, gt))
    check(r['objects'] == s['pred_objects'] and s['f1'] > 0.85 and s['aji'] > 0.7,
          f"skimage_pipeline: runs, F1 {s['f1']:.3f}, AJI {s['aji']:.3f} on the small synthetic slide")
    rows = open(csv).read().splitlines()
    check(len(rows) == r['objects'] + 1 and rows[0].startswith('label,area_px'), 'skimage_pipeline: features CSV')


def test_ihc(tmp):
    import real_ihc_slide
    from skimage import data
    p = os.path.join(tmp, 'ihc.tif')
    out = subprocess.run([sys.executable, os.path.join(HERE, 'real_ihc_slide.py'), p, '--repeat', '2', '--tile', '192'],
                         capture_output=True, text=True)
    a = tiffio.read_level0(p).astype(int) if out.returncode == 0 else None
    ref = real_ihc_slide.mirrored(data.immunohistochemistry(), 2).astype(int)
    check(a is not None and a.shape == ref.shape and np.abs(a - ref).mean() < 4,
          'real_ihc_slide: decodes to the mirrored sample (JPEG error only)')


def main():
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='tw-nuclei-selftest-') as tmp:
        gl, pl = test_score()
        test_score_files(tmp, gl, pl)
        slide, gt = test_synth(tmp)
        test_pipeline(tmp, slide, gt)
        test_ihc(tmp)
    dt = time.perf_counter() - t
    if FAILS:
        print(f'{len(FAILS)} FAILED ({dt:.1f} s)')
        return 1
    print(f'all passed ({dt:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
