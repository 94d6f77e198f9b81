#!/usr/bin/python3
"""Instance-segmentation accuracy of a label image against ground truth.

  tools/nuclei/score.py PRED.tif GT.tif [--json] [--iou 0.5]

Both are level-0 label images (any unsigned integer type, 0 = background),
of the same size; read band by band, so any slide size fits.

Reported:
- detection at IoU >= 0.5: pairs (gt, pred) with IoU >= the threshold,
  matched one to one (greedy by decreasing IoU, ties by labels; above 0.5 a
  match is unique anyway); precision = TP/#pred, recall = TP/#gt,
  F1 = 2TP/(#gt + #pred); mean IoU of the matches (SQ) and PQ = SQ * F1.
- AJI, the Aggregated Jaccard Index of Kumar et al. 2017 (IEEE TMI 36(7),
  Algorithm 1): for every ground-truth object G_i, the prediction S_j with
  the largest IoU against it (any prediction, used or not: the original
  definition, not AJI+); C += |G_i & S_j|, U += |G_i | S_j|; a G_i that meets
  no prediction adds |G_i| to U; finally every prediction never chosen adds
  its area to U. AJI = C / U.

Everything comes from one sparse contingency table: the distinct
(gt, pred) pairs of the pixels where either is non-zero, with their counts
(np.unique on gt << 32 | pred per band, merged), so the cost is a sort of
the foreground pixels, whatever the number of objects.
"""
import argparse
import json
import sys

import numpy as np

import tiffio

BAND_ROWS = 1024


def contingency(pred_path, gt_path):
    """Returns (g, p, n): distinct pairs with counts, over pixels where gt or pred > 0."""
    rp, rg = tiffio.LevelReader(pred_path), tiffio.LevelReader(gt_path)
    try:
        if rp.shape() != rg.shape():
            raise SystemExit(f'score.py: error: {pred_path} is {rp.shape()}, {gt_path} is {rg.shape()}')
        if rp.spp != 1 or rg.spp != 1:
            raise SystemExit('score.py: error: label images must have one sample per pixel')
        keys, counts = [], []
        for y in range(0, rg.height, BAND_ROWS):
            k, c = band_pairs(rp.read(y, y + BAND_ROWS), rg.read(y, y + BAND_ROWS))
            keys.append(k)
            counts.append(c)
    finally:
        rp.close()
        rg.close()
    return merge_pairs(keys, counts)


def band_pairs(pred, gt):
    pred, gt = np.asarray(pred), np.asarray(gt)
    if pred.shape != gt.shape:
        raise ValueError(f'label images of different shapes {pred.shape} and {gt.shape}')
    if (pred.dtype.kind not in 'ub' or gt.dtype.kind not in 'ub') and (pred.min() < 0 or gt.min() < 0):
        raise SystemExit('score.py: error: labels must be non-negative')
    fg = (pred != 0) | (gt != 0)
    key = (gt[fg].astype(np.uint64) << np.uint64(32)) | pred[fg].astype(np.uint64)
    return np.unique(key, return_counts=True)


def merge_pairs(keys, counts):
    if not keys:
        key, cnt = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    else:
        key, inv = np.unique(np.concatenate(keys), return_inverse=True)
        cnt = np.bincount(inv, weights=np.concatenate(counts)).astype(np.int64)
    return (key >> np.uint64(32)).astype(np.int64), (key & np.uint64(0xFFFFFFFF)).astype(np.int64), cnt


def scores(g, p, n, iou_thr=0.5):
    """Metrics from the contingency pairs (g, p, count)."""
    g_ids, g_inv = np.unique(g[g > 0], return_inverse=True)
    area_g = np.bincount(g_inv, weights=n[g > 0]).astype(np.int64)
    p_ids, p_inv = np.unique(p[p > 0], return_inverse=True)
    area_p = np.bincount(p_inv, weights=n[p > 0]).astype(np.int64)
    both = (g > 0) & (p > 0)
    gi = np.searchsorted(g_ids, g[both])
    pi = np.searchsorted(p_ids, p[both])
    inter = n[both]
    union = area_g[gi] + area_p[pi] - inter
    iou = inter / union

    # one-to-one matches at IoU >= thr, greedy by IoU (then labels)
    cand = np.nonzero(iou >= iou_thr)[0]
    cand = cand[np.lexsort((pi[cand], gi[cand], -iou[cand]))]
    used_g = np.zeros(len(g_ids), bool)
    used_p = np.zeros(len(p_ids), bool)
    tp, iou_sum = 0, 0.0
    for k in cand:  # above 0.5 every pair is unique: this loop only confirms it
        if not used_g[gi[k]] and not used_p[pi[k]]:
            used_g[gi[k]] = used_p[pi[k]] = True
            tp += 1
            iou_sum += iou[k]
    ng, npred = len(g_ids), len(p_ids)
    precision = tp / npred if npred else (1.0 if ng == 0 else 0.0)
    recall = tp / ng if ng else (1.0 if npred == 0 else 0.0)
    f1 = 2 * tp / (ng + npred) if ng + npred else 1.0
    sq = iou_sum / tp if tp else 0.0

    # AJI: for each gt, its best prediction by IoU (ties: lowest pred label)
    order = np.lexsort((pi, -iou, gi))
    first = np.ones(len(order), bool)
    first[1:] = gi[order][1:] != gi[order][:-1]
    best = order[first]
    C = inter[best].sum()
    U = union[best].sum()
    has = np.zeros(len(g_ids), bool)
    has[gi[best]] = True
    U += area_g[~has].sum()
    chosen = np.zeros(len(p_ids), bool)
    chosen[pi[best]] = True
    U += area_p[~chosen].sum()
    aji = C / U if U else 1.0
    return dict(gt_objects=int(ng), pred_objects=int(npred), true_positives=int(tp), false_positives=int(npred - tp),
                false_negatives=int(ng - tp), precision=precision, recall=recall, f1=f1, mean_matched_iou=sq,
                pq=sq * f1, aji=aji, iou_threshold=iou_thr)


def score_arrays(pred, gt, iou_thr=0.5):
    """Scores two in-memory label arrays (for tests)."""
    k, c = band_pairs(pred, gt)
    return scores(*merge_pairs([k], [c]), iou_thr=iou_thr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('pred')
    ap.add_argument('gt')
    ap.add_argument('--json', action='store_true', help='print one JSON object')
    ap.add_argument('--iou', type=float, default=0.5, help='IoU threshold of a detection match')
    a = ap.parse_args()
    try:
        g, p, n = contingency(a.pred, a.gt)
    except (OSError, ValueError) as e:
        print(f'score.py: error: {e}', file=sys.stderr)
        return 1
    s = scores(g, p, n, a.iou)
    if a.json:
        print(json.dumps(s))
    else:
        print(f"objects: gt {s['gt_objects']}, pred {s['pred_objects']}; TP {s['true_positives']}, "
              f"FP {s['false_positives']}, FN {s['false_negatives']}")
        print(f"F1@{a.iou:g} {s['f1']:.4f}  precision {s['precision']:.4f}  recall {s['recall']:.4f}  "
              f"SQ {s['mean_matched_iou']:.4f}  PQ {s['pq']:.4f}")
        print(f"AJI {s['aji']:.4f}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
