#include "io/codec/jpeg_transform/jpeg_huffman_decode.hpp"

#include <cstring>

namespace tw {

// jdhuff.c jpeg_make_d_derived_tbl, with its checks.
bool jpeg_huff_dec_table(const JpegHuffSpec& spec, bool dc, JpegHuffDecTable& t) {
  uint8_t size[257];
  uint32_t code_of[257];
  int p = 0;
  for (int l = 1; l <= 16; ++l) {
    const int count = spec.bits[l];
    if (p + count > 256) return false;
    for (int i = 0; i < count; ++i) size[p++] = static_cast<uint8_t>(l);
  }
  size[p] = 0;
  const int symbols = p;
  uint32_t code = 0;
  int si = size[0];
  p = 0;
  while (size[p]) {
    while (size[p] == si) code_of[p++] = code++;
    if (code >= (1u << si)) return false;  // a code of all ones
    code <<= 1;
    ++si;
  }
  p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (spec.bits[l]) {
      t.valoffset[l] = p - static_cast<int32_t>(code_of[p]);
      p += spec.bits[l];
      t.maxcode[l] = static_cast<int32_t>(code_of[p - 1]);
    } else {
      t.maxcode[l] = -1;
    }
  }
  t.maxcode[0] = -1, t.valoffset[0] = 0;
  t.valoffset[17] = 0, t.maxcode[17] = 0xFFFFF;
  std::memset(t.look, 0, sizeof t.look);
  p = 0;
  for (int l = 1; l <= kJpegHuffLook; ++l)
    for (int i = 0; i < spec.bits[l]; ++i, ++p) {
      const uint32_t first = code_of[p] << (kJpegHuffLook - l);
      for (uint32_t k = 0; k < (1u << (kJpegHuffLook - l)); ++k)
        t.look[first + k] = static_cast<uint16_t>((l << 8) | spec.val[p]);
    }
  std::memcpy(t.huffval, spec.val, sizeof t.huffval);
  if (dc)
    for (int i = 0; i < symbols; ++i)
      if (spec.val[i] > 15) return false;
  return true;
}

uint32_t jpeg_entropy_decode_tile(const JpegCoefLayout& layout, const JpegScanHead& head, const uint8_t* data, size_t n,
                                  int16_t* coefs) {
  static constexpr uint8_t kNatural[80] = TW_JPEG_NATURAL_ORDER_GUARDED;
  std::memset(coefs, 0, layout.coefs_per_tile() * sizeof(int16_t));
  JpegHuffDecTable tables[6];
  for (int c = 0; c < layout.components; ++c)
    if (!jpeg_huff_dec_table(head.dc[c], true, tables[2 * c]) ||
        !jpeg_huff_dec_table(head.ac[c], false, tables[2 * c + 1]))
      return kJpegDecodeRefused;
  if (n > UINT32_MAX || head.scan_offset > n) return kJpegDecodeRefused;
  return jhuff::decode_tile(jhuff::make_order(layout), data, static_cast<uint32_t>(n), head.scan_offset,
                            jhuff::dec_tables(tables, layout.components), kNatural, coefs);
}

}  // namespace tw
