// filter channel (kernels/channel): one channel of every sample type and
// channel count, against a plain loop, in any tiling; the bad inputs.
#include <gtest/gtest.h>

#include "tests/kernels/registered_op.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

const SampleType kTypes[] = {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32, SampleType::kF32};

// Channel `index` of img, copied sample by sample.
Image reference_channel(const Image& img, int index) {
  const size_t sb = sample_bytes(img.fmt().type);
  Image out(PixelFormat{img.fmt().type, 1}, img.rect());
  for (int64_t y = 0; y < img.rect().h; ++y)
    for (int64_t x = 0; x < img.rect().w; ++x) std::memcpy(out.ptr_bytes(x, y), img.ptr_bytes(x, y) + index * sb, sb);
  return out;
}

TEST(Channel, Reference) {
  uint64_t seed = 1;
  for (SampleType t : kTypes)
    for (int c = 2; c <= 4; ++c) {
      const Image img = test::random_samples(PixelFormat{t, c}, 67, 45, seed++);
      for (int index = 0; index < c; ++index) {
        const auto r =
            test::run_registered("channel", {test::named_source(img, "in")}, {{"index", std::to_string(index)}});
        EXPECT_EQ(r.image.fmt(), (PixelFormat{t, 1}));
        EXPECT_EQ(test::bits_diff(r.image.view(), reference_channel(img, index).view()), "")
            << sample_name(t) << " x" << c << " index " << index;
        EXPECT_EQ(r.values["op_device"], "cpu");
      }
    }
}

TEST(Channel, TileInvariance) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{67, 45}, {300, 257}})
    for (SampleType t : kTypes) {
      const Image img = test::random_samples(PixelFormat{t, 3}, w, h, 40 + w);
      const auto src = test::named_source(img, "in");
      const Image want = reference_channel(img, 2);
      for (int64_t tile : {0, 64, 67, 256})
        EXPECT_EQ(
            test::bits_diff(test::run_registered("channel", {src}, {{"index", "2"}}, tile).image.view(), want.view()),
            "")
            << w << "x" << h << " " << sample_name(t) << " tile " << tile;
    }
}

TEST(Channel, WorstCases) {
  // 1 x N, N x 1 and 1 x 1 images; NaNs keep their bits (a copy, not a float
  // operation); the hematoxylin of filter hed.
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 300}, {300, 1}, {1, 1}}) {
    const Image img = test::random_samples(PixelFormat{SampleType::kF32, 4}, w, h, 7);
    EXPECT_EQ(test::bits_diff(
                  test::run_registered("channel", {test::named_source(img, "in")}, {{"index", "3"}}, 64).image.view(),
                  reference_channel(img, 3).view()),
              "")
        << w << "x" << h;
  }
  Image nan(PixelFormat{SampleType::kF32, 3}, Rect(0, 0, 2, 1));
  const uint32_t payloads[] = {0x7fc00001u, 0xffc12345u, 0x7f800000u, 0x80000000u, 0x00000001u, 0x7fa00000u};
  std::memcpy(nan.row_bytes(0), payloads, sizeof payloads);
  for (int index = 0; index < 3; ++index) {
    const auto r = test::run_registered("channel", {test::named_source(nan, "in")}, {{"index", std::to_string(index)}});
    for (int x = 0; x < 2; ++x) {
      uint32_t bits;
      std::memcpy(&bits, r.image.ptr_bytes(x, 0), 4);
      EXPECT_EQ(bits, payloads[3 * x + index]) << x << " " << index;
    }
  }
}

TEST(Channel, BadInput) {
  bool param = false;
  // Each message names the input and its pixel type.
  EXPECT_EQ(test::check_error("channel", {{PixelFormat{SampleType::kF32, 3}, "hed.tif"}}, {{"index", "3"}}, &param),
            "channel: --index 3 but hed.tif is f32 x3 (RGB)");
  EXPECT_FALSE(param);
  EXPECT_EQ(test::check_error("channel", {{kGray8, "gray.tif"}}, {{"index", "0"}}, &param),
            "channel: gray.tif is u8 x1 (gray); channel needs 2 or more channels");
  EXPECT_FALSE(param);
  EXPECT_EQ(test::check_error("channel", {{kRgb8, "rgb.tif"}}, {}, &param), "channel needs --index N");
  EXPECT_TRUE(param);
  // Up to 64 channels: --index 0..63, checked against the input's count.
  EXPECT_EQ(test::check_error("channel", {{kRgb8, "rgb.tif"}}, {{"index", "4"}}, &param),
            "channel: --index 4 but rgb.tif is u8 x3 (RGB)");
  EXPECT_FALSE(param);
  EXPECT_NE(test::check_error("channel", {{kRgb8, "rgb.tif"}}, {{"index", "64"}}, &param).find("out of range"),
            std::string::npos);
  EXPECT_TRUE(param);
  EXPECT_NE(test::check_error("channel", {{kRgb8, "rgb.tif"}}, {{"index", "-1"}}, &param).find("out of range"),
            std::string::npos);
  EXPECT_EQ(test::check_error("channel", {{PixelFormat{SampleType::kU16, 4}, "rgba.tif"}}, {{"index", "3"}}), "");
}

}  // namespace
}  // namespace tw
