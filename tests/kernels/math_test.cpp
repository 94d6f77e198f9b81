// tilewave math subtract|min|max|mask (kernels/math): every sample type and
// channel count against plain loops, any tiling, the extremes (saturation,
// NaN, -0), and the errors naming both inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/kernels/math_operands.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

const SampleType kTypes[] = {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32, SampleType::kF32};

template <class T>
T reference_sample(const std::string& op, T a, T b) {
  if (op == "subtract") {
    if constexpr (std::is_same_v<T, float>) {
      return a - b;
    } else {
      // In int64, then clamped to the type's range (u8, u16: at 0).
      const int64_t d = static_cast<int64_t>(a) - static_cast<int64_t>(b);
      return static_cast<T>(
          std::min<int64_t>(std::numeric_limits<T>::max(), std::max<int64_t>(std::numeric_limits<T>::lowest(), d)));
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    // numpy.minimum / maximum: a NaN operand is the result (A's first).
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  if (op == "min") return a <= b ? a : b;
  return a >= b ? a : b;
}

template <class T>
Image reference_math_t(const std::string& op, const Image& a, const Image& b) {
  Image out(a.fmt(), a.rect());
  const int64_t n = a.rect().w * a.fmt().channels;
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t i = 0; i < n; ++i) out.row<T>(y)[i] = reference_sample(op, a.row<T>(y)[i], b.row<T>(y)[i]);
  return out;
}

Image reference_math(const std::string& op, const Image& a, const Image& b) {
  switch (a.fmt().type) {
    case SampleType::kU8:
      return reference_math_t<uint8_t>(op, a, b);
    case SampleType::kU16:
      return reference_math_t<uint16_t>(op, a, b);
    case SampleType::kI32:
      return reference_math_t<int32_t>(op, a, b);
    case SampleType::kU32:
      return reference_math_t<uint32_t>(op, a, b);
    case SampleType::kF32:
      break;
  }
  return reference_math_t<float>(op, a, b);
}

bool mask_set(const Image& m, int64_t x, int64_t y, int c) {
  const uint8_t* p = m.ptr_bytes(x, y) + c * sample_bytes(m.fmt().type);
  switch (m.fmt().type) {
    case SampleType::kU8:
      return *p != 0;
    case SampleType::kU16:
      return *reinterpret_cast<const uint16_t*>(p) != 0;
    case SampleType::kI32:
      return *reinterpret_cast<const int32_t*>(p) != 0;
    case SampleType::kU32:
      return *reinterpret_cast<const uint32_t*>(p) != 0;
    case SampleType::kF32:
      break;
  }
  const float v = *reinterpret_cast<const float*>(p);
  return std::isnan(v) || v != 0.f;
}

Image reference_mask(const Image& a, const Image& m) {
  Image out(a.fmt(), a.rect());
  const size_t sb = sample_bytes(a.fmt().type);
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x)
      for (int c = 0; c < a.fmt().channels; ++c) {
        uint8_t* o = out.ptr_bytes(x, y) + c * sb;
        if (mask_set(m, x, y, m.fmt().channels == 1 ? 0 : c))
          std::memcpy(o, a.ptr_bytes(x, y) + c * sb, sb);
        else
          std::memset(o, 0, sb);  // 0 (and +0.0f)
      }
  return out;
}

test::OpRun run(const std::string& op, const Image& a, const Image& b, int64_t tile = 0) {
  return test::run_registered(op, {test::named_source(a, "A.tif"), test::named_source(b, "B.tif")}, {}, tile);
}

TEST(Math, Reference) {
  uint64_t seed = 100;
  for (const char* op : {"subtract", "min", "max"})
    for (SampleType t : kTypes)
      for (int c = 1; c <= 4; ++c) {
        const Image a = test::math_operand(PixelFormat{t, c}, 67, 45, seed++);
        const Image b = test::math_operand(PixelFormat{t, c}, 67, 45, seed++, &a);
        const auto r = run(op, a, b);
        EXPECT_EQ(test::bits_diff(r.image.view(), reference_math(op, a, b).view()), "")
            << op << " " << sample_name(t) << " x" << c;
        EXPECT_EQ(r.values["op_device"], "cpu");
      }
}

TEST(Math, MaskReference) {
  uint64_t seed = 200;
  for (SampleType t : kTypes)
    for (int c = 1; c <= 4; ++c)
      for (SampleType mt : kTypes)
        for (int mc : {1, c}) {
          const Image a = test::math_operand(PixelFormat{t, c}, 67, 45, seed++);
          const Image m = test::math_operand(PixelFormat{mt, mc}, 67, 45, seed++);
          EXPECT_EQ(test::bits_diff(run("mask", a, m).image.view(), reference_mask(a, m).view()), "")
              << sample_name(t) << " x" << c << " masked by " << sample_name(mt) << " x" << mc;
        }
}

TEST(Math, TileInvariance) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{67, 45}, {300, 257}})
    for (SampleType t : kTypes) {
      const Image a = test::math_operand(PixelFormat{t, 3}, w, h, 300 + w),
                  b = test::math_operand(PixelFormat{t, 3}, w, h, 301 + w, &a);
      const Image m = test::math_operand(PixelFormat{SampleType::kU8, 1}, w, h, 302 + w);
      for (const char* op : {"subtract", "min", "max", "mask"}) {
        const Image& second = std::string(op) == "mask" ? m : b;
        const Image whole = run(op, a, second).image;
        for (int64_t tile : {64, 67, 256})
          EXPECT_EQ(test::bits_diff(run(op, a, second, tile).image.view(), whole.view()), "")
              << op << " " << w << "x" << h << " " << sample_name(t) << " tile " << tile;
      }
    }
}

TEST(Math, WorstCases) {
  // Saturation at both ends of every integer type; NaN, inf and -0 in f32.
  Image a8(kGray8, Rect(0, 0, 4, 1)), b8(kGray8, Rect(0, 0, 4, 1));
  const uint8_t va8[] = {0, 255, 10, 255}, vb8[] = {255, 0, 10, 254};
  std::memcpy(a8.row_bytes(0), va8, 4), std::memcpy(b8.row_bytes(0), vb8, 4);
  const Image d8 = run("subtract", a8, b8).image;
  EXPECT_EQ(d8.row<uint8_t>(0)[0], 0);
  EXPECT_EQ(d8.row<uint8_t>(0)[1], 255);
  EXPECT_EQ(d8.row<uint8_t>(0)[2], 0);
  EXPECT_EQ(d8.row<uint8_t>(0)[3], 1);

  const PixelFormat i32{SampleType::kI32, 1};
  Image ai(i32, Rect(0, 0, 3, 1)), bi(i32, Rect(0, 0, 3, 1));
  const int32_t vai[] = {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), -5};
  const int32_t vbi[] = {1, -1, 7};
  std::memcpy(ai.row_bytes(0), vai, sizeof vai), std::memcpy(bi.row_bytes(0), vbi, sizeof vbi);
  const Image di = run("subtract", ai, bi).image;
  EXPECT_EQ(di.row<int32_t>(0)[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(di.row<int32_t>(0)[1], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(di.row<int32_t>(0)[2], -12);

  const PixelFormat f32{SampleType::kF32, 1};
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Image af(f32, Rect(0, 0, 5, 1)), bf(f32, Rect(0, 0, 5, 1));
  const float vaf[] = {nan, 1.f, inf, 0.f, -0.f}, vbf[] = {1.f, nan, inf, -0.f, 0.f};
  std::memcpy(af.row_bytes(0), vaf, sizeof vaf), std::memcpy(bf.row_bytes(0), vbf, sizeof vbf);
  const Image df = run("subtract", af, bf).image, lo = run("min", af, bf).image, hi = run("max", af, bf).image;
  EXPECT_TRUE(std::isnan(df.row<float>(0)[0]) && std::isnan(df.row<float>(0)[1]));
  EXPECT_TRUE(std::isnan(df.row<float>(0)[2])) << "inf - inf";
  for (const Image* m : {&lo, &hi}) {
    EXPECT_TRUE(std::isnan(m->row<float>(0)[0]) && std::isnan(m->row<float>(0)[1]));
    EXPECT_EQ(m->row<float>(0)[2], inf);
    EXPECT_FALSE(std::signbit(m->row<float>(0)[3])) << "a tie gives A's 0";
    EXPECT_TRUE(std::signbit(m->row<float>(0)[4])) << "a tie gives A's -0";
  }
  // A mask of NaN counts, a mask of -0 does not.
  const Image masked = run("mask", bf, af).image;
  EXPECT_EQ(masked.row<float>(0)[0], 1.f);
  EXPECT_EQ(masked.row<float>(0)[4], 0.f);
  EXPECT_FALSE(std::signbit(masked.row<float>(0)[4]));
  // 1 x N and N x 1.
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 300}, {300, 1}}) {
    const Image a = test::math_operand(kRgb8, w, h, 9), b = test::math_operand(kRgb8, w, h, 10);
    EXPECT_EQ(test::bits_diff(run("subtract", a, b, 64).image.view(), reference_math("subtract", a, b).view()), "");
  }
}

TEST(Math, BadInput) {
  const PixelFormat f3{SampleType::kF32, 3};
  // Pixel types: every op but mask's B needs one.
  EXPECT_EQ(test::check_error("subtract", {{kRgb8, "A.tif"}, {f3, "B.tif"}}),
            "subtract: A.tif is u8 x3 (RGB) but B.tif is f32 x3 (RGB); subtract needs one pixel type");
  EXPECT_EQ(test::check_error("min", {{kRgb8, "A.tif"}, {kGray8, "B.tif"}}),
            "min: A.tif is u8 x3 (RGB) but B.tif is u8 x1 (gray); min needs one pixel type");
  EXPECT_EQ(test::check_error("mask", {{kRgb8, "A.tif"}, {PixelFormat{SampleType::kU16, 1}, "B.tif"}}), "");
  EXPECT_EQ(test::check_error("mask", {{kRgb8, "A.tif"}, {f3, "B.tif"}}), "");
  EXPECT_EQ(test::check_error("mask", {{kRgb8, "A.tif"}, {PixelFormat{SampleType::kU8, 4}, "B.tif"}}),
            "mask: B.tif is u8 x4 (RGBA) but A.tif is u8 x3 (RGB); the mask needs 1 channel or 3");
  EXPECT_EQ(test::check_error("max", {{kRgb8, "A.tif"}}), "max takes 2 image(s), not 1");
  // Sizes: found when the op runs (a pipeline's types are known before its sizes).
  const Image a = test::math_operand(kGray8, 67, 45, 1), b = test::math_operand(kGray8, 67, 44, 2);
  for (const char* op : {"subtract", "min", "max", "mask"}) {
    try {
      run(op, a, b);
      ADD_FAILURE() << op << " took images of two sizes";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string(op) + ": A.tif is 67x45 but B.tif is 67x44; both images must have one size");
    }
  }
}

}  // namespace
}  // namespace tw
