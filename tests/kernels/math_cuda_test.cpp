// tilewave math on the GPU (kernels/math/math_cuda.cu) equals the CPU bit
// for bit: every op, sample type and channel count, mask by every mask type
// of 1 channel or A's, with NaN, +-inf, -0 and ties among the samples, at
// tile sizes that cut the image unevenly and whole; with either input or
// both in device memory. Two host inputs stay on the CPU (docs/ops/math.md).
#include <gtest/gtest.h>

#include "tests/kernels/math_operands.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/device_source.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

const SampleType kTypes[] = {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32, SampleType::kF32};

using test::on_device;

void expect_same(const std::string& op, const Image& a, const Image& b, const std::string& what) {
  const auto ha = test::named_source(a, "A.tif"), hb = test::named_source(b, "B.tif");
  const auto da = on_device(a), db = on_device(b);
  for (int64_t tile : {67, 256, 0}) {
    const Image cpu = test::run_registered(op, {ha, hb}, {}, tile).image;
    for (const auto& [sa, sb, where] : {std::tuple{da, db, "both on the device"}, std::tuple{da, hb, "A on the device"},
                                        std::tuple{ha, db, "B on the device"}}) {
      const auto gpu = test::run_registered(op, {sa, sb}, {}, tile, Backend::cuda(0));
      EXPECT_EQ(gpu.values["op_device"], "cuda:0") << where;
      EXPECT_EQ(test::bits_diff(cpu.view(), gpu.image.view()), "")
          << op << " " << what << ", " << where << ", tile " << tile;
    }
  }
  const auto host = test::run_registered(op, {ha, hb}, {}, 0, Backend::cuda(0));
  EXPECT_EQ(host.values["op_device"], "cpu") << "two host inputs stay on the CPU";
}

TEST(CpuVsCuda, Math) {
  TW_REQUIRE_GPU();
  uint64_t seed = 500;
  for (const char* op : {"subtract", "min", "max"})
    for (SampleType t : kTypes)
      for (int c = 1; c <= 4; ++c) {
        const Image a = test::math_operand(PixelFormat{t, c}, 301, 257, seed++);
        const Image b = test::math_operand(PixelFormat{t, c}, 301, 257, seed++, &a);
        expect_same(op, a, b, std::string(sample_name(t)) + " x" + std::to_string(c));
      }
}

TEST(CpuVsCuda, MathMask) {
  TW_REQUIRE_GPU();
  uint64_t seed = 700;
  for (SampleType t : kTypes)
    for (int c = 1; c <= 4; ++c)
      for (SampleType mt : kTypes)
        for (int mc : {1, c}) {
          const Image a = test::math_operand(PixelFormat{t, c}, 131, 97, seed++);
          const Image m = test::math_operand(PixelFormat{mt, mc}, 131, 97, seed++);
          expect_same("mask", a, m,
                      std::string(sample_name(t)) + " x" + std::to_string(c) + " masked by " + sample_name(mt) + " x" +
                          std::to_string(mc));
        }
}

}  // namespace
}  // namespace tw
