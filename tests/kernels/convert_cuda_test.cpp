// filter channel and filter convert on the GPU equal the CPU's, bit for bit:
// every sample type, target and channel count, on random samples with the
// floats that break conversions (halves of the scaled range and their
// neighbouring ulps, NaN, +-inf, -0, subnormals, the largest floats).
#include <gtest/gtest.h>

#include "tests/kernels/registered_op.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

const SampleType kTypes[] = {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32, SampleType::kF32};

void expect_same(const std::string& op, const Image& img, const test::Params& p, const std::string& what) {
  const auto src = test::named_source(img, "in");
  for (int64_t tile : {256, 67}) {
    const Image cpu = test::run_registered(op, {src}, p, tile).image;
    const auto gpu = test::run_registered(op, {src}, p, tile, Backend::cuda(0));
    EXPECT_EQ(gpu.values["op_device"], "cuda:0");
    EXPECT_EQ(test::bits_diff(cpu.view(), gpu.image.view()), "") << what << ", tile " << tile;
  }
}

TEST(CpuVsCuda, Channel) {
  TW_REQUIRE_GPU();
  uint64_t seed = 1;
  for (SampleType t : kTypes)
    for (int c = 2; c <= 4; ++c) {
      const Image img = test::random_samples(PixelFormat{t, c}, 301, 257, seed++);
      for (int index = 0; index < c; ++index)
        expect_same("channel", img, {{"index", std::to_string(index)}},
                    std::string(sample_name(t)) + " x" + std::to_string(c) + " index " + std::to_string(index));
    }
}

TEST(CpuVsCuda, Convert) {
  TW_REQUIRE_GPU();
  struct R {
    double lo, hi;
  };
  uint64_t seed = 50;
  for (SampleType in : kTypes) {
    // {0, 765} and {0, 196605} (3 MAX): exact halves (v = 3 k + 1.5) that
    // a reciprocal instead of the division would round the other way.
    std::vector<R> ranges = {{0, 1},   {-0.3, 2.7}, {1e-3, -4.5},  {0, 255},        {0, 65535},
                             {0, 765}, {0, 196605}, {-1e6, 3.3e9}, {0.1, 0.1000001}};
    for (int c = 1; c <= 4; ++c)
      for (const R& r : ranges)
        for (const char* target : {"u8", "u16", "f32"}) {
          // Samples near this range's rounding boundaries for this target.
          const int max = std::string(target) == "u16" ? 65535 : 255;
          const Image img = test::random_samples(PixelFormat{in, c}, 131, 97, seed++, r.lo, r.hi, max);
          char lo[40], hi[40];
          std::snprintf(lo, sizeof lo, "%.17g", r.lo);
          std::snprintf(hi, sizeof hi, "%.17g", r.hi);
          expect_same("convert", img, {{"type", target}, {"from", lo}, {"to", hi}},
                      std::string(sample_name(in)) + " x" + std::to_string(c) + " -> " + target + " " + lo + ".." + hi);
        }
    // The defaults: the value as float, and u8 -> u16 (v * 257).
    const Image img = test::random_samples(PixelFormat{in, 3}, 131, 97, seed++, -2, 2);
    expect_same("convert", img, {{"type", "f32"}}, std::string(sample_name(in)) + " -> f32");
    if (in == SampleType::kU8) expect_same("convert", img, {{"type", "u16"}}, "u8 -> u16");
  }
}

}  // namespace
}  // namespace tw
