#pragma once
// JPEG tiles split between CPU and GPU: the CPU does only the entropy
// decoding (libjpeg-turbo's jpeg_read_coefficients: half of a full decode's
// time on 256-pixel Q90 4:2:0 tiles), the GPU the rest (dequantisation,
// the integer IDCT, chroma upsampling and YCbCr -> RGB) with libjpeg-turbo's
// own arithmetic, so the pixels are the ones the CPU decoder makes.
//
// A tile's coefficients: component by component, rows of 8x8 blocks, each
// block 64 int16 in natural (row-major) order, as libjpeg stores JBLOCKs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/codec_kind.hpp"

namespace tw {

struct JpegCoefLayout {
  int components = 0;          // 1 (gray) or 3 (YCbCr)
  int h_samp = 1, v_samp = 1;  // the luma's sampling factors (chroma's are 1): 1,1 = 4:4:4, 2,2 = 4:2:0
  int64_t tile = 0;            // each stream holds one tile x tile image

  int64_t blocks_w(int c) const { return c == 0 ? tile / 8 : tile / (8 * h_samp); }
  int64_t blocks_h(int c) const { return c == 0 ? tile / 8 : tile / (8 * v_samp); }
  size_t block_offset(int c) const {  // first block of component c within a tile
    size_t n = 0;
    for (int i = 0; i < c; ++i) n += static_cast<size_t>(blocks_w(i) * blocks_h(i));
    return n;
  }
  size_t blocks_per_tile() const { return block_offset(components); }
  size_t coefs_per_tile() const { return blocks_per_tile() * 64; }
  // Quantisation tables, one of 64 per component, natural order.
  size_t quant_per_tile() const { return static_cast<size_t>(components) * 64; }
  bool operator==(const JpegCoefLayout& o) const {
    return components == o.components && h_samp == o.h_samp && v_samp == o.v_samp && tile == o.tile;
  }
};

// A component's Huffman codes, as libjpeg's encoder derives them from its
// tables (jpeg_make_c_derived_tbl): the code and its length per symbol, a
// length of 0 where the table has no code for the symbol.
struct JpegHuffCodes {
  uint16_t dc_code[16];
  uint8_t dc_len[16];
  uint16_t ac_code[256];
  uint8_t ac_len[256];
};

// What the GPU needs to encode a level's tiles the split way: the layout of
// the coefficients and the encoder's quantisation tables
// (layout.quant_per_tile() values, natural order). For the entropy coding
// too (io/codec/jpeg_transform/jpeg_huffman.hpp), the encoder's Huffman
// codes per component and a tile stream's bytes before its entropy-coded
// segment (after which come only the segment and EOI); empty: the CPU
// entropy-codes.
struct JpegCoefSpec {
  JpegCoefLayout layout;
  std::vector<uint16_t> quant;
  std::vector<JpegHuffCodes> huff;
  std::vector<uint8_t> head;
};

// A DHT's table as the stream gives it: the count of codes of each length
// (bits[1..16]; bits[0] unused) and their symbols in code order.
struct JpegHuffSpec {
  uint8_t bits[17];
  uint8_t val[256];
};

// What decoding a tile's scan on the GPU needs from its headers (read on the
// CPU by libjpeg: JpegDecoder::scan_head): where the entropy-coded segment
// starts, each component's DC and AC tables (frame order, which is the
// scan's) and its quantisation table (natural order).
struct JpegScanHead {
  uint32_t scan_offset = 0;
  JpegHuffSpec dc[3], ac[3];
  uint16_t quant[3 * 64];
};

// The size of a tile's entropy-coded segment where the GPU left the tile as
// coefficients instead (jpeg_huffman_cuda.hpp).
constexpr uint32_t kJpegTileAsCoefficients = 0xFFFFFFFFu;

// The layout of a level's tiles where the GPU can finish their decoding:
// baseline 8-bit JPEG, square tiles (a multiple of 16), gray or YCbCr 4:4:4
// or 4:2:0. Others (RGB-coded JPEG, 4:2:2, ...) decode on the CPU.
std::optional<JpegCoefLayout> gpu_jpeg_coef_layout(const RawTileFormat& f);

}  // namespace tw
