#include "engine/ops/clones.hpp"
#include "kernels/sobel/sobel.hpp"

namespace tw::ops {
namespace {

// One row (a, b, c: rows y-1, y, y+1 from one column left of the first
// output); the same arithmetic as Sobel::finish, in a restrict-qualified
// loop the compiler vectorises (sqrtf is correctly rounded everywhere).
TW_CLONES void sobel_row(const uint8_t* __restrict a, const uint8_t* __restrict b, const uint8_t* __restrict c,
                         uint8_t* __restrict o, int64_t n, float threshold) {
  for (int64_t i = 0; i < n; ++i) {
    const int gx = (a[i + 2] + 2 * b[i + 2] + c[i + 2]) - (a[i] + 2 * b[i] + c[i]);
    const int gy = (c[i] + 2 * c[i + 1] + c[i + 2]) - (a[i] + 2 * a[i + 1] + a[i + 2]);
    const float m = sqrtf(static_cast<float>(gx * gx + gy * gy));
    const uint8_t mag = m >= 254.5f ? 255 : static_cast<uint8_t>(static_cast<int>(m + 0.5f));
    o[i] = threshold >= 0.f ? (m > threshold ? 255 : 0) : mag;
  }
}

}  // namespace

void Sobel::cpu_block(const Image& src, const ImageView& dst, int64_t, int64_t) const {
  const Rect r = dst.rect;
  for (int64_t y = r.y; y < r.y1(); ++y)
    sobel_row(src.row<uint8_t>(y - 1), src.row<uint8_t>(y), src.row<uint8_t>(y + 1), dst.row<uint8_t>(y), r.w,
              threshold);
}

}  // namespace tw::ops
