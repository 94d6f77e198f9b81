#include <algorithm>
#include <cstring>
#include <type_traits>

#include "engine/border.hpp"
#include "engine/error.hpp"
#include "engine/ops/clones.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw {
namespace {

// Accumulator width: for 8-bit samples every partial sum fits 16 bits
// (16*255 vertically, 256*255 + 128 overall), so the loops run on twice as
// many lanes; 16-bit samples need 32.
template <class T>
using Acc =
    std::conditional_t<std::is_floating_point_v<T>, float, std::conditional_t<sizeof(T) == 1, uint16_t, uint32_t>>;

// Every other pixel of a full-rate row of 3-channel 16-bit sums, each
// sum's high byte: 48 bytes of sums (4 pixel pairs) make 12 output bytes
// through two byte shuffles (pshufb or vpermb where the clone has them; the
// compiler's generic loop made this step a third of the row's time).
// Returns how many output pixels it wrote (a multiple of 4).
TW_CLONES int64_t keep_even_rgb8(const uint16_t* h, int64_t out_w, uint8_t* out) {
  typedef uint8_t v16 __attribute__((vector_size(16)));
#if !defined(__clang__)
  const v16 first = {1, 3, 5, 13, 15, 17, 25, 27, 29, 0, 0, 0, 0, 0, 0, 0};
  const v16 last = {0, 1, 2, 3, 4, 5, 6, 7, 8, 21, 23, 25, 0, 0, 0, 0};
#endif
  const uint8_t* b = reinterpret_cast<const uint8_t*>(h);
  int64_t x = 0;
  for (; x + 4 <= out_w; x += 4, b += 48) {
    v16 r0, r1, r2;
    std::memcpy(&r0, b, 16);
    std::memcpy(&r1, b + 16, 16);
    std::memcpy(&r2, b + 32, 16);
#if defined(__clang__)
    // Clang (the fuzz build) has no __builtin_shuffle; the same byte picks.
    const v16 o =
        __builtin_shufflevector(__builtin_shufflevector(r0, r1, 1, 3, 5, 13, 15, 17, 25, 27, 29, 0, 0, 0, 0, 0, 0, 0),
                                r2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 21, 23, 25, 0, 0, 0, 0);
#else
    const v16 o = __builtin_shuffle(__builtin_shuffle(r0, r1, first), r2, last);
#endif
    std::memcpy(out + 3 * x, &o, 12);
  }
  return x;
}

// kC: the channel count when it is one of the common ones (constant loops
// the compiler unrolls), 0 for any other count, then given as `channels`
// (multiplex slides: every channel reduced alike, the same arithmetic).
template <class T, int kC>
TW_CLONES void reduce_row_t(const uint8_t* const rows_b[5], int64_t in_x0, int64_t in_w, int64_t in_width,
                            int64_t out_x0, int64_t out_w, uint8_t* out_b, std::vector<uint32_t>& scratch,
                            int channels = kC) {
  using A = Acc<T>;
  const int C = kC > 0 ? kC : channels;
  // v holds vertical sums for input columns c0 .. c0 + n - 1, where
  // c0 = 2*out_x0 - 2 and n = 2*out_w + 3; plus a full-rate horizontal
  // result h over the first 2*out_w columns.
  const int64_t c0 = 2 * out_x0 - 2;
  const int64_t n = 2 * out_w + 3;
  const size_t need = static_cast<size_t>((n + 2 * out_w) * C) * sizeof(A);
  if (scratch.size() * sizeof(uint32_t) < need) scratch.resize(need / sizeof(uint32_t) + 1);
  A* v = reinterpret_cast<A*>(scratch.data());
  A* h = v + n * C;

  const T* r[5];
  for (int i = 0; i < 5; ++i) r[i] = reinterpret_cast<const T*>(rows_b[i]);
  // Vertical pass over the columns that exist, channel-agnostic.
  const int64_t lo = std::max<int64_t>(c0, 0), hi = std::min<int64_t>(c0 + n, in_width);
  TW_ASSERT(lo >= in_x0 && hi <= in_x0 + in_w);
  {
    const int64_t s0 = (lo - in_x0) * C, s1 = (hi - in_x0) * C;
    A* dst = v + (lo - c0) * C;
    const T *a = r[0] + s0, *b = r[1] + s0, *c = r[2] + s0, *d = r[3] + s0, *e = r[4] + s0;
    const int64_t m = s1 - s0;
    for (int64_t i = 0; i < m; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        dst[i] = a[i] + e[i] + 4.0f * (b[i] + d[i]) + 6.0f * c[i];
      else
        dst[i] = static_cast<A>(A(a[i]) + A(e[i]) + A(4 * (A(b[i]) + A(d[i]))) + A(6 * A(c[i])));
    }
  }
  // Columns past either edge mirror ones inside (reflect101); only the few
  // outside [lo, hi) are visited.
  auto mirror = [&](int64_t k) {
    const int64_t src = border_index(c0 + k, in_width, BorderMode::kReflect101);
    TW_ASSERT(src >= lo && src < hi);
    std::memcpy(v + k * C, v + (src - c0) * C, sizeof(A) * C);
  };
  for (int64_t k = 0; k < lo - c0; ++k) mirror(k);
  for (int64_t k = hi - c0; k < n; ++k) mirror(k);
  // Horizontal pass at full rate (unit stride, so it vectorises), then keep
  // every other pixel.
  const int64_t m = 2 * out_w * C;
  T* out = reinterpret_cast<T*>(out_b);
  if constexpr (std::is_floating_point_v<T>) {
    // Floats: the same weights, divided by 256 (exact: a power of two).
    for (int64_t i = 0; i < m; ++i) h[i] = v[i] + v[i + 4 * C] + 4.0f * (v[i + C] + v[i + 3 * C]) + 6.0f * v[i + 2 * C];
    for (int64_t x = 0; x < out_w; ++x)
      for (int ch = 0; ch < C; ++ch) out[x * C + ch] = h[2 * x * C + ch] * (1.0f / 256);
  } else {
    for (int64_t i = 0; i < m; ++i)
      h[i] = static_cast<A>(v[i] + v[i + 4 * C] + A(4 * (v[i + C] + v[i + 3 * C])) + A(6 * v[i + 2 * C]) + A(128));
    int64_t x = 0;
    if constexpr (sizeof(T) == 1 && kC == 3) x = keep_even_rgb8(h, out_w, out);
    for (; x < out_w; ++x)
      for (int ch = 0; ch < C; ++ch) out[x * C + ch] = static_cast<T>(h[2 * x * C + ch] >> 8);
  }
}

template <class T>
void dispatch_channels(int channels, const uint8_t* const rows[5], int64_t in_x0, int64_t in_w, int64_t in_width,
                       int64_t out_x0, int64_t out_w, uint8_t* out, std::vector<uint32_t>& scratch) {
  switch (channels) {
    case 1:
      return reduce_row_t<T, 1>(rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case 2:
      return reduce_row_t<T, 2>(rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case 3:
      return reduce_row_t<T, 3>(rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case 4:
      return reduce_row_t<T, 4>(rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    default:
      return reduce_row_t<T, 0>(rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch, channels);
  }
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> pyramid_level_sizes(int64_t w, int64_t h, int64_t min_size) {
  TW_ASSERT(w > 0 && h > 0 && min_size > 0);
  std::vector<std::pair<int64_t, int64_t>> sizes{{w, h}};
  while (w > min_size || h > min_size) {
    w = reduced_size(w), h = reduced_size(h);
    sizes.emplace_back(w, h);
  }
  return sizes;
}

void reduce_source_rows(int64_t out_y, int64_t in_height, int64_t rows[5]) {
  for (int i = 0; i < 5; ++i) rows[i] = border_index(2 * out_y - 2 + i, in_height, BorderMode::kReflect101);
}

namespace {

// Labels: the sample at (2X, 2Y) (rows[2] is input row 2Y), never a
// weighted mean — a label 37 beside 38 must not become 37.5 or 36.
// A pixel's bytes copied at a size the compiler knows: a memcpy call per
// pixel of a run-time size made this a serial stage's main cost in the
// labels' pyramid of `tilewave nuclei` (7 ms a 45056-px band).
template <size_t kBpp>
void nearest_fixed(const uint8_t* in, int64_t out_w, uint8_t* out) {
  for (int64_t x = 0; x < out_w; ++x)
    std::memcpy(out + static_cast<size_t>(x) * kBpp, in + static_cast<size_t>(2 * x) * kBpp, kBpp);
}

void nearest_row(PixelFormat fmt, const uint8_t* row, int64_t in_x0, int64_t out_x0, int64_t out_w, uint8_t* out) {
  const size_t bpp = fmt.bytes_per_pixel();
  const uint8_t* in = row + static_cast<size_t>(2 * out_x0 - in_x0) * bpp;
  switch (bpp) {
    case 4:
      return nearest_fixed<4>(in, out_w, out);
    case 8:
      return nearest_fixed<8>(in, out_w, out);
    case 12:
      return nearest_fixed<12>(in, out_w, out);
    case 16:
      return nearest_fixed<16>(in, out_w, out);
    default:
      for (int64_t x = 0; x < out_w; ++x)
        std::memcpy(out + static_cast<size_t>(x) * bpp, in + static_cast<size_t>(2 * x) * bpp, bpp);
  }
}

}  // namespace

void reduce_row(PixelFormat fmt, const uint8_t* const rows[5], int64_t in_x0, int64_t in_w, int64_t in_width,
                int64_t out_x0, int64_t out_w, uint8_t* out, std::vector<uint32_t>& scratch) {
  if (out_w <= 0) return;
  switch (fmt.type) {
    case SampleType::kU8:
      return dispatch_channels<uint8_t>(fmt.channels, rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case SampleType::kU16:
      return dispatch_channels<uint16_t>(fmt.channels, rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case SampleType::kF32:
      return dispatch_channels<float>(fmt.channels, rows, in_x0, in_w, in_width, out_x0, out_w, out, scratch);
    case SampleType::kU32:
      return nearest_row(fmt, rows[2], in_x0, out_x0, out_w, out);
    default:
      throw InputError(std::string("REDUCE supports 8-, 16-bit, float and u32 (nearest) samples, not ") +
                       sample_name(fmt.type));
  }
}

Image reduce_image(const Image& src) {
  const Rect r = src.rect();
  TW_ASSERT(r.x == 0 && r.y == 0 && !r.empty());
  Image out(src.fmt(), Rect(0, 0, reduced_size(r.w), reduced_size(r.h)));
  std::vector<uint32_t> scratch;
  for (int64_t y = 0; y < out.rect().h; ++y) {
    int64_t ry[5];
    reduce_source_rows(y, r.h, ry);
    const uint8_t* rows[5];
    for (int i = 0; i < 5; ++i) rows[i] = src.row_bytes(ry[i]);
    reduce_row(src.fmt(), rows, 0, r.w, r.w, 0, out.rect().w, out.row_bytes(y), scratch);
  }
  return out;
}

}  // namespace tw
