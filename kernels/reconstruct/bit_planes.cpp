#include "kernels/reconstruct/bit_planes.hpp"

#include <array>
#include <atomic>
#include <cstring>

#include "engine/ops/clones.hpp"
#include "engine/parallel.hpp"

namespace tw {
namespace {

// The nonzero bytes of 8 as 8 bits (byte b -> bit b): fold each byte onto its
// low bit, then one multiply gathers the eight low bits into the top byte
// without carries.
inline uint32_t nonzero8(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  v |= v >> 4, v |= v >> 2, v |= v >> 1;
  v &= 0x0101010101010101ull;
  return static_cast<uint32_t>((v * 0x0102040810204080ull) >> 56);
}

// Bit i of out[k] = p[32k + i] != 0 (flip = ~0u: == 0) for the n bytes at
// p; words up to `words` beyond them are zero.
TW_CLONES void pack_bytes(const uint8_t* __restrict p, int64_t n, uint32_t* __restrict out, int64_t words,
                          uint32_t flip) {
  int64_t k = 0;
  for (; 32 * (k + 1) <= n; ++k) {
    const uint8_t* q = p + 32 * k;
    out[k] = (nonzero8(q) | nonzero8(q + 8) << 8 | nonzero8(q + 16) << 16 | nonzero8(q + 24) << 24) ^ flip;
  }
  if (32 * k < n) {
    uint32_t w = 0;
    for (int64_t x = 32 * k; x < n; ++x) w |= static_cast<uint32_t>((p[x] != 0) != (flip != 0)) << (x - 32 * k);
    out[k++] = w;
  }
  for (; k < words; ++k) out[k] = 0;
}

// Whether any byte is neither 0 nor 255: 0 and 255 plus one are 1 and 0,
// anything else has a bit above bit 0.
TW_CLONES bool any_not_binary(const uint8_t* __restrict a, int64_t n) {
  uint8_t acc = 0;
  for (int64_t x = 0; x < n; ++x) acc |= static_cast<uint8_t>((a[x] + 1) & 0xFE);
  return acc != 0;
}

}  // namespace

void pack_row_bits(const uint8_t* p, int64_t n, uint32_t* out, int64_t words, bool zeros) {
  pack_bytes(p, n, out, words, zeros ? ~0u : 0u);
}

void unpack_row_bits(const uint32_t* row, int64_t x0, int64_t n, uint8_t* out, uint8_t on, uint8_t off) {
  // Eight pixels at a time from a byte of bits, through a table of their
  // eight 0x00/0xFF bytes: the EDT and the writer read a 1-GP result this
  // way, where a pixel at a time took seconds on 2 cores.
  static const auto table = [] {
    std::array<uint64_t, 256> t{};
    for (int b = 0; b < 256; ++b)
      for (int i = 0; i < 8; ++i)
        if ((b >> i) & 1) t[static_cast<size_t>(b)] |= uint64_t{0xFF} << (8 * i);
    return t;
  }();
  const uint64_t on8 = uint64_t{on} * 0x0101010101010101ull, off8 = uint64_t{off} * 0x0101010101010101ull;
  const auto* bytes = reinterpret_cast<const uint8_t*>(row + 1);  // little-endian: byte j holds x = 8j .. 8j + 7
  auto one = [&](int64_t x) { return (row[x / 32 + 1] >> (x % 32)) & 1u ? on : off; };
  int64_t i = 0;
  for (; i < n && (x0 + i) % 8 != 0; ++i) out[i] = one(x0 + i);
  for (; i + 8 <= n; i += 8) {
    const uint64_t m = table[bytes[(x0 + i) / 8]];
    const uint64_t v = (m & on8) | (~m & off8);
    std::memcpy(out + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = one(x0 + i);
}

bool bytes_binary(const uint8_t* p, int64_t n) {
  return !any_not_binary(p, n);
}

void pack_tile_bits(const ImageView& j, const ImageView& i, const Rect& core, uint32_t* on, uint32_t* allowed,
                    bool zeros) {
  const int64_t w = core.w, h = core.h, pitch = bit_plane_pitch(w);
  const uint32_t flip = zeros ? ~0u : 0u;
  parallel_for_each(0, h + 2, [&](int64_t ry) {
    const int64_t y = core.y + ry - 1;
    uint32_t* o = on + ry * pitch;
    uint32_t* a = allowed + ry * pitch;
    const uint8_t* b = j.ptr<uint8_t>(core.x - 1, y);  // x = -1 .. w
    o[0] = (b[0] != 0) != zeros ? 1u << 31 : 0u;
    pack_bytes(b + 1, w + 1, o + 1, pitch - 1, flip);
    if (ry == 0 || ry == h + 1) {
      std::memset(a, 0, static_cast<size_t>(pitch) * sizeof(uint32_t));
    } else {
      a[0] = 0;
      pack_bytes(i.ptr<uint8_t>(core.x, y), w, a + 1, pitch - 1, flip);
    }
  });
}

int64_t unpack_new_bits(const uint32_t* before, const uint32_t* after, const ImageView& j, const Rect& core,
                        bool zeros) {
  const int64_t w = core.w, h = core.h, pitch = bit_plane_pitch(w);
  const uint8_t value = zeros ? 0 : 255;
  std::atomic<int64_t> total{0};
  parallel_for_each(1, h + 1, [&](int64_t ry) {
    uint8_t* row = j.ptr<uint8_t>(core.x, core.y + ry - 1);
    int64_t n = 0;
    for (int64_t k = 1; k < pitch; ++k) {
      uint32_t d = after[ry * pitch + k] & ~before[ry * pitch + k];
      const int64_t x0 = 32 * (k - 1);
      if (w - x0 < 32) d &= w > x0 ? (1u << (w - x0)) - 1u : 0u;  // not the ring pixel x = w
      for (; d; d &= d - 1, ++n) row[x0 + __builtin_ctz(d)] = value;
    }
    if (n) total += n;
  });
  return total;
}

}  // namespace tw
