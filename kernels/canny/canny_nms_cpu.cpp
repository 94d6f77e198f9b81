#include <algorithm>
#include <vector>

#include "engine/ops/clones.hpp"
#include "kernels/canny/canny.hpp"

namespace tw::ops {
namespace {

// Sobel of a row (a, b, c: rows y-1, y, y+1 from one column left of the
// first output). Separate, restrict-qualified and compiled for AVX2/AVX-512:
// inline in the block loop the compiler would not vectorise it.
TW_CLONES void gradient_row(const uint8_t* __restrict a, const uint8_t* __restrict b, const uint8_t* __restrict c,
                            int32_t* __restrict gx, int32_t* __restrict gy, int32_t* __restrict mag, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t x = (a[i + 2] + 2 * b[i + 2] + c[i + 2]) - (a[i] + 2 * b[i] + c[i]);
    const int32_t y = (c[i] + 2 * c[i + 1] + c[i + 2]) - (a[i] + 2 * a[i + 1] + a[i + 2]);
    gx[i] = x, gy[i] = y, mag[i] = x * x + y * y;
  }
}

// CannyNms::classify for a whole row, branch-free so that it vectorises:
// every sector's test is computed and the pixel's own is selected. m is the
// row of magnitudes (m[i - 1], m[i + 1] the neighbours), up and dn the rows
// above and below.
TW_CLONES void classify_row(const int32_t* __restrict gx, const int32_t* __restrict gy, const int32_t* __restrict up,
                            const int32_t* __restrict m, const int32_t* __restrict dn, int32_t low2, int32_t high2,
                            uint8_t* __restrict out, int64_t n) {
  constexpr int kShift = 15, kTg22 = 13573;  // as in CannyNms::classify
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = m[i];
    const int32_t ax = gx[i] < 0 ? -gx[i] : gx[i], ay = (gy[i] < 0 ? -gy[i] : gy[i]) << kShift;
    const int32_t tg22x = ax * kTg22;
    const int horizontal = ay < tg22x, vertical = !horizontal & (ay > tg22x + (ax << (kShift + 1)));
    const int diagonal = !horizontal & !vertical, rising = (gx[i] ^ gy[i]) >= 0;
    const int h = (v > m[i - 1]) & (v >= m[i + 1]);
    const int u = (v > up[i]) & (v >= dn[i]);
    const int d = rising ? (v > up[i - 1]) & (v > dn[i + 1]) : (v > up[i + 1]) & (v > dn[i - 1]);
    const int peak = (horizontal & h) | (vertical & u) | (diagonal & d);
    out[i] = static_cast<uint8_t>((peak & (v > low2)) ? (v > high2 ? kCannyStrong : kCannyWeak) : 0);
  }
}

}  // namespace

void CannyNms::cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const {
  const Rect r = dst.rect;
  const int64_t cols = r.w + 2;  // gradients for x = r.x - 1 .. r.x1()
  const int64_t y0 = r.y, rows = r.h + 2;
  // Scratch reused by each thread across blocks.
  thread_local std::vector<int32_t> gx, gy, mag;
  gx.resize(static_cast<size_t>(rows * cols)), gy.resize(gx.size()), mag.resize(gx.size());
  // Columns of the image inside [r.x - 1, r.x1()] (magnitudes outside are 0).
  const int64_t i0 = std::max<int64_t>(0, -(r.x - 1)), i1 = std::min(cols, W - (r.x - 1));
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t y = y0 - 1 + j;
    // src starts at column r.x - 2: index i covers x = r.x - 1 + i - 1.
    int32_t* pm = mag.data() + j * cols;
    gradient_row(src.row<uint8_t>(y - 1), src.row<uint8_t>(y), src.row<uint8_t>(y + 1), gx.data() + j * cols,
                 gy.data() + j * cols, pm, cols);
    if (y < 0 || y >= H) {
      std::fill(pm, pm + cols, 0);
    } else {
      std::fill(pm, pm + i0, 0);
      std::fill(pm + std::max(i0, i1), pm + cols, 0);
    }
  }
  for (int64_t j = 1; j + 1 < rows; ++j) {
    const int64_t k = j * cols + 1;  // output i is gradient column i + 1
    classify_row(gx.data() + k, gy.data() + k, mag.data() + k - cols, mag.data() + k, mag.data() + k + cols,
                 static_cast<int32_t>(low2), static_cast<int32_t>(high2), dst.row<uint8_t>(y0 - 1 + j), cols - 2);
  }
}

}  // namespace tw::ops
