// The CPU kernels of erosion and dilation (kernels/morphology/morphology.hpp).
// Everything runs on whole rows of samples, one min/max per sample per pass,
// so the compiler vectorises every pass (pminub/pmaxub for 8 bits).
//
// Square: separable. Vertically, van Herk / Gil-Werman (M. van Herk, "A fast
// algorithm for local minimum and maximum filters on rectangular and
// octagonal kernels", Pattern Recognit. Lett. 13, 1992): prefix and suffix
// minima in segments of 2R+1 rows, two per input row and one per output
// row, whatever R. Horizontally, doubling: a window of 2L samples is the
// min of two windows of L, so 2R+1 takes ceil(log2(2R+1)) passes, each a
// whole-row vector operation (van Herk along a row is a serial scan).
//
// Disk: the union of its horizontal chords [-w(dy), w(dy)] x {dy}. With the
// chords' distinct half-widths w_1 > ... > w_K (w_1 = R), V_k the min of the
// rows whose chord is w_k, and M_d the running min of half-width d (which
// distributes over min, and M_a M_b = M_(a+b)), the erosion is
//   M_wK(V_K  min  M_(wK-1 - wK)(V_K-1  min ... M_(w1 - w2)(V_1)))
// (Horner's scheme): 2R+1 row passes for the V_k plus running minima whose
// half-widths add up to R, mostly 1 or 2. Exact: only mins of input samples.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/error.hpp"
#include "kernels/morphology/morphology.hpp"

namespace tw::ops {
namespace {

template <bool kMax, class T>
inline T pick(T a, T b) {
  return kMax ? std::max(a, b) : std::min(a, b);
}

// out[i] = pick(a[i], b[i]) for i < n.
template <bool kMax, class T>
void pick_pair(T* __restrict out, const T* __restrict a, const T* __restrict b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = pick<kMax>(a[i], b[i]);
}

// acc[i] = pick(acc[i], b[i]) for i < n.
template <bool kMax, class T>
void pick_into(T* __restrict acc, const T* __restrict b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = pick<kMax>(acc[i], b[i]);
}

// out[s] = pick of a[s + k C], k = 0 .. len-1, for the n - (len-1) C samples
// s where the window fits: doubling windows 1, 2, 4, ... then len, the
// intermediate ones in t1 and t2 (n samples each; out may be shorter).
template <bool kMax, class T>
void running(T* out, T* t1, T* t2, const T* a, int64_t n, int len, int C) {
  const T* cur = a;
  T* tmp[2] = {t1, t2};
  int l = 1;
  for (int i = 0; 2 * l < len; ++i, l *= 2) {
    pick_pair<kMax>(tmp[i % 2], cur, cur + int64_t{l} * C, n - int64_t{2 * l - 1} * C);
    cur = tmp[i % 2];
  }
  if (l == len)
    std::memcpy(out, cur, static_cast<size_t>(n - int64_t{len - 1} * C) * sizeof(T));
  else
    pick_pair<kMax>(out, cur, cur + int64_t{len - l} * C, n - int64_t{len - 1} * C);
}

// Scratch reused by each thread across blocks (fresh pages cost more than
// the passes over them).
template <class T>
T* scratch(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Output pixels per strip: the strip's input rows (with the halo) stay in
// L2 while the block's rows reuse them.
int64_t strip_pixels(int64_t rows_in, int C, size_t sample_bytes, int copies) {
  const int64_t per_px = rows_in * C * static_cast<int64_t>(sample_bytes) * copies;
  return std::clamp<int64_t>((int64_t{512} << 10) / per_px, 128, 4096);
}

template <bool kMax, class T, int C>
void square_block(int R, const Image& src, const ImageView& dst) {
  const Rect r = dst.rect;
  const int L = 2 * R + 1;
  const int64_t n_in = r.h + 2 * R;
  const int64_t sp = strip_pixels(n_in, C, sizeof(T), 3);
  thread_local std::vector<T> g_buf, h_buf, v_buf, t_buf, u_buf;
  for (int64_t x0 = r.x; x0 < r.x1(); x0 += sp) {
    const int64_t sw = std::min(sp, r.x1() - x0), m = (sw + 2 * R) * C;
    T* g = scratch(g_buf, static_cast<size_t>(n_in * m));
    T* h = scratch(h_buf, static_cast<size_t>(n_in * m));
    T* v = scratch(v_buf, static_cast<size_t>(m));
    T* t = scratch(t_buf, static_cast<size_t>(m));
    T* u = scratch(u_buf, static_cast<size_t>(m));
    auto in = [&](int64_t j) { return src.ptr<T>(x0 - R, r.y - R + j); };
    // Prefix minima within segments of L rows starting at row 0 ...
    for (int64_t j = 0; j < n_in; ++j) {
      if (j % L == 0)
        std::memcpy(g + j * m, in(j), static_cast<size_t>(m) * sizeof(T));
      else
        pick_pair<kMax>(g + j * m, in(j), g + (j - 1) * m, m);
    }
    // ... suffix minima, for the rows where an output window starts ...
    const int64_t h_end = std::min(n_in - 1, ((r.h - 1) / L) * L + L - 1);
    for (int64_t j = h_end; j >= 0; --j) {
      if (j % L == L - 1 || j == h_end)
        std::memcpy(h + j * m, in(j), static_cast<size_t>(m) * sizeof(T));
      else
        pick_pair<kMax>(h + j * m, in(j), h + (j + 1) * m, m);
    }
    // ... and rows k .. k+2R are the suffix of k's segment and the prefix
    // of the next one up to k+2R (one segment when k starts it).
    for (int64_t k = 0; k < r.h; ++k) {
      pick_pair<kMax>(v, h + k * m, g + (k + 2 * R) * m, m);
      running<kMax>(dst.ptr<T>(x0, r.y + k), t, u, v, m, L, C);
    }
  }
}

template <bool kMax, class T, int C>
void disk_block(int R, const uint8_t* chord, const Image& src, const ImageView& dst) {
  const Rect r = dst.rect;
  // The chords' distinct half-widths, widest first, each with its rows.
  struct Level {
    int w;
    std::vector<int> dys;
  };
  std::vector<Level> levels;
  for (int w = R; w >= 0; --w) {
    Level l{w, {}};
    for (int dy = -R; dy <= R; ++dy)
      if (chord[dy + R] == w) l.dys.push_back(dy);
    if (!l.dys.empty()) levels.push_back(std::move(l));
  }
  const int64_t sp = strip_pixels(r.h + 2 * R, C, sizeof(T), 1);
  thread_local std::vector<T> x_buf, s_buf, t_buf, u_buf;
  for (int64_t x0 = r.x; x0 < r.x1(); x0 += sp) {
    const int64_t sw = std::min(sp, r.x1() - x0), m = (sw + 2 * R) * C;
    T* X = scratch(x_buf, static_cast<size_t>(m));
    T* S = scratch(s_buf, static_cast<size_t>(m));
    T* t = scratch(t_buf, static_cast<size_t>(m));
    T* u = scratch(u_buf, static_cast<size_t>(m));
    for (int64_t y = r.y; y < r.y1(); ++y) {
      auto in = [&](int dy) { return src.ptr<T>(x0 - R, y + dy); };
      // X[i] holds the partial result centred on strip pixel i + o.
      int64_t o = 0, count = sw + 2 * R;
      const Level& first = levels.front();
      std::memcpy(X, in(first.dys[0]), static_cast<size_t>(m) * sizeof(T));
      for (size_t d = 1; d < first.dys.size(); ++d) pick_into<kMax>(X, in(first.dys[d]), m);
      for (size_t k = 1; k < levels.size(); ++k) {
        const int delta = levels[k - 1].w - levels[k].w;
        running<kMax>(S, t, u, X, count * C, 2 * delta + 1, C);
        o += delta, count -= 2 * delta;
        for (const int dy : levels[k].dys) pick_into<kMax>(S, in(dy) + o * C, count * C);
        std::swap(X, S);
      }
      const int last = levels.back().w;
      running<kMax>(dst.ptr<T>(x0, y), t, u, X, count * C, 2 * last + 1, C);
    }
  }
}

}  // namespace

template <class T, int C, bool kMax>
void Morph<T, C, kMax>::cpu_block(const Image& src, const ImageView& dst, int64_t, int64_t) const {
  if (shape == MorphShape::kSquare)
    square_block<kMax, T, C>(r, src, dst);
  else
    disk_block<kMax, T, C>(r, chord, src, dst);
}

template <class T, int C, bool kMax>
Morph<T, C, kMax> make_morph(int r, MorphShape shape) {
  if (r < 1 || r > kMaxMorphRadius)
    throw InputError("morphology radius " + std::to_string(r) + " is outside 1.." + std::to_string(kMaxMorphRadius));
  Morph<T, C, kMax> m;
  m.r = r;
  m.shape = shape;
  for (int dy = -r; dy <= r; ++dy) {
    // The largest w with w^2 + dy^2 <= r^2 (skimage's disk), in integers.
    int w = r;
    if (shape == MorphShape::kDisk)
      while (w * w + dy * dy > r * r) --w;
    m.chord[dy + r] = static_cast<uint8_t>(w);
  }
  return m;
}

MorphShape parse_morph_shape(const std::string& s) {
  if (s == "disk") return MorphShape::kDisk;
  if (s == "square") return MorphShape::kSquare;
  throw InputError("unknown structuring element '" + s + "' (disk or square)");
}

#define TW_MORPH_INSTANCE(T, C, kMax)                                                                 \
  template void Morph<T, C, kMax>::cpu_block(const Image&, const ImageView&, int64_t, int64_t) const; \
  template Morph<T, C, kMax> make_morph<T, C, kMax>(int, MorphShape);
TW_MORPH_INSTANCE(uint8_t, 1, false)
TW_MORPH_INSTANCE(uint8_t, 1, true)
TW_MORPH_INSTANCE(uint8_t, 3, false)
TW_MORPH_INSTANCE(uint8_t, 3, true)
TW_MORPH_INSTANCE(uint16_t, 1, false)
TW_MORPH_INSTANCE(uint16_t, 1, true)
TW_MORPH_INSTANCE(uint16_t, 3, false)
TW_MORPH_INSTANCE(uint16_t, 3, true)
#undef TW_MORPH_INSTANCE

}  // namespace tw::ops
