#!/usr/bin/python3
"""Write N mutants of the seed files, deterministically from --seed.

  /usr/bin/python3 tools/fuzz/corpus/mutate.py SEEDDIR OUTDIR N --seed S [--max-ops 4]

Mutant i is seed file i mod (number of seeds), in name order, with 1 to
--max-ops mutations drawn from random.Random("S:i"), so any one mutant can
be made again alone and the same S always gives the same bytes. Names are
sS-IIIII-SEEDNAME (the seed's extension kept: .svs stays .svs);
OUTDIR/mutations.jsonl says which seed and which mutations made each file.

Generic mutations: bit flips, a 1/2/4/8-byte field set to an interesting
value (0, 0xff.., 0x7f.., 0x80.., 1, the file size, ...) in the file's byte
order, truncation (anywhere, or the last few hundred bytes), chunk
duplication / removal / overwrite / zeroing.
TIFF-aware mutations (the IFDs parsed with struct, tiffbytes.py): a tag's
value set to a boundary value for its kind (sizes, tile and strip geometry,
bits and samples, compression, photometric, offsets, byte counts, SubIFDs,
JPEGTables, ...), its count, type, id or out-of-line pointer changed, IFD
entry counts and next-IFD pointers (loops, the header, past the end), tiles
pointed at each other, bit flips inside an IFD, JPEG SOF / J2K SIZ frame
sizes and component counts, and the digits of an ImageDescription (Aperio
MPP, OME sizes).
"""
import argparse
import json
import os
import random
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiffbytes as tb  # noqa: E402

INTERESTING = {
    1: [0, 1, 0x7F, 0x80, 0xFF, 0x10, 0x40],
    2: [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x00FF, 0x0100, 0x1000],
    4: [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0, 0x0000FFFF, 0x00010000],
    8: [0, 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 32, 2 ** 62, 0xFFFFFFFF],
}
SIZE_VALUES = [0, 1, 2, 3, 7, 15, 16, 17, 255, 256, 257, 4095, 4096, 65535, 65536,
               2 ** 24, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 64 - 1]
TAG_VALUES = {
    tb.BITS_PER_SAMPLE: [0, 1, 2, 4, 7, 8, 12, 16, 24, 32, 64, 128, 255, 65535],
    tb.SAMPLES_PER_PIXEL: [0, 1, 2, 3, 4, 5, 40, 255, 65535],
    tb.COMPRESSION: [0, 1, 2, 5, 6, 7, 8, 32773, 32946, 33003, 33005, 34712, 34925, 50000, 50001, 65535],
    tb.PHOTOMETRIC: [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 32844, 32845, 65535],
    tb.PLANAR_CONFIG: [0, 1, 2, 3, 65535],
    tb.PREDICTOR: [0, 1, 2, 3, 4, 65535],
    tb.SAMPLE_FORMAT: [0, 1, 2, 3, 4, 5, 6, 65535],
    tb.EXTRA_SAMPLES: [0, 1, 2, 3, 65535],
    tb.YCBCR_SUBSAMPLING: [0, 1, 2, 3, 4, 8, 65535],
    tb.NEW_SUBFILE_TYPE: [0, 1, 2, 4, 8, 9, 0xFFFFFFFF],
    tb.RESOLUTION_UNIT: [0, 1, 2, 3, 65535],
}
SIZE_TAGS = (tb.IMAGE_WIDTH, tb.IMAGE_LENGTH, tb.TILE_WIDTH, tb.TILE_LENGTH, tb.ROWS_PER_STRIP)
COUNT_TAGS = (tb.STRIP_BYTE_COUNTS, tb.TILE_BYTE_COUNTS)
POINTER_TAGS = (tb.STRIP_OFFSETS, tb.TILE_OFFSETS, tb.SUB_IFDS)
# tags a mutation aims at most of the time
FAVOURITES = SIZE_TAGS + COUNT_TAGS + POINTER_TAGS + tuple(TAG_VALUES) + (
    tb.JPEG_TABLES, tb.COLOR_MAP, tb.IMAGE_DESCRIPTION)
TAG_IDS = list(FAVOURITES) + [0, 1, 65535, 33550, 33922, 34665, 65420]


def weighted(rng, table):
    total = sum(w for _, w in table)
    x = rng.uniform(0, total)
    for item, w in table:
        x -= w
        if x <= 0:
            return item
    return table[-1][0]


# ------------------------------------------------------------------ generic

def op_flip(rng, buf, t):
    k = rng.choice([1, 1, 2, 4, 8, 16])
    for _ in range(k):
        p = rng.randrange(len(buf))
        buf[p] ^= 1 << rng.randrange(8)
    return f"flip {k} bits"


def op_interesting(rng, buf, t):
    width = rng.choice([1, 2, 4, 8])
    if len(buf) <= width:
        return None
    p = rng.randrange(len(buf) - width)
    v = rng.choice(INTERESTING[width] + [len(buf) & ((1 << 8 * width) - 1)])
    bo = "little" if (t is None or t.bo == "<") else "big"
    buf[p:p + width] = v.to_bytes(width, bo)
    return f"set {width} bytes at {p} to {v:#x}"


def op_truncate(rng, buf, t):
    if len(buf) < 16:
        return None
    n = len(buf) - rng.randrange(1, min(512, len(buf) - 8)) if rng.random() < 0.5 else rng.randrange(8, len(buf))
    del buf[n:]
    return f"truncate to {n} bytes"


def span(rng, buf, maxlen=4096):
    a = rng.randrange(len(buf))
    return a, min(len(buf), a + rng.randrange(1, maxlen))


def op_dup(rng, buf, t):
    a, b = span(rng, buf)
    at = rng.randrange(len(buf))
    buf[at:at] = buf[a:b]
    return f"duplicate [{a},{b}) at {at}"


def op_remove(rng, buf, t):
    a, b = span(rng, buf)
    if b - a >= len(buf) - 8:
        return None
    del buf[a:b]
    return f"remove [{a},{b})"


def op_overwrite(rng, buf, t):
    a, b = span(rng, buf)
    at = rng.randrange(len(buf) - (b - a) + 1)
    buf[at:at + (b - a)] = bytes(buf[a:b])
    return f"copy [{a},{b}) over {at}"


def op_zero(rng, buf, t):
    a, b = span(rng, buf, 1024)
    buf[a:b] = bytes(b - a)
    return f"zero [{a},{b})"


# ------------------------------------------------------------------ TIFF-aware

def pick_entry(rng, t, tags=None):
    entries = [e for d in t.ifds for e in d.entries]
    if not entries:
        return None
    wanted = [e for e in entries if e.tag in (tags or FAVOURITES)]
    if wanted and (tags or rng.random() < 0.75):
        return rng.choice(wanted)
    return None if tags else rng.choice(entries)


def boundary_for(rng, t, e, old, n):
    """A boundary value for element `old` of entry e, by the tag's kind."""
    if e.tag in TAG_VALUES:
        return rng.choice(TAG_VALUES[e.tag] + [old + 1, old - 1])
    if e.tag in SIZE_TAGS:
        return rng.choice(SIZE_VALUES + [old * 2, old + 1, old - 1, old * 65536])
    if e.tag in COUNT_TAGS:
        return rng.choice([0, 1, 2, 16, n, n + 1, old + 1, old - 1, old * 2,
                           0x7FFFFFFF, 0xFFFFFFF0, 0xFFFFFFFF, 2 ** 62, 2 ** 64 - 1])
    if e.tag in POINTER_TAGS or e.type in (tb.IFD, tb.IFD8):
        ifd = rng.choice(t.ifds).pos
        return rng.choice([0, 1, 4, 8, 16, n - 1, n, n + 1, n + 4096, old + 1, old - 2,
                           ifd, 2 ** 31, 2 ** 32 - 1, 2 ** 63])
    return rng.choice(SIZE_VALUES + [old + 1, old - 1])


def op_tag_value(rng, buf, t):
    e = pick_entry(rng, t)
    if e is None or e.type not in tb.INTEGER_TYPES or e.count == 0:
        return None
    index = 0 if rng.random() < 0.5 else rng.randrange(min(e.count, 4096))
    old = (tb.read_values(buf, t, e, index + 1) or [0])[-1]
    v = boundary_for(rng, t, e, old, len(buf)) & (2 ** 64 - 1)
    if e.type == tb.SHORT and e.count == 1 and v > 0xFFFF and rng.random() < 0.7:
        # widen SHORT to LONG (LONG8 in BigTIFF) so that the big value fits
        wide, width = (tb.LONG8, 8) if t.bigtiff else (tb.LONG, 4)
        v &= (1 << 8 * width) - 1
        tb.set_field(buf, t, e.pos + 2, 2, wide)
        tb.set_field(buf, t, e.value_pos, width, v)
        return f"tag {e.tag} SHORT->{'LONG8' if t.bigtiff else 'LONG'} = {v}"
    written = tb.set_value(buf, t, e, index, v)
    if written is None:
        return None
    return f"tag {e.tag}[{index}] {old} -> {written}"


def op_tag_count(rng, buf, t):
    e = pick_entry(rng, t)
    if e is None:
        return None
    big = [2 ** 62, 2 ** 63, 2 ** 64 - 1] if t.bigtiff else []
    v = rng.choice([0, 1, 2, e.count - 1, e.count + 1, e.count * 2, 65536,
                    2 ** 31, 2 ** 32 - 1] + big) & (2 ** 64 - 1)
    tb.set_field(buf, t, e.count_pos, 8 if t.bigtiff else 4, v)
    return f"tag {e.tag} count {e.count} -> {v}"


def op_tag_type(rng, buf, t):
    e = pick_entry(rng, t)
    if e is None:
        return None
    v = rng.choice([0, 1, 2, 3, 4, 5, 7, 11, 12, 13, 16, 18, 19, 255, 65535])
    tb.set_field(buf, t, e.pos + 2, 2, v)
    return f"tag {e.tag} type {e.type} -> {v}"


def op_tag_id(rng, buf, t):
    e = pick_entry(rng, t)
    if e is None:
        return None
    v = rng.choice(TAG_IDS)
    tb.set_field(buf, t, e.pos, 2, v)
    return f"tag {e.tag} renamed {v}"


def op_tag_pointer(rng, buf, t):
    entries = [e for d in t.ifds for e in d.entries if not e.inline]
    if not entries:
        return None
    e = rng.choice(entries)
    n = len(buf)
    v = rng.choice([0, 1, 4, 8, n - 1, n, n + 1, e.data_pos + 1, e.data_pos + 2,
                    rng.choice(t.ifds).pos, 2 ** 31, 2 ** 32 - 1] + ([2 ** 63] if t.bigtiff else []))
    tb.set_field(buf, t, e.value_pos, 8 if t.bigtiff else 4, v)
    return f"tag {e.tag} data pointer {e.data_pos} -> {v}"


def op_entry_count(rng, buf, t):
    d = rng.choice(t.ifds)
    n = len(d.entries)
    v = rng.choice([0, 1, max(0, n - 1), n - 2 if n > 2 else 0, n + 1, n + 10, 0xFFFF]
                   + ([2 ** 60, 2 ** 64 - 1] if t.bigtiff else []))
    tb.set_field(buf, t, d.pos, 8 if t.bigtiff else 2, v)
    return f"IFD at {d.pos} entry count {n} -> {v}"


def op_entry_swap(rng, buf, t):
    d = rng.choice(t.ifds)
    if len(d.entries) < 2:
        return None
    a, b = rng.sample(d.entries, 2)
    size = 20 if t.bigtiff else 12
    ea, eb = bytes(buf[a.pos:a.pos + size]), bytes(buf[b.pos:b.pos + size])
    buf[a.pos:a.pos + size], buf[b.pos:b.pos + size] = eb, ea
    return f"swap entries {a.tag} and {b.tag}"


def op_next_ifd(rng, buf, t):
    d = rng.choice(t.ifds)
    osize = 8 if t.bigtiff else 4
    if d.next_pos is None or d.next_pos + osize > len(buf):
        return None
    n = len(buf)
    v = rng.choice([0, d.pos, t.ifds[0].pos, rng.choice(t.ifds).pos, 0, 4, 8, n - 2, n, n + 8, 2 ** 32 - 1])
    tb.set_field(buf, t, d.next_pos, osize, v)
    return f"next IFD of {d.pos} -> {v}"


def op_chunk_swap(rng, buf, t):
    d = rng.choice(t.ifds)
    offs = d.get(tb.TILE_OFFSETS) or d.get(tb.STRIP_OFFSETS)
    cnts = d.get(tb.TILE_BYTE_COUNTS) or d.get(tb.STRIP_BYTE_COUNTS)
    if offs is None or cnts is None or offs.count == 0:
        return None
    i = rng.randrange(min(offs.count, 4096))
    j = (i + rng.randrange(1, offs.count)) % offs.count if offs.count > 1 else i
    ov = tb.read_values(buf, t, offs, max(i, j) + 1)
    cv = tb.read_values(buf, t, cnts, max(i, j) + 1)
    if len(ov) <= max(i, j) or len(cv) <= max(i, j):
        return None
    choice = rng.random()
    if choice < 0.5:                               # chunk i reads chunk j's bytes
        tb.set_value(buf, t, offs, i, ov[j])
        tb.set_value(buf, t, cnts, i, cv[j])
        return f"chunk {i} -> chunk {j}'s data"
    target = rng.choice([d.pos, offs.data_pos, (d.get(tb.JPEG_TABLES) or offs).data_pos, 0])
    tb.set_value(buf, t, offs, i, target)
    return f"chunk {i} offset -> {target} (IFD, offsets array, JPEGTables or header)"


def op_ifd_flip(rng, buf, t):
    d = rng.choice(t.ifds)
    if not d.entries:
        return None
    e = rng.choice(d.entries)
    size = 20 if t.bigtiff else 12
    p = e.pos + rng.randrange(size)
    if p >= len(buf):
        return None
    buf[p] ^= 1 << rng.randrange(8)
    return f"flip a bit of tag {e.tag}'s entry"


FRAME_MARKERS = (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2")


def op_frame(rng, buf, t):
    """Lie in a JPEG SOF or a J2K SIZ marker found anywhere in the file."""
    hits = [(m, p) for m in FRAME_MARKERS + (b"\xff\x51",) for p in
            (mm.start() for mm in re.finditer(re.escape(m), bytes(buf)))]
    if not hits:
        return None
    m, p = rng.choice(hits[:256])
    if m == b"\xff\x51":                            # J2K SIZ: Xsiz Ysiz .. Csiz
        if p + 40 > len(buf):
            return None
        what = rng.choice(["size", "tile", "csiz"])
        if what == "csiz":
            struct.pack_into(">H", buf, p + 38, rng.choice([0, 1, 2, 4, 16384]))
        else:
            v = rng.choice([0, 1, 65500, 2 ** 31 - 1, 2 ** 32 - 1])
            struct.pack_into(">II", buf, p + (6 if what == "size" else 22), v, v)
        return f"J2K SIZ {what} at {p}"
    if p + 10 > len(buf):
        return None
    what = rng.choice(["size", "size", "components", "precision"])
    if what == "size":
        h, w = rng.choice([(65500, 65500), (0, 0), (1, 1), (65535, 16), (16, 65535)])
        struct.pack_into(">HH", buf, p + 5, h, w)
        return f"JPEG SOF at {p} claims {w}x{h}"
    if what == "components":
        buf[p + 9] = rng.choice([0, 1, 2, 4, 255])
        return f"JPEG SOF at {p} component count {buf[p + 9]}"
    buf[p + 4] = rng.choice([0, 1, 12, 16, 255])
    return f"JPEG SOF at {p} precision {buf[p + 4]}"


def op_description(rng, buf, t):
    e = pick_entry(rng, t, tags=(tb.IMAGE_DESCRIPTION,))
    if e is None or e.data_pos + e.count > len(buf) or e.count < 4:
        return None
    text = bytes(buf[e.data_pos:e.data_pos + e.count])
    runs = [m.span() for m in re.finditer(rb"[0-9.]+", text)]
    how = rng.choice(["digits", "digits", "nul", "separator"])
    if how == "digits" and runs:
        a, b = rng.choice(runs)
        fill = rng.choice([b"9", b"0", b"-", b"."])
        buf[e.data_pos + a:e.data_pos + b] = fill * (b - a)
        return f"description digits [{a},{b}) -> {fill.decode()}"
    p = e.data_pos + rng.randrange(e.count)
    buf[p] = 0 if how == "nul" else ord(rng.choice("|=<>\"&\r\n"))
    return f"description byte {p - e.data_pos} -> {how}"


GENERIC = [(op_flip, 8), (op_interesting, 8), (op_truncate, 6), (op_dup, 3),
           (op_remove, 3), (op_overwrite, 3), (op_zero, 2)]
TIFF_AWARE = [(op_tag_value, 22), (op_tag_count, 6), (op_tag_type, 4), (op_tag_id, 4),
              (op_tag_pointer, 5), (op_entry_count, 3), (op_entry_swap, 2), (op_next_ifd, 4),
              (op_chunk_swap, 5), (op_ifd_flip, 6), (op_frame, 5), (op_description, 3)]


def mutate(rng, data, max_ops):
    buf = bytearray(data)
    ops = []
    for _ in range(min(max_ops, rng.choice([1, 1, 1, 2, 2, 3, 4]))):
        t = tb.parse(bytes(buf))
        table = GENERIC + (TIFF_AWARE if t is not None and t.ifds else [])
        for _attempt in range(8):
            fn = weighted(rng, table)
            desc = fn(rng, buf, t)
            if desc:
                ops.append(desc)
                break
    if bytes(buf) == data:
        ops.append(op_flip(rng, buf, None))
    return bytes(buf), ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seeddir")
    ap.add_argument("outdir")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--max-ops", type=int, default=4)
    args = ap.parse_args()
    names = sorted(n for n in os.listdir(args.seeddir)
                   if not n.startswith(".") and os.path.isfile(os.path.join(args.seeddir, n)))
    if not names:
        sys.exit(f"mutate: no seed files in {args.seeddir}")
    seeds = {}
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "mutations.jsonl"), "w") as manifest:
        for i in range(args.n):
            name = names[i % len(names)]
            if name not in seeds:
                with open(os.path.join(args.seeddir, name), "rb") as f:
                    seeds[name] = f.read()
            rng = random.Random(f"{args.seed}:{i}")
            data, ops = mutate(rng, seeds[name], args.max_ops)
            out = f"s{args.seed}-{i:05d}-{name}"
            with open(os.path.join(args.outdir, out), "wb") as f:
                f.write(data)
            manifest.write(json.dumps({"file": out, "seed_file": name, "ops": ops}) + "\n")
    print(f"wrote {args.n} mutants of {len(names)} seeds to {args.outdir}")


if __name__ == "__main__":
    main()
