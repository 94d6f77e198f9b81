#include <tbb/parallel_for.h>

#include "kernels/sobel/sobel.hpp"

namespace tw::kernels {

void Sobel::cpu_block(const Image& src, const ImageView& dst, int64_t, int64_t) const {
  const Rect r = dst.rect;
  tbb::parallel_for(r.y, r.y1(), [&](int64_t y) {
    // src starts one column left of r.x: index i is column r.x - 1 + i.
    const uint8_t* a = src.row<uint8_t>(y - 1);
    const uint8_t* b = src.row<uint8_t>(y);
    const uint8_t* c = src.row<uint8_t>(y + 1);
    uint8_t* o = dst.row<uint8_t>(y);
    for (int64_t i = 0; i < r.w; ++i) {
      const int gx = (a[i + 2] + 2 * b[i + 2] + c[i + 2]) - (a[i] + 2 * b[i] + c[i]);
      const int gy = (c[i] + 2 * c[i + 1] + c[i + 2]) - (a[i] + 2 * a[i + 1] + a[i + 2]);
      o[i] = finish(gx, gy);
    }
  });
}

}  // namespace tw::kernels
