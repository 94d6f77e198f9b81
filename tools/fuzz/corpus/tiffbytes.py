"""Byte-level TIFF / BigTIFF writing and parsing, shared by make_seeds.py and
mutate.py. Pure Python (struct), no libtiff, no tifffile: the point is to write
files that lie and to find the fields that a mutation should hit, which a
conforming library would refuse to do.

Writing:   ifd = Ifd(); ifd.tag(256, LONG, 512); ifd.chunks(TILE_TAGS, tiles)
           data = build([ifd, ...], bigtiff=False)
Parsing:   t = parse(data)   # -> Tiff or None; every entry with its byte position
           set_value(buf, t, entry, index, value)  # rewrite one element in place
"""
import struct

# TIFF field types: code -> (size in bytes, struct code or None for raw bytes)
BYTE, ASCII, SHORT, LONG, RATIONAL = 1, 2, 3, 4, 5
SBYTE, UNDEFINED, SSHORT, SLONG, SRATIONAL = 6, 7, 8, 9, 10
FLOAT, DOUBLE, IFD, LONG8, SLONG8, IFD8 = 11, 12, 13, 16, 17, 18
TYPES = {
    BYTE: (1, "B"), ASCII: (1, None), SHORT: (2, "H"), LONG: (4, "I"),
    RATIONAL: (8, "II"), SBYTE: (1, "b"), UNDEFINED: (1, None), SSHORT: (2, "h"),
    SLONG: (4, "i"), SRATIONAL: (8, "ii"), FLOAT: (4, "f"), DOUBLE: (8, "d"),
    IFD: (4, "I"), LONG8: (8, "Q"), SLONG8: (8, "q"), IFD8: (8, "Q"),
}
INTEGER_TYPES = (BYTE, SHORT, LONG, SBYTE, SSHORT, SLONG, IFD, LONG8, SLONG8, IFD8)

# Tags the seeds and the mutator care about.
NEW_SUBFILE_TYPE = 254
IMAGE_WIDTH, IMAGE_LENGTH, BITS_PER_SAMPLE, COMPRESSION = 256, 257, 258, 259
PHOTOMETRIC, IMAGE_DESCRIPTION = 262, 270
STRIP_OFFSETS, SAMPLES_PER_PIXEL, ROWS_PER_STRIP, STRIP_BYTE_COUNTS = 273, 277, 278, 279
X_RESOLUTION, Y_RESOLUTION, PLANAR_CONFIG, RESOLUTION_UNIT = 282, 283, 284, 296
PREDICTOR, COLOR_MAP = 317, 320
TILE_WIDTH, TILE_LENGTH, TILE_OFFSETS, TILE_BYTE_COUNTS = 322, 323, 324, 325
SUB_IFDS, EXTRA_SAMPLES, SAMPLE_FORMAT, JPEG_TABLES = 330, 338, 339, 347
YCBCR_SUBSAMPLING = 530
STRIP_TAGS = (STRIP_OFFSETS, STRIP_BYTE_COUNTS)
TILE_TAGS = (TILE_OFFSETS, TILE_BYTE_COUNTS)
OFFSET_TAGS = (STRIP_OFFSETS, TILE_OFFSETS, SUB_IFDS, JPEG_TABLES)


class Ifd:
    """One directory to write: tags, the image chunks (strips or tiles) whose
    offsets and byte counts the writer fills in, and SubIFDs."""

    def __init__(self):
        self.entries = {}        # tag -> (type, values, count or None)
        self.chunk_tags = None
        self.chunk_data = []
        self.subifds = []

    def tag(self, tag, type_, values, count=None):
        """values: an int/float, a list of them, str (ASCII) or bytes
        (UNDEFINED/BYTE). count overrides the element count written (a lie)."""
        if isinstance(values, (int, float)):
            values = [values]
        self.entries[tag] = (type_, values, count)
        return self

    def chunks(self, tags, data):
        self.chunk_tags = tags
        self.chunk_data = list(data)
        return self


def _pack_values(type_, values, bo):
    size, code = TYPES[type_]
    if isinstance(values, str):
        return values.encode("latin-1") + b"\0"
    if isinstance(values, (bytes, bytearray)):
        return bytes(values)
    if type_ in (RATIONAL, SRATIONAL):
        out = b""
        for v in values:
            num, den = v if isinstance(v, tuple) else (int(v * 1000), 1000)
            out += struct.pack(bo + code, num, den)
        return out
    return b"".join(struct.pack(bo + code, v) for v in values)


def build(ifds, bigtiff=False, byteorder="<"):
    """Write a TIFF of the main chain `ifds` (each may carry SubIFDs).
    Layout per directory: its chunks, its out-of-line values, the IFD itself."""
    bo = byteorder
    out = bytearray(b"II" if bo == "<" else b"MM")
    if bigtiff:
        out += struct.pack(bo + "HHHQ", 43, 8, 0, 0)
    else:
        out += struct.pack(bo + "HI", 42, 0)
    first_field = 8 if bigtiff else 4
    off_type = LONG8 if bigtiff else LONG
    ifd_type = IFD8 if bigtiff else LONG

    def align():
        if len(out) % 2:
            out.append(0)

    def write_ifd(ifd):
        sub_offsets = [write_ifd(s) for s in ifd.subifds]
        entries = dict(ifd.entries)
        if sub_offsets:
            entries[SUB_IFDS] = (ifd_type, sub_offsets, None)
        if ifd.chunk_tags:
            offs, counts = [], []
            for c in ifd.chunk_data:
                align()
                offs.append(len(out) if c else 0)
                counts.append(len(c))
                out.extend(c)
            entries.setdefault(ifd.chunk_tags[0], (off_type, offs, None))
            entries.setdefault(ifd.chunk_tags[1], (off_type, counts, None))
        inline = 8 if bigtiff else 4
        packed = {}
        for tag, (type_, values, count) in sorted(entries.items()):
            raw = _pack_values(type_, values, bo)
            n = count if count is not None else len(raw) // TYPES[type_][0]
            if len(raw) > inline:
                align()
                pos = len(out)
                out.extend(raw)
                field = struct.pack(bo + ("Q" if bigtiff else "I"), pos)
            else:
                field = raw.ljust(inline, b"\0")
            packed[tag] = (type_, n, field)
        align()
        pos = len(out)
        if bigtiff:
            out.extend(struct.pack(bo + "Q", len(packed)))
            for tag, (type_, n, field) in packed.items():
                out.extend(struct.pack(bo + "HHQ", tag, type_, n) + field)
            out.extend(struct.pack(bo + "Q", 0))
        else:
            out.extend(struct.pack(bo + "H", len(packed)))
            for tag, (type_, n, field) in packed.items():
                out.extend(struct.pack(bo + "HHI", tag, type_, n) + field)
            out.extend(struct.pack(bo + "I", 0))
        return pos

    prev_next = first_field
    for ifd in ifds:
        pos = write_ifd(ifd)
        struct.pack_into(bo + ("Q" if bigtiff else "I"), out, prev_next, pos)
        prev_next = len(out) - (8 if bigtiff else 4)
    return bytes(out)


# ---------------------------------------------------------------- parsing

class Entry:
    __slots__ = ("pos", "tag", "type", "count", "count_pos", "value_pos",
                 "data_pos", "inline", "ifd")

    def __repr__(self):
        return f"Entry(tag={self.tag}, type={self.type}, count={self.count}, pos={self.pos})"


class Directory:
    def __init__(self, pos, kind):
        self.pos, self.kind = pos, kind   # kind: "main" or "sub"
        self.entries = []
        self.next_pos = None              # byte position of the next-IFD field

    def get(self, tag):
        for e in self.entries:
            if e.tag == tag:
                return e
        return None


class Tiff:
    def __init__(self, bo, bigtiff):
        self.bo, self.bigtiff = bo, bigtiff
        self.first_pos = 8 if bigtiff else 4   # position of the first-IFD field
        self.ifds = []

    @property
    def ofmt(self):
        return self.bo + ("Q" if self.bigtiff else "I")


def parse(data, max_ifds=64, max_entries=4096):
    """Parse the header, the main IFD chain and SubIFDs, tolerating damage:
    stops at loops, at fields out of range and after max_ifds directories."""
    if len(data) < 8 or data[:2] not in (b"II", b"MM"):
        return None
    bo = "<" if data[:2] == b"II" else ">"
    magic = struct.unpack_from(bo + "H", data, 2)[0]
    if magic == 42:
        t = Tiff(bo, False)
    elif magic == 43 and len(data) >= 16:
        t = Tiff(bo, True)
    else:
        return None
    esize, nsize, osize = (20, 8, 8) if t.bigtiff else (12, 2, 4)
    seen = set()
    queue = [(struct.unpack_from(t.ofmt, data, t.first_pos)[0], "main")]
    while queue and len(t.ifds) < max_ifds:
        pos, kind = queue.pop(0)
        if pos in seen or pos < 8 or pos + nsize > len(data):
            continue
        seen.add(pos)
        d = Directory(pos, kind)
        n = struct.unpack_from(bo + ("Q" if t.bigtiff else "H"), data, pos)[0]
        n = min(n, max_entries, (len(data) - pos - nsize) // esize)
        for i in range(n):
            p = pos + nsize + i * esize
            e = Entry()
            e.pos, e.ifd = p, d
            e.tag, e.type = struct.unpack_from(bo + "HH", data, p)
            e.count_pos = p + 4
            e.count = struct.unpack_from(bo + ("Q" if t.bigtiff else "I"), data, p + 4)[0]
            e.value_pos = p + 4 + osize
            size = TYPES.get(e.type, (1, None))[0] * e.count
            e.inline = size <= osize
            e.data_pos = e.value_pos if e.inline else struct.unpack_from(t.ofmt, data, e.value_pos)[0]
            d.entries.append(e)
        d.next_pos = pos + nsize + n * esize
        t.ifds.append(d)
        if d.next_pos + osize <= len(data):
            nxt = struct.unpack_from(t.ofmt, data, d.next_pos)[0]
            if nxt and kind == "main":
                queue.insert(0, (nxt, "main"))
        sub = d.get(SUB_IFDS)
        if sub is not None:
            for off in read_values(data, t, sub, limit=16):
                queue.append((off, "sub"))
    return t


def element_pos(t, e, index):
    """Byte position of element `index` of an entry (None if out of range)."""
    size = TYPES.get(e.type, (1, None))[0]
    pos = e.data_pos + index * size
    return pos


def read_values(data, t, e, limit=4096):
    """The first `limit` integer values of an entry that lie inside the file."""
    if e.type not in TYPES or e.type not in INTEGER_TYPES:
        return []
    size, code = TYPES[e.type]
    out = []
    for i in range(min(e.count, limit)):
        p = e.data_pos + i * size
        if p < 0 or p + size > len(data):
            break
        out.append(struct.unpack_from(t.bo + code, data, p)[0])
    return out


def set_value(buf, t, e, index, value):
    """Overwrite element `index` of entry `e` with `value`, truncated to the
    field's width (so 2**32-1 in a SHORT becomes 0xffff). Returns the value
    written, or None when the element lies outside the file."""
    size = TYPES.get(e.type, (4, None))[0]
    if e.type not in INTEGER_TYPES:
        size = 4 if size >= 4 else size
    p = element_pos(t, e, index)
    if p < 0 or p + size > len(buf):
        return None
    value &= (1 << (8 * size)) - 1
    buf[p:p + size] = value.to_bytes(size, "little" if t.bo == "<" else "big")
    return value


def set_field(buf, t, pos, size, value):
    """Write an unsigned `size`-byte integer at pos in the file's byte order."""
    if pos < 0 or pos + size > len(buf):
        return False
    buf[pos:pos + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(
        size, "little" if t.bo == "<" else "big")
    return True
