// REDUCE of images of any channel count (multiplex slides: 5 to 64
// channels) on the CPU: each channel of an N-channel REDUCE equals REDUCE of
// that channel alone (through the 1-channel kernel), and scipy's REDUCE
// (tests/oracles/reduce_oracle.py) per channel, at odd sizes, 1xN and Nx1.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/pyramid_reduce/pyramid_reduce.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image channel_of(const Image& img, int c) {
  const PixelFormat f = img.fmt();
  Image out(PixelFormat{f.type, 1}, img.rect());
  const size_t sb = sample_bytes(f.type);
  for (int64_t y = 0; y < img.rect().h; ++y)
    for (int64_t x = 0; x < img.rect().w; ++x)
      std::memcpy(out.row_bytes(y) + x * sb, img.row_bytes(y) + (x * f.channels + c) * sb, sb);
  return out;
}

// "" or the first difference: (x, y), channel, the count.
std::string per_channel_diff(const Image& all, const Image& src) {
  for (int c = 0; c < all.fmt().channels; ++c) {
    const std::string d = test::diff_images(channel_of(all, c).view(), reduce_image(channel_of(src, c)).view());
    if (!d.empty()) return "channel " + std::to_string(c) + ": " + d;
  }
  return "";
}

TEST(ReduceChannels, EachChannelAsAlone) {
  const PixelFormat fmts[] = {{SampleType::kU8, 5},  {SampleType::kU8, 40}, {SampleType::kU8, 64},
                              {SampleType::kU16, 8}, {SampleType::kU16, 7}, {SampleType::kF32, 6},
                              {SampleType::kF32, 2}, {SampleType::kU8, 2},  {SampleType::kU16, 4}};
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {1, 37}, {41, 1}, {2, 3}, {67, 33}, {255, 17}, {258, 9}};
  for (const PixelFormat& f : fmts)
    for (auto [w, h] : sizes) {
      Image src = test::random_image(f, w, h, static_cast<uint64_t>(w * 131 + h));
      // Saturated rows: the largest sums.
      if (f.type != SampleType::kF32)
        for (int64_t y = 0; y < h; y += 3) std::memset(src.row_bytes(y), 0xff, w * f.bytes_per_pixel());
      const Image out = reduce_image(src);
      ASSERT_EQ(out.fmt(), f);
      ASSERT_EQ(out.rect(), Rect(0, 0, reduced_size(w), reduced_size(h)));
      EXPECT_EQ(per_channel_diff(out, src), "") << f.str() << " " << w << "x" << h;
    }
}

TEST(ReduceChannels, ScipyPerChannel) {
  if (!test::python_has("scipy")) GTEST_SKIP() << "scipy missing";
  test::TempDir tmp;
  for (const PixelFormat f : {PixelFormat{SampleType::kU8, 40}, PixelFormat{SampleType::kU16, 9}}) {
    const Image src = test::random_image(f, 129, 67, 5);
    test::save_npy(tmp.file("in.npy"), src.view());
    const auto r = test::run_python(test::oracle("reduce_oracle.py"), {tmp.file("in.npy"), tmp.file("out.npy"), "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::diff_images(reduce_image(reduce_image(src)).view(), test::load_npy(tmp.file("out.npy")).view()), "")
        << f.str();
  }
}

}  // namespace
}  // namespace tw
