#pragma once
// Baseline JPEG entropy coding of a tile's coefficients (engine/jpeg_coefs.hpp)
// with fixed Huffman codes (JpegCoefSpec::huff), in pieces that can run
// apart: one 8x8 block's codes, counted first so that each block's place in
// the stream is a prefix sum of the lengths before it, then the bits written
// there, then the bytes with a 0 stuffed after each 0xFF. The GPU runs it a
// thread a block (jpeg_huffman_cuda.cu); jpeg_entropy_code_tile() runs it in
// order on the CPU, the reference the tests hold against libjpeg-turbo's own
// encoder (JpegEncoder::encode_coefficients), byte for byte.
//
// It is jchuff.c's encode_one_block: the DC as the difference from the
// previous block of its component in coding order (0 at a tile's start: a
// tile is a scan), AC zero runs with ZRL (16 zeros) and EOB, a negative
// value as the low bits of value - 1, and the last byte padded with 1 bits.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/jpeg_coefs.hpp"

#ifdef __CUDACC__
#define TW_JHUFF_FN __host__ __device__ __forceinline__
#else
#define TW_JHUFF_FN inline
#endif

// Zigzag position -> natural (row-major) index: libjpeg's jpeg_natural_order.
#define TW_JPEG_NATURAL_ORDER                                                                                         \
  {                                                                                                                   \
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, \
        28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60,   \
        61, 54, 47, 55, 62, 63                                                                                        \
  }

namespace tw {
namespace jhuff {

// A tile's coding order: MCUs in raster order, in each the luma's h x v
// blocks in raster order, then one block of each chroma (gray: one block).
struct Order {
  int comps = 1, h = 1, hv = 1, bpm = 1, mcus_w = 1, blocks = 0;
  int bw[3] = {0, 0, 0}, boff[3] = {0, 0, 0};  // blocks across, first block, per component
};

Order make_order(const JpegCoefLayout& l);

// A block in coding order: its component, its index among the tile's
// stored blocks, and the coding position of its component's previous block
// (-1: the first).
struct BlockRef {
  int comp, index, prev;
};

TW_JHUFF_FN BlockRef locate(const Order& o, int q) {
  const int m = q / o.bpm, r = q % o.bpm;
  const int my = m / o.mcus_w, mx = m % o.mcus_w;
  BlockRef b;
  if (r < o.hv) {
    b.comp = 0;
    b.index = (my * (o.hv / o.h) + r / o.h) * o.bw[0] + mx * o.h + r % o.h;
    b.prev = r > 0 ? q - 1 : (m > 0 ? q - o.bpm + o.hv - 1 : -1);
  } else {
    b.comp = 1 + (r - o.hv);
    b.index = o.boff[b.comp] + my * o.bw[b.comp] + mx;
    b.prev = m > 0 ? q - o.bpm : -1;
  }
  return b;
}

TW_JHUFF_FN int bit_length(unsigned v) {
#ifdef __CUDA_ARCH__
  return 32 - __clz(static_cast<int>(v));
#else
  return v ? 32 - __builtin_clz(v) : 0;
#endif
}

// Calls put(bits, n) for each code and each value of the block, in stream
// order (n <= 16). Returns false where a symbol has no code or a value is
// beyond baseline's range: such a tile is left to libjpeg, which reports it.
template <class Put>
TW_JHUFF_FN bool code_block(const int16_t* blk, int last_dc, const JpegHuffCodes& t, const uint8_t* natural, Put& put) {
  int v = blk[0] - last_dc, low = v;
  if (v < 0) v = -v, --low;
  int n = bit_length(static_cast<unsigned>(v));
  if (n > 11 || !t.dc_len[n]) return false;
  put(t.dc_code[n], t.dc_len[n]);
  if (n) put(static_cast<unsigned>(low) & ((1u << n) - 1), n);
  int run = 0;
  for (int k = 1; k < 64; ++k) {
    v = blk[natural[k]];
    if (v == 0) {
      ++run;
      continue;
    }
    for (; run > 15; run -= 16) {
      if (!t.ac_len[0xF0]) return false;
      put(t.ac_code[0xF0], t.ac_len[0xF0]);
    }
    low = v;
    if (v < 0) v = -v, --low;
    n = bit_length(static_cast<unsigned>(v));
    const int sym = (run << 4) + n;
    if (n > 10 || !t.ac_len[sym]) return false;
    put(t.ac_code[sym], t.ac_len[sym]);
    put(static_cast<unsigned>(low) & ((1u << n) - 1), n);
    run = 0;
  }
  if (run > 0) {
    if (!t.ac_len[0]) return false;
    put(t.ac_code[0], t.ac_len[0]);
  }
  return true;
}

struct CountBits {
  uint64_t bits = 0;
  TW_JHUFF_FN void operator()(unsigned, int n) { bits += static_cast<uint64_t>(n); }
};

// Writes bits from a bit position on into words that hold the stream's
// bytes in order (a word's first byte is its most significant bit's),
// zeroed before: or_word(word, value) ORs a big-endian value in, so that
// blocks which share a word at their ends may write at once.
template <class OrWord>
struct BitSink {
  OrWord or_word;
  uint32_t* words;
  uint64_t acc = 0;
  int n;  // bits in acc not yet written, the first (pos % 32) of them zeros
  TW_JHUFF_FN BitSink(OrWord o, uint32_t* w, uint64_t pos)
      : or_word(o), words(w + (pos >> 5)), n(static_cast<int>(pos & 31)) {}
  TW_JHUFF_FN void operator()(unsigned v, int len) {
    acc = (acc << len) | v;
    n += len;
    if (n >= 32) {
      n -= 32;
      or_word(words++, static_cast<uint32_t>(acc >> n));
    }
  }
  TW_JHUFF_FN void flush() {
    if (n > 0) or_word(words, static_cast<uint32_t>(acc << (32 - n)));
  }
};

}  // namespace jhuff

// The whole tile on the CPU: spec.head, the entropy-coded segment, EOI.
// Returns false (out unspecified) where code_block refuses a block.
bool jpeg_entropy_code_tile(const JpegCoefSpec& spec, const int16_t* coefs, std::vector<uint8_t>& out);

}  // namespace tw
