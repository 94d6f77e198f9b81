#!/usr/bin/python3
"""Reference nuclei segmentation with scikit-image, HistomicsTK style:
tile by tile with overlap, over N processes. Accuracy baseline and
performance peer of `tilewave nuclei`.

  tools/nuclei/skimage_pipeline.py SLIDE.tif OUT_LABELS.tif [--tile 1024] [--overlap 64]
      [--processes N] [--mpp F] [--features OUT.csv]

Steps (sizes in microns, scaled by the slide's mpp as QuPath does):
 1. pass 1, per tile: hematoxylin = rgb2hed(rgb)[..., 0] (Ruifrok-Johnston
    colour deconvolution), Gaussian (sigma 0.5 um); tissue = mean optical
    density > 0.1 after the same smoothing; a fixed-bin histogram of the
    hematoxylin over tissue; summed over tiles, Otsu's threshold of it
    (global, so every tile cuts at the same level);
 2. pass 2, per tile grown by the overlap: the same hematoxylin > threshold,
    fill holes, remove objects under 10 um^2, Euclidean distance transform,
    Gaussian on it (sigma 0.5 um) against ridge noise, markers = h-maxima
    (h = 0.25 um) labelled, watershed of -distance from the markers inside
    the mask, remove objects under 10 um^2;
 3. stitching: each tile keeps the objects whose centroid lies in its core
    (the others belong to a neighbour and are dropped), renumbered after the
    objects of the tiles before it (row-major tile order), written into one
    whole-slide uint32 label image (deflate tiles). Objects longer than the
    overlap are cut (HistomicsTK's limitation too).
 --features: regionprops per kept object (label, area, centroid, bbox,
    perimeter, equivalent diameter, axes, eccentricity, solidity, mean RGB and
    hematoxylin), computed in the workers, written as CSV.
Prints one JSON line: pixels, seconds (compute, i.e. both passes; and
total with writing), pixels per second, processes, objects, threshold.
The label image is held whole in memory (4 bytes per pixel).
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings

import numpy as np
from scipy import ndimage as ndi
from skimage import measure, morphology, segmentation
from skimage.color import rgb2hed
from skimage.filters import threshold_otsu

import tiffio

HBINS, HMAX = 4096, 0.4  # pass-1 histogram of rgb2hed hematoxylin (values above go to the last bin)
P = {}  # per-worker state
DEFAULTS_UM = dict(sigma_um=0.5, dist_sigma_um=0.5, h_um=0.25, min_area_um2=10.0)
PARAM_OVERRIDE = {}  # for parameter sweeps from Python


def _init(path, params):
    # remove_small_objects warns on a label image holding a single object
    warnings.filterwarnings('ignore', message='Only one label was provided')
    P['reader'] = tiffio.LevelReader(path)
    P.update(params)


def _hematoxylin(rgb):
    h = rgb2hed(rgb)[..., 0].astype(np.float32)
    return ndi.gaussian_filter(h, P['sigma_px'])


def _pass1(rect):
    x0, y0, x1, y1 = rect
    rgb = P['reader'].region(x0, y0, x1, y1)
    h = _hematoxylin(rgb)
    od = -np.log(np.maximum(rgb.astype(np.float32), 1) / 255.0).mean(axis=2)
    tissue = ndi.gaussian_filter(od, P['sigma_px']) > 0.1
    hist = np.bincount(np.minimum((h[tissue] * (HBINS / HMAX)).astype(np.int64), HBINS - 1), minlength=HBINS)
    return hist


def _pass2(job):
    (x0, y0, x1, y1), (ex0, ey0, ex1, ey1) = job
    rgb = P['reader'].region(ex0, ey0, ex1, ey1)
    h = _hematoxylin(rgb)
    mask = ndi.binary_fill_holes(h > P['threshold'])
    mask = morphology.remove_small_objects(mask, P['min_area_px'])
    dist = ndi.distance_transform_edt(mask)
    dist = ndi.gaussian_filter(dist, P['dist_sigma_px'])
    markers = measure.label(morphology.h_maxima(dist, P['h_px']) & mask)
    lab = segmentation.watershed(-dist, markers, mask=mask)
    lab = morphology.remove_small_objects(lab, P['min_area_px'])
    # keep objects whose centroid lies in the core
    nl = int(lab.max())
    flat = lab.ravel()
    area = np.bincount(flat, minlength=nl + 1)[1:]
    hh, ww = lab.shape
    cy = np.bincount(flat, weights=np.repeat(np.arange(hh, dtype=np.float64), ww), minlength=nl + 1)[1:]
    cx = np.bincount(flat, weights=np.tile(np.arange(ww, dtype=np.float64), hh), minlength=nl + 1)[1:]
    cy, cx = cy / np.maximum(area, 1), cx / np.maximum(area, 1)
    own = (area > 0) & (cx + ex0 >= x0) & (cx + ex0 < x1) & (cy + ey0 >= y0) & (cy + ey0 < y1)
    new = np.zeros(nl + 1, np.uint32)
    new[1:][own] = np.arange(1, own.sum() + 1, dtype=np.uint32)
    out = new[lab]
    feats = None
    if P['features']:
        inten = np.concatenate([rgb.astype(np.float32), h[..., None]], axis=2)
        feats = measure.regionprops_table(
            out, intensity_image=inten,
            properties=('label', 'area', 'centroid', 'bbox', 'perimeter', 'equivalent_diameter', 'axis_major_length',
                        'axis_minor_length', 'eccentricity', 'solidity', 'intensity_mean'))
        for k in ('centroid-1', 'bbox-1', 'bbox-3'):
            feats[k] = feats[k] + ex0
        for k in ('centroid-0', 'bbox-0', 'bbox-2'):
            feats[k] = feats[k] + ey0
    return (ex0, ey0, out, int(own.sum()), feats)


def run(slide, out_path, tile=1024, overlap=64, processes=1, mpp=None, features=None):
    r = tiffio.LevelReader(slide)
    W, H, spp = r.width, r.height, r.spp
    r.close()
    if spp != 3:
        raise SystemExit(f'skimage_pipeline.py: error: {slide} has {spp} samples per pixel, expected RGB')
    mpp = mpp or tiffio.slide_mpp(slide)
    if not mpp:
        raise SystemExit(f'skimage_pipeline.py: error: {slide} has no mpp; give --mpp')
    px = lambda um: um / mpp
    um = dict(DEFAULTS_UM, **PARAM_OVERRIDE)
    params = dict(sigma_px=px(um['sigma_um']), dist_sigma_px=px(um['dist_sigma_um']), h_px=px(um['h_um']),
                  min_area_px=int(round(um['min_area_um2'] / mpp**2)), features=bool(features))
    cores = [(x, y, min(x + tile, W), min(y + tile, H)) for y in range(0, H, tile) for x in range(0, W, tile)]
    t0 = time.perf_counter()
    with mp.Pool(processes, initializer=_init, initargs=(slide, params)) as pool:
        hist = sum(pool.imap_unordered(_pass1, cores))
    centers = (np.arange(HBINS) + 0.5) * (HMAX / HBINS)
    thr = float(threshold_otsu(hist=(hist, centers)))
    t1 = time.perf_counter()
    params['threshold'] = thr
    labels = np.zeros((H, W), np.uint32)
    jobs = [((x0, y0, x1, y1), (max(0, x0 - overlap), max(0, y0 - overlap), min(W, x1 + overlap),
                                min(H, y1 + overlap))) for (x0, y0, x1, y1) in cores]
    n, tables = 0, []
    with mp.Pool(processes, initializer=_init, initargs=(slide, params)) as pool:
        for ex0, ey0, lab, k, feats in pool.imap(_pass2, jobs):
            if k:
                view = labels[ey0:ey0 + lab.shape[0], ex0:ex0 + lab.shape[1]]
                m = lab > 0
                view[m] = lab[m] + n
                if feats is not None:
                    feats['label'] = feats['label'] + n
                    tables.append(feats)
            n += k
    t2 = time.perf_counter()
    if features:
        _write_csv(features, tables, mpp)
    t3 = time.perf_counter()
    tiffio.write_tiled(out_path, (H, W), np.uint32,
                       (np.ascontiguousarray(_pad(labels[y:y + 256, x:x + 256], 256)) for y in range(0, H, 256)
                        for x in range(0, W, 256)), tile=256, mpp=mpp)
    t4 = time.perf_counter()
    return dict(pixels=W * H, width=W, height=H, mpp=mpp, processes=processes, tiles=len(cores), tile=tile,
                overlap=overlap, objects=n, threshold=thr, pass1_s=round(t1 - t0, 3), pass2_s=round(t2 - t1, 3),
                seconds=round(t2 - t0, 3), pixels_per_s=round(W * H / (t2 - t0)), features_csv_s=round(t3 - t2, 3),
                write_s=round(t4 - t3, 3), total_s=round(t4 - t0, 3))


def _pad(a, t):
    if a.shape == (t, t):
        return a
    b = np.zeros((t, t), a.dtype)
    b[:a.shape[0], :a.shape[1]] = a
    return b


def _write_csv(path, tables, mpp):
    cols = ['label', 'area', 'area_um2', 'centroid-1', 'centroid-0', 'bbox-1', 'bbox-0', 'bbox-3', 'bbox-2', 'perimeter',
            'equivalent_diameter', 'axis_major_length', 'axis_minor_length', 'eccentricity', 'solidity'] + \
        [f'intensity_mean-{i}' for i in range(4)]
    names = ['label', 'area_px', 'area_um2', 'centroid_x', 'centroid_y', 'bbox_x0', 'bbox_y0', 'bbox_x1', 'bbox_y1',
             'perimeter', 'equivalent_diameter', 'major_axis', 'minor_axis', 'eccentricity', 'solidity', 'mean_r',
             'mean_g', 'mean_b', 'mean_hematoxylin']
    with open(path, 'w') as f:
        f.write(','.join(names) + '\n')
        for t in tables:
            t['area_um2'] = t['area'] * mpp * mpp
            arr = np.column_stack([np.asarray(t[c], np.float64) for c in cols])
            np.savetxt(f, arr, fmt=['%d', '%d', '%.3f'] + ['%.3f'] * 2 + ['%d'] * 4 + ['%.4f'] * 10, delimiter=',')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('slide')
    ap.add_argument('out')
    ap.add_argument('--tile', type=int, default=1024)
    ap.add_argument('--overlap', type=int, default=64)
    ap.add_argument('--processes', type=int, default=os.cpu_count())
    ap.add_argument('--mpp', type=float, help='microns per pixel when the slide has none')
    ap.add_argument('--features', metavar='CSV', help='also measure every object (regionprops) into CSV')
    a = ap.parse_args()
    if a.tile < 64 or a.overlap < 0 or a.processes < 1:
        ap.error('need --tile >= 64, --overlap >= 0, --processes >= 1')
    print(json.dumps(run(a.slide, a.out, a.tile, a.overlap, a.processes, a.mpp, a.features)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
