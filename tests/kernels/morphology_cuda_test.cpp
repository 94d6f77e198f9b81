// filter erode|dilate on the GPU (the functor, O(R^2) per pixel) equals the
// CPU's separable and chord kernels bit for bit: both shapes, u8 and u16,
// gray and RGB, odd sizes and tiles, radii up to 64. Label `gpu`: skipped
// without a device.
#include <gtest/gtest.h>

#include <string>

#include "kernels/morphology/morphology.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

TEST(CpuVsCuda, ErodeDilate) {
  TW_REQUIRE_GPU();
  const Backend gpu = Backend::cuda(0);
  for (PixelFormat f : {kGray8, kRgb8, PixelFormat{SampleType::kU16, 1}, PixelFormat{SampleType::kU16, 3}})
    for (auto [w, h] : {std::pair<int64_t, int64_t>{1031, 777}, {5, 3}}) {
      const test::SourceP src = test::source_of(test::pattern_image(f, w, h, 9));
      const test::SourceP noise = test::source_of(test::random_samples(f, w, h, 10));
      for (const char* op : {"erode", "dilate"})
        for (const char* shape : {"disk", "square"})
          for (int r : {1, 5, 16, 64}) {
            if (r == 64 && w > 100) continue;  // the GPU's O(R^2) functor: keep the test short
            const test::Params p = {{"radius", std::to_string(r)}, {"shape", shape}};
            for (const test::SourceP& s : {src, noise}) {
              const Image cpu = test::run_registered(op, {s}, p).image;
              for (int64_t tile : {77, 256, 0})
                EXPECT_EQ(test::bits_diff(test::run_registered(op, {s}, p, tile, gpu).image.view(), cpu.view()), "")
                    << op << " " << shape << " r " << r << " " << f.str() << " " << w << "x" << h << " tile " << tile;
            }
          }
    }
}

}  // namespace
}  // namespace tw
