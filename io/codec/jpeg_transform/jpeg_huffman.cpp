#include "io/codec/jpeg_transform/jpeg_huffman.hpp"

#include "engine/error.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "BitSink's words are written byte-swapped");

namespace tw {
namespace jhuff {

Order make_order(const JpegCoefLayout& l) {
  TW_ASSERT(l.tile % 16 == 0 && (l.components == 1 || l.components == 3));
  Order o;
  o.comps = l.components;
  o.h = l.components == 3 ? l.h_samp : 1;
  o.hv = l.components == 3 ? l.h_samp * l.v_samp : 1;
  o.bpm = o.hv + (l.components == 3 ? 2 : 0);
  o.mcus_w = static_cast<int>(l.blocks_w(0)) / o.h;
  o.blocks = static_cast<int>(l.blocks_per_tile());
  for (int c = 0; c < l.components; ++c) {
    o.bw[c] = static_cast<int>(l.blocks_w(c));
    o.boff[c] = static_cast<int>(l.block_offset(c));
  }
  return o;
}

}  // namespace jhuff

bool jpeg_entropy_code_tile(const JpegCoefSpec& spec, const int16_t* coefs, std::vector<uint8_t>& out) {
  static constexpr uint8_t kNatural[64] = TW_JPEG_NATURAL_ORDER;
  const jhuff::Order o = jhuff::make_order(spec.layout);
  TW_ASSERT(spec.huff.size() == static_cast<size_t>(o.comps));
  // Lengths first, then the bits at their places, as the GPU does it.
  std::vector<uint64_t> at(static_cast<size_t>(o.blocks) + 1, 0);
  for (int q = 0; q < o.blocks; ++q) {
    const jhuff::BlockRef b = jhuff::locate(o, q);
    const int last = b.prev < 0 ? 0 : coefs[jhuff::locate(o, b.prev).index * 64];
    jhuff::CountBits count;
    if (!jhuff::code_block(coefs + b.index * 64, last, spec.huff[static_cast<size_t>(b.comp)], kNatural, count))
      return false;
    at[static_cast<size_t>(q) + 1] = at[static_cast<size_t>(q)] + count.bits;
  }
  const uint64_t bits = at.back();
  std::vector<uint32_t> words(static_cast<size_t>((bits + 31) / 32) + 1, 0);
  auto or_word = [](uint32_t* w, uint32_t v) {
    *w |= __builtin_bswap32(v);  // big-endian value, host order (x86 and arm64: little-endian)
  };
  for (int q = 0; q < o.blocks; ++q) {
    const jhuff::BlockRef b = jhuff::locate(o, q);
    const int last = b.prev < 0 ? 0 : coefs[jhuff::locate(o, b.prev).index * 64];
    jhuff::BitSink<decltype(or_word)> sink(or_word, words.data(), at[static_cast<size_t>(q)]);
    jhuff::code_block(coefs + b.index * 64, last, spec.huff[static_cast<size_t>(b.comp)], kNatural, sink);
    if (q == o.blocks - 1 && bits % 8) sink((1u << (8 - bits % 8)) - 1, static_cast<int>(8 - bits % 8));
    sink.flush();
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  out.assign(spec.head.begin(), spec.head.end());
  for (uint64_t i = 0; i < (bits + 7) / 8; ++i) {
    out.push_back(bytes[i]);
    if (bytes[i] == 0xFF) out.push_back(0);
  }
  out.push_back(0xFF);
  out.push_back(0xD9);
  return true;
}

}  // namespace tw
