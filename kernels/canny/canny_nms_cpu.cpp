#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/ops/clones.hpp"
#include "kernels/canny/canny.hpp"

namespace tw::kernels {
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

TW_CLONES void above(const int32_t* __restrict m, int32_t t, uint8_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = m[i] > t;
}

}  // namespace

void CannyNms::cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const {
  const Rect r = dst.rect;
  const int64_t cols = r.w + 2;  // gradients for x = r.x - 1 .. r.x1()
  constexpr int64_t kRows = 32;
  tbb::parallel_for(int64_t{0}, (r.h + kRows - 1) / kRows, [&](int64_t chunk) {
    const int64_t y0 = r.y + chunk * kRows, y1 = std::min(r.y1(), y0 + kRows), rows = y1 - y0 + 2;
    // Scratch reused by each thread across reads.
    thread_local std::vector<int32_t> gx, gy, mag;
    thread_local std::vector<uint8_t> cand;
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
    // Most pixels are below the low threshold: find the others eight at a
    // time (a vectorised compare), and classify only those.
    cand.resize(static_cast<size_t>(cols + 8));
    for (int64_t j = 1; j + 1 < rows; ++j) {
      uint8_t* o = dst.row<uint8_t>(y0 - 1 + j);
      const int32_t* m = mag.data() + j * cols;
      const int64_t n = cols - 2;
      above(m + 1, static_cast<int32_t>(low2), cand.data(), n);
      std::fill(o, o + n, uint8_t{0});
      for (int64_t w0 = 0; w0 < n; w0 += 8) {
        uint64_t word = 0;
        std::memcpy(&word, cand.data() + w0, 8);
        if (w0 + 8 > n) word &= (uint64_t{1} << (8 * (n - w0))) - 1;
        for (; word; word &= word - 1) {
          const int64_t i = w0 + __builtin_ctzll(word) / 8;
          const int64_t k = j * cols + i + 1;
          o[i] = classify(gx[static_cast<size_t>(k)], gy[static_cast<size_t>(k)], mag[static_cast<size_t>(k)],
                          [&](int dx, int dy) { return mag[static_cast<size_t>(k + dy * cols + dx)]; });
        }
      }
    }
  });
}

}  // namespace tw::kernels
