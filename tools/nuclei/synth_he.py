#!/usr/bin/python3
"""Synthetic H&E slide with its nuclei ground truth.

  tools/nuclei/synth_he.py OUT.tif GT.tif --size WxH --mpp 0.5 --seed N [--tile 256] [--jpeg Q]

OUT.tif: one tiled level, JPEG tiles (YCbCr 4:2:0, what scanners write),
resolution tags in pixels per cm (Tilewave reads them as mpp).
GT.tif: uint32 labels, one per nucleus (1..N, numbered in the order the
generator settles them: by 64-um cell rows, then columns), 0 elsewhere;
tiled, deflate.

What is drawn, sizes in microns scaled by --mpp:
- tissue and glass from a low-frequency noise field; a slowly varying stain
  strength (section thickness) and focus;
- stroma: eosin with collagen fibres (white noise filtered by oriented
  anisotropic Gaussians, steered by an orientation field) and spindle
  fibroblast nuclei aligned with them;
- epithelial nests: purple cytoplasm, large vesicular nuclei (7.5-12 um,
  elliptic, irregular or lobed boundary, dark rim, nucleoli, 5% pale),
  packed so that many touch, and 4% overlapping-looking pairs (the stains
  add where they overlap; the ground truth gives the overlap to the nucleus
  on top);
- lymphocyte aggregates: small dark round nuclei (5-7 um), densely packed;
- red blood cells in vessels (eosin discs, pale centres, not nuclei);
- chromatin texture, optical blur, sensor noise, JPEG.
Colours are Beer-Lambert with the Ruifrok-Johnston H&E(-DAB) stain vectors
of skimage.color.rgb_from_hed, i.e. skimage.color.hed2rgb scaled by the
glass brightness, so rgb2hed recovers the hematoxylin.

Streaming: every field is a pure function of global pixel coordinates
(hashed lattices, block-seeded white noise), and nuclei come from 64-um
cells, each seeded by (seed, cell), thinned by a Matern type II hard-core
rule that needs only the candidates of neighbouring cells. The slide is
rendered one tile row at a time in column chunks, with margins for the
filters, so memory is bounded by the width, not the area, and the pixels
do not depend on --tile (except through JPEG blocking; GT not at all).
"""
import argparse
import json
import math
import sys
import time

import cv2
import numpy as np
from scipy.spatial import cKDTree
from skimage.color import rgb_from_hed

import tiffio

CELL_UM = 64.0  # nucleus placement cell
RMAX_UM = 9.5  # largest nucleus (or red cell) radius, lobes included
FIBRE_Q_UM = 1.0  # lattice step of the fibre texture
WHITE_BLOCK = (64, 1024)  # rows x columns per seeded white-noise block
SALT = dict(tissue=1, stain=2, nest=3, lymph=4, vessel=5, theta=6, focus=7, glass=8, fibre=9, chroma=10, sensor=11,
            cells=12, blush=13)


# ---------------------------------------------------------------- fields
def _hash01(ix, iy, salt, seed):
    """Uniform [0,1) from integer lattice coordinates (splitmix64 finaliser)."""
    with np.errstate(over='ignore'):
        h = (np.asarray(ix, np.int64).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             ^ np.asarray(iy, np.int64).astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
             ^ np.uint64((seed * 1000003 + salt * 7919) & 0xFFFFFFFFFFFFFFFF))
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _smooth(t):
    return t * t * (3 - 2 * t)


def value_noise(x0, y0, w, h, scale, salt, seed):
    """Smooth value noise in [0,1] on pixels [x0,x0+w) x [y0,y0+h), lattice step `scale` px."""
    xs = (np.arange(x0, x0 + w) + 0.5) / scale
    ys = (np.arange(y0, y0 + h) + 0.5) / scale
    ix, iy = np.floor(xs).astype(np.int64), np.floor(ys).astype(np.int64)
    i0, j0 = ix.min(), iy.min()
    lat = _hash01(np.arange(i0, ix.max() + 2)[None, :], np.arange(j0, iy.max() + 2)[:, None], salt, seed)
    sy = _smooth(ys - iy)[:, None]
    rows = lat[iy - j0] * (1 - sy) + lat[iy - j0 + 1] * sy
    sx = _smooth(xs - ix)[None, :]
    return (rows[:, ix - i0] * (1 - sx) + rows[:, ix - i0 + 1] * sx).astype(np.float32)


def value_noise_at(x, y, scale, salt, seed):
    xs, ys = np.asarray(x) / scale, np.asarray(y) / scale
    ix, iy = np.floor(xs).astype(np.int64), np.floor(ys).astype(np.int64)
    sx, sy = _smooth(xs - ix), _smooth(ys - iy)
    a = _hash01(ix, iy, salt, seed) * (1 - sx) + _hash01(ix + 1, iy, salt, seed) * sx
    b = _hash01(ix, iy + 1, salt, seed) * (1 - sx) + _hash01(ix + 1, iy + 1, salt, seed) * sx
    return a * (1 - sy) + b * sy


def fbm(x0, y0, w, h, scale, salt, seed, octaves=3):
    out, amp, tot = 0, 1.0, 0.0
    for o in range(octaves):
        out = out + amp * value_noise(x0, y0, w, h, scale / 2**o, salt * 16 + o, seed)
        tot += amp
        amp *= 0.5
    return out / tot


def fbm_at(x, y, scale, salt, seed, octaves=3):
    out, amp, tot = 0, 1.0, 0.0
    for o in range(octaves):
        out = out + amp * value_noise_at(x, y, scale / 2**o, salt * 16 + o, seed)
        tot += amp
        amp *= 0.5
    return out / tot


def white(x0, y0, w, h, salt, seed):
    """Standard normal white noise, a pure function of the pixel: blocks of
    WHITE_BLOCK each drawn from its own seeded generator."""
    bh, bw = WHITE_BLOCK
    out = np.empty((h, w), np.float32)
    for by in range(y0 // bh, (y0 + h - 1) // bh + 1):
        for bx in range(x0 // bw, (x0 + w - 1) // bw + 1):
            blk = np.random.default_rng([seed, salt, by + (1 << 30), bx + (1 << 30)]).standard_normal(
                (bh, bw), dtype=np.float32)
            ya, yb = max(y0, by * bh), min(y0 + h, (by + 1) * bh)
            xa, xb = max(x0, bx * bw), min(x0 + w, (bx + 1) * bw)
            out[ya - y0:yb - y0, xa - x0:xb - x0] = blk[ya - by * bh:yb - by * bh, xa - bx * bw:xb - bx * bw]
    return out


class Model:
    """The slide: its region fields, given mpp and seed."""

    def __init__(self, width, height, mpp, seed):
        self.w, self.h, self.mpp, self.seed = width, height, mpp, seed
        self.px = lambda um: um / mpp

    # Region fields; the same formulas at points (for placing nuclei) and on grids.
    def regions_at(self, x, y):
        s, p = self.seed, self.px
        t = _ss(0.47, 0.52, fbm_at(x, y, p(600), SALT['tissue'], s))
        e = _ss(0.53, 0.58, fbm_at(x, y, p(220), SALT['nest'], s)) * t
        l = _ss(0.64, 0.68, fbm_at(x, y, p(150), SALT['lymph'], s)) * t * (1 - e)
        v = _ss(0.74, 0.78, value_noise_at(x, y, p(70), SALT['vessel'], s)) * t * (1 - e)
        return t, e, l, v

    def regions(self, x0, y0, w, h):
        s, p = self.seed, self.px
        t = _ss(0.47, 0.52, fbm(x0, y0, w, h, p(600), SALT['tissue'], s))
        e = _ss(0.53, 0.58, fbm(x0, y0, w, h, p(220), SALT['nest'], s)) * t
        l = _ss(0.64, 0.68, fbm(x0, y0, w, h, p(150), SALT['lymph'], s)) * t * (1 - e)
        v = _ss(0.74, 0.78, value_noise(x0, y0, w, h, p(70), SALT['vessel'], s)) * t * (1 - e)
        return t, e, l, v

    def theta_at(self, x, y):
        return (value_noise_at(x, y, self.px(160), SALT['theta'], self.seed) * 2.5 * math.pi) % math.pi

    def fibres(self, x0, y0, w, h):
        """Collagen texture in [0,1]: white noise on a 1-um lattice filtered by
        anisotropic Gaussians at four orientations, blended by the local fibre
        orientation, then upsampled to pixels."""
        S = max(1, int(round(FIBRE_Q_UM / self.mpp)))
        sl, ss_ = 4.0, 0.7  # lattice units (um): fibres ~1.5 um thick, ~10 um coherent
        kr = int(math.ceil(3 * sl))
        j0, j1 = (y0 // S) - 1, (y0 + h - 1) // S + 2
        i0, i1 = (x0 // S) - 1, (x0 + w - 1) // S + 2
        nz = white(i0 - kr, j0 - kr, i1 - i0 + 2 * kr, j1 - j0 + 2 * kr, SALT['fibre'], self.seed)
        yy, xx = np.mgrid[-kr:kr + 1, -kr:kr + 1].astype(np.float32)
        # the orientation field at the lattice points, same formula as theta_at
        theta = (value_noise(i0, j0, i1 - i0, j1 - j0, self.px(160) / S, SALT['theta'], self.seed) * 2.5 *
                 math.pi) % math.pi
        acc = np.zeros((j1 - j0, i1 - i0), np.float32)
        wsum = np.zeros_like(acc)
        for k in range(4):
            a = k * math.pi / 4
            u = xx * math.cos(a) + yy * math.sin(a)
            v = -xx * math.sin(a) + yy * math.cos(a)
            ker = np.exp(-0.5 * ((u / sl)**2 + (v / ss_)**2))
            ker /= math.sqrt((ker**2).sum())  # unit output variance
            f = cv2.filter2D(nz, -1, ker, borderType=cv2.BORDER_REPLICATE)[kr:-kr, kr:-kr]
            wk = np.maximum(0, np.cos(2 * (theta - a)))**4
            acc += wk * f
            wsum += wk
        lat = acc / np.maximum(wsum, 1e-6)
        lat = 0.5 + 0.5 * np.tanh(1.2 * lat)
        if S == 1:
            return lat[y0 - j0:y0 - j0 + h, x0 - i0:x0 - i0 + w]
        up = cv2.resize(lat, ((i1 - i0) * S, (j1 - j0) * S), interpolation=cv2.INTER_LINEAR)
        return up[y0 - j0 * S:y0 - j0 * S + h, x0 - i0 * S:x0 - i0 * S + w]


def _ss(a, b, x):
    t = np.clip((np.asarray(x) - a) / (b - a), 0, 1)
    return (t * t * (3 - 2 * t)).astype(np.float32)


# ---------------------------------------------------------------- nuclei
# Per type: candidate intensity (per um^2, before thinning by its region),
# hard-core factor against other nuclei (distance >= f * (r_i + r_j)).
TYPES = ('epi', 'lym', 'fib', 'rbc')
LAMBDA = dict(epi=0.03, lym=0.06, fib=0.0025, rbc=0.02)
HARDCORE = dict(epi=0.92, lym=0.95, fib=1.0, rbc=1.0)

class Nuclei:
    """Candidates per cell, Matern-II thinning per cell row, ids in row order."""

    def __init__(self, model):
        self.m = model
        self.C = max(16, int(round(CELL_UM / model.mpp)))
        self.ncx = (model.w + self.C - 1) // self.C
        self.ncy = (model.h + self.C - 1) // self.C
        self.cand = {}  # cell row -> candidate dict of arrays
        self.kept = {}  # cell row -> list of nucleus dicts
        self.resolved = -1
        self.next_id = 1

    def _candidates_cell(self, cx, cy):
        m, C = self.m, self.C
        rng = np.random.default_rng([m.seed, SALT['cells'], cx, cy])
        area_um = (C * m.mpp)**2
        draws = []
        for t in TYPES:
            n = rng.poisson(LAMBDA[t] * area_um)
            # attributes drawn for every candidate, so thinning never shifts the stream
            draws.append((cx * C + rng.random(n) * C, cy * C + rng.random(n) * C, rng.random(n), rng.random((n, 40))))
        x = np.concatenate([d[0] for d in draws])
        y = np.concatenate([d[1] for d in draws])
        tt, e, l, v = m.regions_at(x, y)
        prob = dict(epi=e, lym=l, fib=tt * (1 - e) * (1 - l) * (1 - v), rbc=v)
        theta = m.theta_at(x, y)
        out, base = [], 0
        for ti, (t, (xs, ys, u, r)) in enumerate(zip(TYPES, draws)):
            n = len(xs)
            sel = (xs < m.w) & (ys < m.h) & (u < prob[t][base:base + n])
            for k in np.nonzero(sel)[0]:
                out.append(self._attributes(t, xs[k], ys[k], r[k], cx, cy, k, ti, theta[base + k]))
                if t == 'epi' and r[k, 30] < 0.04:
                    out.append(self._partner(out[-1], r[k]))
            base += n
        return out

    def _attributes(self, t, x, y, r, cx, cy, k, ti, theta):
        px = self.m.px
        d = dict(x=x, y=y, type=t, group=((cy * self.ncx + cx) * 4 + ti) * 100000 + k, add=False, z=r[0], nucleoli=[])
        amps = r[10:15] * 2 - 1  # harmonics 2..6
        ph = r[15:20] * 2 * math.pi
        if t == 'epi':
            deq = px(7.5 + 4.5 * r[1])
            ratio = 0.6 + 0.35 * r[2]
            amps = amps * 0.05
            if r[3] < 0.15:  # lobed: a strong third or fourth harmonic
                amps[1 + int(r[4] < 0.5)] = 0.10 + 0.08 * r[5]
            d.update(h=(0.9 + 0.6 * r[6]) * (0.7 if r[7] < 0.05 else 1.0), chroma=0.3, rim=0.3, ves=0.2)
            nn = int(r[8] * 3)
            d['nucleoli'] = [(r[21 + 3 * i] * 2 - 1, r[22 + 3 * i] * 2 - 1, px(0.45 + 0.3 * r[23 + 3 * i]))
                             for i in range(nn)]
            rot = r[9] * math.pi
        elif t == 'lym':
            deq = px(5.0 + 2.0 * r[1])
            ratio = 0.85 + 0.15 * r[2]
            amps = amps * 0.025
            d.update(h=1.6 + 0.6 * r[6], chroma=0.18, rim=0.1, ves=0.0)
            rot = r[9] * math.pi
        elif t == 'fib':
            a = px(4.5 + 1.7 * r[1])
            ratio = 0.28 + 0.17 * r[2]
            deq = 2 * a * math.sqrt(ratio)
            amps = amps * 0.025
            d.update(h=1.2 + 0.5 * r[6], chroma=0.15, rim=0.1, ves=0.0)
            rot = float(theta) + (r[9] - 0.5) * 0.4
        else:  # red blood cell
            deq = px(6.5 + 1.5 * r[1])
            ratio = 0.8 + 0.2 * r[2]
            amps = amps * 0.02
            d.update(h=0.05, e=0.9 + 0.4 * r[6], chroma=0.0, rim=0.0, ves=0.0)
            rot = r[9] * math.pi
        # a*b = (deq/2)^2 keeps the equivalent diameter whatever the ratio
        d['a'] = deq / 2 / math.sqrt(ratio)
        d['b'] = deq / 2 * math.sqrt(ratio)
        d['rot'] = rot
        d['amps'], d['phases'] = amps, ph
        d.setdefault('e', 0.0)
        return d

    def _partner(self, p, r):
        """An overlapping-looking partner: same kind, centre 0.6-0.8 of the
        summed radii away, drawn on top, stains adding."""
        q = dict(p)
        s = 0.8 + 0.3 * r[31]
        q['a'], q['b'] = p['a'] * s, p['b'] * s
        rp, rq = math.sqrt(p['a'] * p['b']), math.sqrt(q['a'] * q['b'])
        ang = r[32] * 2 * math.pi
        dist = (0.6 + 0.2 * r[33]) * (rp + rq)
        q['x'], q['y'] = p['x'] + dist * math.cos(ang), p['y'] + dist * math.sin(ang)
        q['rot'] = r[34] * math.pi
        q['phases'] = (p['phases'] + r[35] * 6) % (2 * math.pi)
        q['z'] = p['z'] + 1e-9
        q['add'] = True
        q['nucleoli'] = []
        q['h'] = p['h'] * (0.8 + 0.3 * r[36])
        if q['x'] >= self.m.w or q['y'] >= self.m.h or q['x'] < 0 or q['y'] < 0:
            q['h'] = 0  # off the slide: dropped below
        return q

    def _row_candidates(self, cy):
        if cy < 0 or cy >= self.ncy:
            return []
        if cy not in self.cand:
            self.cand[cy] = [n for cx in range(self.ncx) for n in self._candidates_cell(cx, cy) if n['h'] > 0]
        return self.cand[cy]

    def _resolve(self, cy):
        """Matern type II: a candidate dies if a higher-priority candidate of
        another group lies closer than the hard-core distance."""
        own = self._row_candidates(cy)
        nb = self._row_candidates(cy - 1) + own + self._row_candidates(cy + 1)
        kept = []
        if own:
            pts = np.array([[n['x'], n['y']] for n in nb])
            r = np.array([math.sqrt(n['a'] * n['b']) for n in nb])
            z = np.array([n['z'] for n in nb])
            g = np.array([n['group'] for n in nb])
            f = np.array([HARDCORE[n['type']] for n in nb])
            off = len(self._row_candidates(cy - 1)) if cy > 0 else 0
            tree = cKDTree(pts)
            pairs = tree.query_pairs(2 * self.m.px(RMAX_UM), output_type='ndarray')
            dead = np.zeros(len(nb), bool)
            if len(pairs):
                i, j = pairs[:, 0], pairs[:, 1]
                dmin = np.maximum(f[i], f[j]) * (r[i] + r[j])
                dd = np.hypot(pts[i, 0] - pts[j, 0], pts[i, 1] - pts[j, 1])
                c = (dd < dmin) & (g[i] != g[j])
                i, j = i[c], j[c]
                lo = np.where(z[i] < z[j], i, j)
                # partners (z + 1e-9) share their parent's fate against others
                dead[lo] = True
            for k in range(off, off + len(own)):
                if not dead[k]:
                    kept.append(nb[k])
        for n in kept:
            if n['type'] != 'rbc':
                n['id'] = self.next_id
                self.next_id += 1
            else:
                n['id'] = 0
        self.kept[cy] = kept

    def rows(self, cy0, cy1):
        """Kept nuclei of cell rows [cy0, cy1] (resolving in order)."""
        cy1 = min(cy1, self.ncy - 1)
        while self.resolved < cy1:
            self.resolved += 1
            self._resolve(self.resolved)
        for old in [k for k in self.cand if k < cy0 - 2]:
            del self.cand[old]
        for old in [k for k in self.kept if k < cy0 - 1]:
            del self.kept[old]
        out = []
        for cy in range(max(0, cy0), cy1 + 1):
            out.extend(self.kept[cy])
        return out


def _draw(n, x0, y0, H, E, L, chroma):
    """Rasterise one nucleus (or red cell) into the chunk arrays at origin (x0, y0)."""
    R = max(n['a'], n['b']) * (1 + np.abs(n['amps']).sum()) + 1.5
    xa, xb = int(math.floor(n['x'] - R)) - x0, int(math.ceil(n['x'] + R)) - x0 + 1
    ya, yb = int(math.floor(n['y'] - R)) - y0, int(math.ceil(n['y'] + R)) - y0 + 1
    xa, ya = max(xa, 0), max(ya, 0)
    xb, yb = min(xb, H.shape[1]), min(yb, H.shape[0])
    if xa >= xb or ya >= yb:
        return
    dx = (np.arange(xa, xb, dtype=np.float32) + x0 + 0.5 - n['x'])[None, :]
    dy = (np.arange(ya, yb, dtype=np.float32) + y0 + 0.5 - n['y'])[:, None]
    c, s = math.cos(n['rot']), math.sin(n['rot'])
    u, v = dx * c + dy * s, -dx * s + dy * c
    rho = np.hypot(u, v)
    phi = np.arctan2(v, u)
    a, b = n['a'], n['b']
    rad = a * b / np.sqrt((b * np.cos(phi))**2 + (a * np.sin(phi))**2)
    harm = 1.0
    for k, (am, ph) in enumerate(zip(n['amps'], n['phases'])):
        harm = harm + am * np.cos((k + 2) * phi + ph)
    rad = rad * np.maximum(harm, 0.6)
    cov = np.clip(rad - rho + 0.5, 0, 1)
    if not cov.any():
        return
    q = np.minimum(rho / np.maximum(rad, 1e-3), 1.0)
    sl = (slice(ya, yb), slice(xa, xb))
    if n['type'] == 'rbc':
        e = n['e'] * cov * (1 - 0.4 * (1 - q * q))
        np.maximum(E[sl], e, out=E[sl])
        return
    tex = (1 + n['chroma'] * chroma[sl]) * (1 + n['rim'] * _ss(0.75, 1.0, q)) * (1 - n['ves'] * (1 - q * q))
    h = n['h'] * cov * np.maximum(tex, 0.2)
    for (ox, oy, rr) in n['nucleoli']:
        cx, cy = 0.45 * a * ox, 0.45 * b * oy
        h += 0.8 * np.clip(rr - np.hypot(u - cx, v - cy) + 0.5, 0, 1)
    if n['add']:
        H[sl] += h
    else:
        np.maximum(H[sl], h, out=H[sl])
    E[sl] *= 1 - 0.5 * cov  # the nucleus displaces the cytoplasm/stroma
    L[sl][rho <= rad] = n['id']


# ---------------------------------------------------------------- render
class Renderer:
    def __init__(self, width, height, mpp, seed):
        self.m = Model(width, height, mpp, seed)
        self.nuc = Nuclei(self.m)
        px = self.m.px
        self.blur_um = (0.30, 0.55)  # optical blur sigma range (focus varies)
        self.margin = int(math.ceil(3 * px(self.blur_um[1]))) + 4
        self.rmax = px(RMAX_UM)
        self.M = rgb_from_hed.astype(np.float32)  # rows: optical density per unit of H, E, DAB

    def chunk(self, x0, y0, w, h):
        """RGB u8 (h, w, 3) and labels u32 (h, w) of pixels [x0,x0+w) x [y0,y0+h)."""
        m, s, px = self.m, self.m.seed, self.m.px
        M = self.margin
        ex0, ey0, ew, eh = x0 - M, y0 - M, w + 2 * M, h + 2 * M
        t, e, l, v = m.regions(ex0, ey0, ew, eh)
        stain = 0.8 + 0.4 * value_noise(ex0, ey0, ew, eh, px(900), SALT['stain'], s)
        fib = m.fibres(ex0, ey0, ew, eh)
        stroma = t * (1 - e)
        blush = value_noise(ex0, ey0, ew, eh, px(40), SALT['blush'], s)
        # eosin: fibrous stroma with clefts, cytoplasm in nests, lighter in aggregates
        E = stroma * (0.10 + 0.55 * fib**1.5) * (1 - 0.5 * l) + e * (0.28 + 0.12 * blush)
        # a faint hematoxylin haze in tissue (mucin, cytoplasm), purple in nests
        H = t * (0.04 + 0.03 * blush) + e * 0.10
        chroma = white(ex0, ey0, ew, eh, SALT['chroma'], s)
        sig = px(0.35)
        chroma = cv2.GaussianBlur(chroma, (0, 0), sig) * (2 * math.sqrt(math.pi) * sig)
        L = np.zeros((eh, ew), np.uint32)
        cy0 = int((ey0 - self.rmax) // self.nuc.C)
        cy1 = int((ey0 + eh + self.rmax) // self.nuc.C)
        for n in sorted(self.nuc.rows(cy0, cy1), key=lambda n: n['z']):
            if (n['x'] + self.rmax < ex0 or n['x'] - self.rmax > ex0 + ew or n['y'] + self.rmax < ey0
                    or n['y'] - self.rmax > ey0 + eh):
                continue
            _draw(n, ex0, ey0, H, E, L, chroma)
        H *= stain
        E *= stain
        od = H[..., None] * self.M[0] + E[..., None] * self.M[1]
        glass = 0.955 + 0.02 * value_noise(ex0, ey0, ew, eh, px(1500), SALT['glass'], s)
        rgb = glass[..., None] * np.exp(-od) * np.array([1.0, 0.99, 1.01], np.float32)
        # focus varies across the slide: blend two blurs
        f = value_noise(ex0, ey0, ew, eh, px(700), SALT['focus'], s)[..., None]
        b0 = cv2.GaussianBlur(rgb, (0, 0), px(self.blur_um[0]))
        b1 = cv2.GaussianBlur(rgb, (0, 0), px(self.blur_um[1]))
        rgb = (b0 * (1 - f) + b1 * f)[M:M + h, M:M + w]
        noise = np.stack([white(x0, y0, w, h, SALT['sensor'] * 8 + c, s) for c in range(3)], -1)
        out = np.clip(rgb * 255 + 1.8 * noise + 0.5, 0, 255).astype(np.uint8)
        lab = L[M:M + h, M:M + w]
        lab[max(0, m.h - y0):, :] = 0
        lab[:, max(0, m.w - x0):] = 0
        return out, lab


def generate(out, gt, width, height, mpp, seed, tile=256, jpeg=85, chunk_w=2048):
    """Writes both files; returns the number of nuclei. GT tiles go to a
    second writer running in a thread, fed from the same renderer."""
    import queue
    import threading
    r = Renderer(width, height, mpp, seed)
    cw = max(tile, (chunk_w // tile) * tile)
    q_gt = queue.Queue(maxsize=2 * ((width + tile - 1) // tile))
    err, aborted = [], []

    def gt_tiles():
        while True:
            item = q_gt.get()
            if item is None:
                if aborted:
                    raise RuntimeError('aborted')  # do not let tifffile finish a partial file quietly
                return
            yield item

    def gt_writer():
        try:
            tiffio.write_tiled(gt, (height, width), np.uint32, gt_tiles(), tile=tile, mpp=mpp,
                               description=json.dumps(dict(synth_he='ground truth', seed=seed, mpp=mpp)))
        except BaseException as ex:  # reported by the main thread
            err.append(ex)
            while q_gt.get() is not None:
                pass

    th = threading.Thread(target=gt_writer)
    th.start()

    def rgb_tiles():
        for y0 in range(0, height, tile):
            for xc in range(0, width, cw):
                w = min(cw, ((width - xc + tile - 1) // tile) * tile)
                rgb, lab = r.chunk(xc, y0, w, tile)
                for x in range(0, w, tile):
                    q_gt.put(np.ascontiguousarray(lab[:, x:x + tile]))
                    yield np.ascontiguousarray(rgb[:, x:x + tile])

    try:
        tiffio.write_tiled(out, (height, width, 3), np.uint8, rgb_tiles(), tile=tile, jpeg=jpeg, mpp=mpp,
                           description=f'synthetic H&E (tools/nuclei/synth_he.py) seed={seed} |MPP = {mpp}')
    except BaseException:
        aborted.append(True)
        raise
    finally:
        q_gt.put(None)
        th.join()
    if err:
        raise err[0]
    return r.nuc.next_id - 1


def parse_size(s):
    try:
        w, h = s.lower().split('x')
        w, h = int(w), int(h)
        if w <= 0 or h <= 0:
            raise ValueError
        return w, h
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size '{s}' (expected WxH, e.g. 4096x4096)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('out')
    ap.add_argument('gt')
    ap.add_argument('--size', type=parse_size, required=True, help='WxH pixels')
    ap.add_argument('--mpp', type=float, default=0.5, help='microns per pixel (0.5 ~ 20x, 0.25 ~ 40x)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--tile', type=int, default=256, help='TIFF tile size, a multiple of 16')
    ap.add_argument('--jpeg', type=int, default=85, help='JPEG quality')
    a = ap.parse_args()
    if a.tile <= 0 or a.tile % 16:
        ap.error('--tile must be a positive multiple of 16')
    if not 0.05 <= a.mpp <= 4:
        ap.error('--mpp must lie in [0.05, 4]')
    if not 1 <= a.jpeg <= 100:
        ap.error('--jpeg must lie in [1, 100]')
    t = time.perf_counter()
    n = generate(a.out, a.gt, a.size[0], a.size[1], a.mpp, a.seed, a.tile, a.jpeg)
    dt = time.perf_counter() - t
    px = a.size[0] * a.size[1]
    print(json.dumps(dict(nuclei=n, pixels=px, seconds=round(dt, 3), pixels_per_s=round(px / dt))))


if __name__ == '__main__':
    sys.exit(main())
