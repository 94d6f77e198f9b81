// filter gamma on the GPU equals the CPU's, byte for byte.
#include <gtest/gtest.h>

#include "engine/ops/run_op.hpp"
#include "kernels/gamma/gamma.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/op_test.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

TEST(CpuVsCuda, Gamma) {
  TW_REQUIRE_GPU();
  const Image rgb = test::pattern_image(kRgb8, 1000, 777, 8);
  for (double gamma : {0.45, 2.2}) {
    const auto op = ops::make_gamma<3>(gamma, 1.0);
    const Image cpu = test::read_tiled(*ops::run_op(test::source_of(rgb), op, Backend{}, "gamma"), 256);
    const Image gpu = test::read_tiled(*ops::run_op(test::source_of(rgb), op, Backend::cuda(0), "gamma"), 256);
    EXPECT_EQ(test::diff_images(cpu.view(), gpu.view()), "") << gamma;
  }
}

}  // namespace
}  // namespace tw
