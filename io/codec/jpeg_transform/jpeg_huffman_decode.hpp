#pragma once
// Baseline JPEG entropy *decoding* of one tile's scan into its quantised
// coefficients (engine/jpeg_coefs.hpp), the half of a split decode that
// libjpeg-turbo's jpeg_read_coefficients did on the CPU. Within a tile it is
// serial (a code's start is known only once the code before it is read),
// but the tiles are not: the GPU runs it a thread a tile
// (jpeg_huffman_decode_cuda.cu), jpeg_entropy_decode_tile() on the CPU is
// the same code, the reference the tests hold against libjpeg-turbo.
//
// It is jdhuff.c's decode_mcu_slow with jpeg_make_d_derived_tbl's tables
// (maxcode, valoffset and a lookahead table), and one rule of its own: the
// decoder gives up on a tile — status kJpegDecodeRefused, for libjpeg to
// decode and report — wherever libjpeg would warn or differ: a code with no
// symbol, bits needed past the segment (a marker or the stream's end), or a
// segment not followed by EOI. So a tile it decodes is one libjpeg decodes
// without a warning, to the same coefficients.
#include <cstddef>
#include <cstdint>

#include "engine/jpeg_coefs.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman.hpp"

namespace tw {

constexpr int kJpegHuffLook = 9;  // bits of the lookahead table

// A Huffman table ready for decoding (jdhuff.c d_derived_tbl).
struct JpegHuffDecTable {
  int32_t maxcode[18];                // the largest code of each length, -1 where none; [17] ends the search
  int32_t valoffset[18];              // a code of length l is symbol huffval[code + valoffset[l]]
  uint16_t look[1 << kJpegHuffLook];  // (length << 8) | symbol of the code the next bits start; 0: longer
  uint8_t huffval[256];
};

// Derives it from a DHT's counts and symbols. False where libjpeg refuses
// the table (more than 256 codes, a code of all ones, a DC symbol above 15).
bool jpeg_huff_dec_table(const JpegHuffSpec& spec, bool dc, JpegHuffDecTable& t);

enum : uint32_t { kJpegDecodeOk = 0, kJpegDecodeRefused = 1 };

namespace jhuff {

// jpeg_natural_order with libjpeg's 16 guard entries: a corrupt run that
// runs past the 63rd coefficient writes the 63rd, as libjpeg does.
#define TW_JPEG_NATURAL_ORDER_GUARDED                                                                                 \
  {                                                                                                                   \
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, \
        28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60,   \
        61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63                        \
  }

// The bits of a segment: an 0xFF byte is data when 0x00 follows it, else the
// data ends there (a marker). libjpeg's slow path would also take 0xFF fill
// bytes before the 0x00 as data, but its fast path first decodes through them
// as a marker and can leave a stale coefficient behind when it falls back: a
// stream with them is left to libjpeg, whatever it makes of it.
struct BitReader {
  const uint8_t* data;
  uint32_t n, pos;
  uint64_t buf = 0;  // the next `bits` bits at the top
  int bits = 0;
  bool end = false;     // a marker or the stream's end reached
  uint32_t loaded = 0;  // data bytes taken into buf

  TW_JHUFF_FN BitReader(const uint8_t* d, uint32_t size, uint32_t start) : data(d), n(size), pos(start) {}

  TW_JHUFF_FN void fill() {
    while (bits <= 56 && !end) {
      if (pos >= n) {
        end = true;
        break;
      }
      uint32_t c = data[pos];
      uint32_t next = pos + 1;
      if (c == 0xFF) {
        if (next >= n || data[next] != 0) {
          end = true;
          break;
        }
        ++next;
      }
      buf |= static_cast<uint64_t>(c) << (56 - bits);
      bits += 8;
      pos = next;
      ++loaded;
    }
  }
  // The next n (1..16) bits; false where the segment has fewer.
  TW_JHUFF_FN bool peek_ok(int k) {
    if (bits < k) fill();
    return bits >= k;
  }
  TW_JHUFF_FN uint32_t peek(int k) const { return static_cast<uint32_t>(buf >> (64 - k)); }
  TW_JHUFF_FN void skip(int k) {
    buf <<= k;
    bits -= k;
  }
};

// One symbol; -1 where the bits are no code or run past the segment.
TW_JHUFF_FN int decode_symbol(BitReader& br, const JpegHuffDecTable& t) {
  if (br.bits < 16) br.fill();
  const uint32_t e = t.look[br.peek(kJpegHuffLook)];
  const int len = static_cast<int>(e >> 8);
  if (len) {
    if (len > br.bits) return -1;
    br.skip(len);
    return static_cast<int>(e & 0xFF);
  }
  int l = kJpegHuffLook + 1;
  uint32_t code = br.peek(l);
  while (l <= 16 && static_cast<int32_t>(code) > t.maxcode[l]) code = br.peek(++l);
  if (l > 16 || l > br.bits) return -1;
  br.skip(l);
  return t.huffval[(static_cast<int32_t>(code) + t.valoffset[l]) & 0xFF];
}

// s bits (1..15) as a signed value (jdhuff.h HUFF_EXTEND); false past the segment.
TW_JHUFF_FN bool receive_extend(BitReader& br, int s, int& v) {
  if (!br.peek_ok(s)) return false;
  const int r = static_cast<int>(br.peek(s));
  br.skip(s);
  v = r < (1 << (s - 1)) ? r + (static_cast<int>(~0u << s) + 1) : r;
  return true;
}

// Each component's tables (by name, not in an array: a GPU thread would
// keep an indexed array in local memory).
struct DecTables {
  const JpegHuffDecTable *dc0, *ac0, *dc1, *ac1, *dc2, *ac2;
};

// A set of tables laid out as each component's DC then AC table.
TW_JHUFF_FN DecTables dec_tables(const JpegHuffDecTable* set, int comps) {
  DecTables t{set, set + 1, set, set + 1, set, set + 1};
  if (comps > 1) t.dc1 = set + 2, t.ac1 = set + 3, t.dc2 = set + 4, t.ac2 = set + 5;
  return t;
}

// Decodes the tile whose segment starts at data[start] into coefs
// (layout's coefs_per_tile(), zeroed before: only non-zero values are
// written). Returns kJpegDecodeOk or kJpegDecodeRefused (coefs then partly
// written).
TW_JHUFF_FN uint32_t decode_tile(const Order& o, const uint8_t* data, uint32_t n, uint32_t start, const DecTables& tab,
                                 const uint8_t* natural, int16_t* coefs) {
  BitReader br(data, n, start);
  int dc_pred0 = 0, dc_pred1 = 0, dc_pred2 = 0;
  for (int q = 0; q < o.blocks; ++q) {
    const BlockRef b = locate(o, q);
    int16_t* blk = coefs + static_cast<size_t>(b.index) * 64;
    const int comp = b.comp;
    int s = decode_symbol(br, comp == 0 ? *tab.dc0 : comp == 1 ? *tab.dc1 : *tab.dc2);
    if (s < 0) return kJpegDecodeRefused;
    int v = 0;
    if (s && !receive_extend(br, s, v)) return kJpegDecodeRefused;
    // libjpeg adds in unsigned arithmetic: corrupt DC steps may wrap.
    int& pred = comp == 0 ? dc_pred0 : comp == 1 ? dc_pred1 : dc_pred2;
    pred = static_cast<int>(static_cast<unsigned>(v) + static_cast<unsigned>(pred));
    blk[0] = static_cast<int16_t>(pred);
    const JpegHuffDecTable& t = comp == 0 ? *tab.ac0 : comp == 1 ? *tab.ac1 : *tab.ac2;
    for (int k = 1; k < 64; ++k) {
      const int rs = decode_symbol(br, t);
      if (rs < 0) return kJpegDecodeRefused;
      const int r = rs >> 4;
      s = rs & 15;
      if (s) {
        k += r;
        if (!receive_extend(br, s, v)) return kJpegDecodeRefused;
        blk[natural[k]] = static_cast<int16_t>(v);
      } else {
        if (r != 15) break;
        k += 15;
      }
    }
  }
  // The segment must end here, with EOI: the stream position after the
  // last byte a bit was taken from (the bytes wholly unread are the last
  // ones loaded), counted again from the start through the stuffing.
  const uint32_t used = br.loaded - static_cast<uint32_t>(br.bits / 8);
  uint32_t pos = start;
  for (uint32_t i = 0; i < used; ++i) {
    pos += data[pos] == 0xFF ? 2 : 1;
  }
  if (pos >= n || data[pos] != 0xFF) return kJpegDecodeRefused;
  while (pos < n && data[pos] == 0xFF) ++pos;
  return pos < n && data[pos] == 0xD9 ? kJpegDecodeOk : kJpegDecodeRefused;
}

}  // namespace jhuff

// The tile on the CPU, as the GPU decodes it: zeroes coefs (layout's
// coefs_per_tile()) and decodes data[0, n) whose segment starts at
// head.scan_offset with the tables in `head`. kJpegDecodeRefused where a
// table is refused too.
uint32_t jpeg_entropy_decode_tile(const JpegCoefLayout& layout, const JpegScanHead& head, const uint8_t* data, size_t n,
                                  int16_t* coefs);

}  // namespace tw
