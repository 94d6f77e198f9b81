#include "kernels/reconstruct/planes_cpu.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/reconstruct/bit_planes.hpp"

namespace tw {
namespace {

uint32_t reverse32(uint32_t x) {
  x = __builtin_bswap32(x);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  return ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
}

// One row's words: the bits that neighbour (left, right) a set bit, across
// word edges (bit i of word k is the pixel right of bit i - 1).
inline uint32_t spread(const uint32_t* r, int64_t k, int64_t n) {
  const uint32_t left = k > 0 ? r[k - 1] >> 31 : 0u, right = k + 1 < n ? r[k + 1] << 31 : 0u;
  return r[k] | (r[k] << 1) | left | (r[k] >> 1) | right;
}

struct RowScratch {
  std::vector<uint32_t> seeds, fill;
};

// Row `s` from its neighbour row `nb` (above or below) and its own set bits:
// the allowed pixels next to a set pixel seed their runs, which fill whole.
// Returns whether the row changed.
bool update_row(uint32_t* s, const uint32_t* a, const uint32_t* nb, int64_t n, bool eight, RowScratch& t) {
  bool any = false;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t v = eight ? spread(nb, k, n) : nb[k];
    const uint32_t sd = (v | spread(s, k, n)) & a[k];
    t.seeds[static_cast<size_t>(k)] = sd;
    any = any || (sd & ~s[k]) != 0;
  }
  if (!any) return false;  // nothing new next to the row's set pixels
  // Upward: adding the seeds to a run carries through it to its top; downward
  // the same on reversed bits.
  uint64_t carry = 0;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t sd = t.seeds[static_cast<size_t>(k)];
    const uint64_t sum = uint64_t{a[k]} + sd + carry;
    carry = sum >> 32;
    t.fill[static_cast<size_t>(k)] = ((static_cast<uint32_t>(sum) ^ a[k]) & a[k]) | sd;
  }
  carry = 0;
  for (int64_t k = n - 1; k >= 0; --k) {
    const uint32_t ra = reverse32(a[k]), rs = reverse32(t.seeds[static_cast<size_t>(k)]);
    const uint64_t sum = uint64_t{ra} + rs + carry;
    carry = sum >> 32;
    t.fill[static_cast<size_t>(k)] |= reverse32(((static_cast<uint32_t>(sum) ^ ra) & ra) | rs);
  }
  bool changed = false;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t v = s[k] | t.fill[static_cast<size_t>(k)];
    changed = changed || v != s[k];
    s[k] = v;
  }
  return changed;
}

}  // namespace

bool reconstruct_binary_planes_cpu(int connectivity, uint32_t* on, const uint32_t* allowed, int64_t w, int64_t h,
                                   int max_rounds) {
  const int64_t pitch = bit_plane_pitch(w);
  const bool eight = connectivity == 8;
  if (h <= 0 || w <= 0) return true;
  // Bands of at least 256 rows, one per thread: each round, every band runs
  // its raster and anti-raster pass on its own rows, reading the rows just
  // outside it from a copy taken before the round (its neighbours write
  // them meanwhile); bits only turn on, so a band's news reaches the next
  // band a round later.
  const int64_t threads =
      static_cast<int64_t>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  const int64_t bands = std::clamp<int64_t>(h / 256, 1, threads);
  const int64_t per = (h + bands - 1) / bands;
  // Row ry of the plane holds y = ry - 1; rows 0 and h + 1 are the empty ring.
  auto row = [&](int64_t y) { return on + (y + 1) * pitch; };
  auto arow = [&](int64_t y) { return allowed + (y + 1) * pitch; };
  std::vector<uint32_t> edges(static_cast<size_t>(2 * bands * pitch));  // per band: the row above, the row below
  for (int round = 0; round < max_rounds; ++round) {
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t y0 = b * per, y1 = std::min(h, y0 + per);
      std::copy_n(row(y0 - 1), pitch, edges.data() + (2 * b) * pitch);
      std::copy_n(row(y1), pitch, edges.data() + (2 * b + 1) * pitch);
    }
    std::atomic<bool> moved{false};
    tbb::parallel_for(int64_t{0}, bands, [&](int64_t b) {
      const int64_t y0 = b * per, y1 = std::min(h, y0 + per);
      if (y0 >= y1) return;
      thread_local RowScratch t;
      t.seeds.resize(static_cast<size_t>(pitch)), t.fill.resize(static_cast<size_t>(pitch));
      const uint32_t* above = edges.data() + (2 * b) * pitch;
      const uint32_t* below = edges.data() + (2 * b + 1) * pitch;
      bool m = false;
      for (int64_t y = y0; y < y1; ++y)
        m = update_row(row(y), arow(y), y == y0 ? above : row(y - 1), pitch, eight, t) || m;
      for (int64_t y = y1 - 1; y >= y0; --y)
        m = update_row(row(y), arow(y), y == y1 - 1 ? below : row(y + 1), pitch, eight, t) || m;
      if (m) moved.store(true, std::memory_order_relaxed);
    });
    if (!moved) return true;
  }
  return false;
}

}  // namespace tw
