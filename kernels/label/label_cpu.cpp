#include <cstring>

#include "engine/error.hpp"
#include "kernels/label/label.hpp"

namespace tw::label {

void foreground_row(const uint8_t* src, SampleType t, int64_t n, uint8_t* fg) {
  switch (t) {
    case SampleType::kU8:
      for (int64_t i = 0; i < n; ++i) fg[i] = src[i] != 0;
      return;
    case SampleType::kU16: {
      const auto* s = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) fg[i] = s[i] != 0;
      return;
    }
    case SampleType::kI32:
    case SampleType::kU32: {
      const auto* s = reinterpret_cast<const uint32_t*>(src);
      for (int64_t i = 0; i < n; ++i) fg[i] = s[i] != 0;
      return;
    }
    case SampleType::kF32: {
      // NaN != 0 holds and -0 == 0: NaN is set, -0 is not (as `math mask`).
      const auto* s = reinterpret_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) fg[i] = s[i] != 0.0f;
      return;
    }
  }
}

namespace {

inline uint32_t find(uint32_t* p, uint32_t a) {
  while (p[a] != a) {
    p[a] = p[p[a]];  // path halving
    a = p[a];
  }
  return a;
}

// Joins the sets of a and b; the root is the smaller label.
inline uint32_t unite(uint32_t* p, uint32_t a, uint32_t b) {
  a = find(p, a), b = find(p, b);
  if (a == b) return a;
  if (a < b) {
    p[b] = a;
    return a;
  }
  p[a] = b;
  return b;
}

}  // namespace

uint32_t label_tile(const uint8_t* fg, size_t fg_stride, int64_t w, int64_t h, int connectivity, uint32_t* out,
                    size_t out_stride, std::vector<uint32_t>& first, TileScratch& s) {
  TW_ASSERT(connectivity == 4 || connectivity == 8);
  // At most one provisional label per set pixel with no set neighbour
  // before it: half the pixels (4-connected checkerboard), plus label 0.
  const size_t max_labels = static_cast<size_t>(w * h + 1) / 2 + 2;
  if (s.parent.size() < max_labels) s.parent.resize(max_labels);
  uint32_t* p = s.parent.data();
  uint32_t next = 1;
  const bool eight = connectivity == 8;
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* f = fg + static_cast<size_t>(y) * fg_stride;
    uint32_t* o = out + static_cast<size_t>(y) * out_stride;
    const uint32_t* up = y > 0 ? out + static_cast<size_t>(y - 1) * out_stride : nullptr;
    for (int64_t x = 0; x < w; ++x) {
      if (!f[x]) {
        o[x] = 0;
        continue;
      }
      uint32_t l = x > 0 ? o[x - 1] : 0;
      if (up) {
        // The pixel above joins whatever is left; the diagonals need a
        // union only when the pixel above is unset (else they are joined
        // to it already, through the row above).
        const uint32_t n = up[x];
        if (n) {
          l = l ? unite(p, l, n) : n;
        } else if (eight) {
          const uint32_t nw = x > 0 ? up[x - 1] : 0, ne = x + 1 < w ? up[x + 1] : 0;
          if (nw) l = l ? unite(p, l, nw) : nw;
          if (ne) l = l ? unite(p, l, ne) : ne;
        }
      }
      if (!l) {
        l = next++;
        p[l] = l;
      }
      o[x] = l;
    }
  }
  // Second pass: roots numbered as first met, i.e. in raster order of
  // first pixels.
  if (s.final.size() < next) s.final.resize(next);
  uint32_t* fin = s.final.data();
  std::memset(fin, 0, sizeof(uint32_t) * next);
  uint32_t n = 0;
  first.clear();
  for (int64_t y = 0; y < h; ++y) {
    uint32_t* o = out + static_cast<size_t>(y) * out_stride;
    for (int64_t x = 0; x < w; ++x) {
      const uint32_t l = o[x];
      if (!l) continue;
      const uint32_t r = find(p, l);
      if (!fin[r]) {
        fin[r] = ++n;
        first.push_back(static_cast<uint32_t>(y * w + x));
      }
      o[x] = fin[r];
    }
  }
  return n;
}

}  // namespace tw::label
