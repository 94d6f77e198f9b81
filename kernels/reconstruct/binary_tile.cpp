#include "kernels/reconstruct/binary_tile.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tw {
namespace {

// Passes (a raster and an anti-raster one each) before handing a tile that
// keeps changing (a spiral, a serpentine) to the byte rule's queue.
constexpr int kMaxPassPairs = 32;

uint64_t reverse_bits(uint64_t x) {
  x = __builtin_bswap64(x);
  x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
  x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
  return ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
}

// Bit b of a row is pixel x = b - 1 (bit 0: the left halo pixel).
struct BitRows {
  int64_t nw = 0;           // words a row
  std::vector<uint64_t> s;  // the propagating value, rows -1 .. h (halo rows included)
  std::vector<uint64_t> a;  // where it may go: rows 0 .. h-1, core bits only
  std::vector<uint64_t> old;
  std::vector<uint64_t> seeds, fill;
  uint64_t* srow(int64_t y) { return s.data() + (y + 1) * nw; }
  const uint64_t* arow(int64_t y) const { return a.data() + y * nw; }
};

BitRows& scratch() {
  thread_local BitRows b;
  return b;
}

// Sets bit (bit0 + x) of `words` where p[x] == target, for x < n; returns
// false when a value is neither 0 nor kMax (not a binary tile).
template <class T>
bool pack(const T* p, int64_t n, int64_t bit0, uint64_t* words, T target) {
  constexpr T kMax = std::numeric_limits<T>::max();
  int64_t x = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 1) {
    const __m128i zero = _mm_setzero_si128(), full = _mm_set1_epi8(static_cast<char>(0xFF));
    const __m128i tv = _mm_set1_epi8(static_cast<char>(target));
    for (; x + 16 <= n; x += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + x));
      const int ok = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, zero), _mm_cmpeq_epi8(v, full)));
      if (ok != 0xFFFF) return false;
      const uint64_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, tv)));
      const int64_t b = bit0 + x;
      words[b >> 6] |= m << (b & 63);
      if ((b & 63) > 48) words[(b >> 6) + 1] |= m >> (64 - (b & 63));
    }
  }
#endif
  for (; x < n; ++x) {
    const T v = p[x];
    if (v != 0 && v != kMax) return false;
    const int64_t b = bit0 + x;
    words[b >> 6] |= static_cast<uint64_t>(v == target) << (b & 63);
  }
  return true;
}

// fill = every bit of `a` in a run (of consecutive set bits of `a`) that
// holds a bit of `seeds` (seeds within a). Upward: adding the seeds to the
// run carries through it to its top; downward: the same on reversed bits.
void fill_runs(const uint64_t* a, const uint64_t* seeds, uint64_t* fill, int64_t nw) {
  unsigned carry = 0;
  for (int64_t k = 0; k < nw; ++k) {
    const uint64_t s = seeds[k] & a[k];
    const unsigned __int128 sum = static_cast<unsigned __int128>(a[k]) + s + carry;
    carry = static_cast<unsigned>(sum >> 64);
    fill[k] = ((static_cast<uint64_t>(sum) ^ a[k]) & a[k]) | s;
  }
  carry = 0;
  for (int64_t k = nw - 1; k >= 0; --k) {
    const uint64_t ra = reverse_bits(a[k]), rs = reverse_bits(seeds[k] & a[k]);
    const unsigned __int128 sum = static_cast<unsigned __int128>(ra) + rs + carry;
    carry = static_cast<unsigned>(sum >> 64);
    fill[k] |= reverse_bits(((static_cast<uint64_t>(sum) ^ ra) & ra) | rs);
  }
}

// Row y from its neighbour row nb (above or below) and its own bits: the
// allowed pixels next to a set pixel seed their runs. Returns whether the
// row changed.
bool update_row(BitRows& b, int64_t y, const uint64_t* nb, bool eight) {
  uint64_t* s = b.srow(y);
  const uint64_t* a = b.arow(y);
  const int64_t nw = b.nw;
  bool any = false;
  for (int64_t k = 0; k < nw; ++k) {
    const uint64_t lo = k > 0 ? 63 : 0, hi = k + 1 < nw ? 1 : 0;  // whether neighbour words exist
    uint64_t v = nb[k];
    if (eight) v |= (nb[k] << 1) | (lo ? nb[k - 1] >> 63 : 0) | (nb[k] >> 1) | (hi ? nb[k + 1] << 63 : 0);
    const uint64_t h = s[k] | (s[k] << 1) | (lo ? s[k - 1] >> 63 : 0) | (s[k] >> 1) | (hi ? s[k + 1] << 63 : 0);
    const uint64_t sd = (v | h) & a[k];
    b.seeds[static_cast<size_t>(k)] = sd;
    any = any || (sd & ~s[k]) != 0;
  }
  // Nothing new next to the row's set pixels: its runs are already whole.
  if (!any) return false;
  fill_runs(a, b.seeds.data(), b.fill.data(), nw);
  bool changed = false;
  for (int64_t k = 0; k < nw; ++k) {
    const uint64_t n = s[k] | b.fill[static_cast<size_t>(k)];
    changed = changed || n != s[k];
    s[k] = n;
  }
  return changed;
}

}  // namespace

template <class T>
bool propagate_binary_tile(const ImageView& jv, const ImageView& iv, const Rect& core, bool dilate, bool eight,
                           bool& changed) {
  constexpr T kMax = std::numeric_limits<T>::max();
  // The value that spreads: the maximum by dilation, 0 by erosion.
  const T spread = dilate ? kMax : T{0};
  const int64_t w = core.w, h = core.h;
  BitRows& b = scratch();
  b.nw = (w + 2 + 63) / 64;
  const auto nw = static_cast<size_t>(b.nw);
  b.s.assign(nw * static_cast<size_t>(h + 2), 0);
  b.a.assign(nw * static_cast<size_t>(h), 0);
  b.seeds.resize(nw), b.fill.resize(nw);
  for (int64_t y = -1; y <= h; ++y)
    if (!pack(jv.ptr<T>(core.x - 1, core.y + y), w + 2, 0, b.srow(y), spread)) return false;
  for (int64_t y = 0; y < h; ++y)
    if (!pack(iv.ptr<T>(core.x, core.y + y), w, 1, b.a.data() + static_cast<size_t>(y) * nw, spread)) return false;
  b.old.assign(b.s.begin(), b.s.end());

  bool done = false;
  for (int pass = 0; pass < kMaxPassPairs && !done; ++pass) {
    bool moved = false;
    for (int64_t y = 0; y < h; ++y) moved = update_row(b, y, b.srow(y - 1), eight) || moved;
    for (int64_t y = h - 1; y >= 0; --y) moved = update_row(b, y, b.srow(y + 1), eight) || moved;
    done = !moved;
  }

  // Back into the tile: the pixels whose bit turned on take the spreading value.
  for (int64_t y = 0; y < h; ++y) {
    const uint64_t* n = b.srow(y);
    const uint64_t* o = b.old.data() + static_cast<size_t>(y + 1) * nw;
    T* r = jv.ptr<T>(core.x - 1, core.y + y);  // index = bit
    for (size_t k = 0; k < nw; ++k) {
      uint64_t d = n[k] ^ o[k];
      while (d) {
        r[static_cast<int64_t>(k * 64) + __builtin_ctzll(d)] = spread;
        changed = true;
        d &= d - 1;
      }
    }
  }
  return done;
}

template bool propagate_binary_tile<uint8_t>(const ImageView&, const ImageView&, const Rect&, bool, bool, bool&);
template bool propagate_binary_tile<uint16_t>(const ImageView&, const ImageView&, const Rect&, bool, bool, bool&);

}  // namespace tw
