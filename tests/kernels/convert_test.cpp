// filter convert (kernels/convert): every input type, target and channel
// count against the documented rule written out independently (std::round
// and std::clamp in double), the rounding boundaries by hand, any tiling,
// the defaults, and the errors that refuse a silent conversion.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "tests/kernels/registered_op.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using Range = std::optional<std::pair<double, double>>;

double sample_at(const Image& img, int64_t x, int64_t y, int c) {
  const uint8_t* p = img.ptr_bytes(x, y) + c * sample_bytes(img.fmt().type);
  switch (img.fmt().type) {
    case SampleType::kU8:
      return *p;
    case SampleType::kU16:
      return *reinterpret_cast<const uint16_t*>(p);
    case SampleType::kI32:
      return *reinterpret_cast<const int32_t*>(p);
    case SampleType::kU32:
      return *reinterpret_cast<const uint32_t*>(p);
    case SampleType::kF32:
      break;
  }
  return *reinterpret_cast<const float*>(p);
}

// The rule of docs/ops/filters.md: to u8/u16, clamp(round((v - LO) * MAX /
// (HI - LO)), 0, MAX), half away from zero, NaN -> 0; to f32, (v - LO) /
// (HI - LO) or v.
Image reference_convert(const Image& img, SampleType target, Range range) {
  Image out(PixelFormat{target, img.fmt().channels}, img.rect());
  const double max = target == SampleType::kU8 ? 255 : 65535;
  for (int64_t y = 0; y < img.rect().h; ++y)
    for (int64_t x = 0; x < img.rect().w; ++x)
      for (int c = 0; c < img.fmt().channels; ++c) {
        const double v = sample_at(img, x, y, c);
        if (target == SampleType::kF32) {
          out.ptr<float>(x, y)[c] = static_cast<float>(range ? (v - range->first) / (range->second - range->first) : v);
          continue;
        }
        const double s = (v - range->first) * max / (range->second - range->first);
        const double r = std::isnan(s) ? 0 : std::clamp(std::round(s), 0.0, max);
        if (target == SampleType::kU8)
          out.ptr<uint8_t>(x, y)[c] = static_cast<uint8_t>(r);
        else
          out.ptr<uint16_t>(x, y)[c] = static_cast<uint16_t>(r);
      }
  return out;
}

test::Params params(SampleType target, Range range) {
  test::Params p = {{"type", sample_name(target)}};
  if (range) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", range->first);
    p["from"] = b;
    std::snprintf(b, sizeof b, "%.17g", range->second);
    p["to"] = b;
  }
  return p;
}

Image convert(const Image& img, SampleType target, Range range, int64_t tile = 0) {
  return test::run_registered("convert", {test::named_source(img, "in")}, params(target, range), tile).image;
}

// Ranges that fit each input type, one of them inverted (HI < LO).
std::vector<std::pair<double, double>> ranges_for(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return {{10, 200}, {250, -5}, {0, 255}};
    case SampleType::kU16:
      return {{1000, 60000}, {0, 65535}, {40000.5, 123.25}};
    case SampleType::kI32:
      return {{-100000, 2500000}, {-2147483648.0, 2147483647.0}};
    case SampleType::kU32:
      return {{0, 4294967295.0}, {17, 90000}};
    case SampleType::kF32:
      break;
  }
  // {0, 765}: halves (v = 3 k + 1.5) exact in float, which a reciprocal
  // instead of the division would round the other way.
  return {{0, 1}, {-0.3, 2.7}, {1e-3, -4.5}, {0, 255}, {0, 765}};
}

TEST(Convert, Reference) {
  uint64_t seed = 10;
  for (SampleType in : {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32, SampleType::kF32})
    for (int c = 1; c <= 4; ++c)
      for (const auto& range : ranges_for(in)) {
        const Image img = test::random_samples(PixelFormat{in, c}, 67, 45, seed++, range.first, range.second);
        for (SampleType target : {SampleType::kU8, SampleType::kU16, SampleType::kF32})
          EXPECT_EQ(test::bits_diff(convert(img, target, range).view(), reference_convert(img, target, range).view()),
                    "")
              << sample_name(in) << " x" << c << " -> " << sample_name(target) << ", " << range.first << ".."
              << range.second;
        // f32 without a range: the value itself.
        EXPECT_EQ(test::bits_diff(convert(img, SampleType::kF32, {}).view(),
                                  reference_convert(img, SampleType::kF32, {}).view()),
                  "")
            << sample_name(in) << " x" << c << " -> f32";
      }
}

TEST(Convert, Defaults) {
  // u8 -> u16 without a range: 0..255 onto 0..65535, v * 257 exactly;
  // u8 -> u8 and u16 -> u16 keep the values.
  const Image u8 = test::random_samples(kRgb8, 67, 45, 3), u16 = test::random_samples(kGray16, 67, 45, 4);
  const Image wide = convert(u8, SampleType::kU16, {});
  for (int64_t y = 0; y < 45; ++y)
    for (int64_t i = 0; i < 67 * 3; ++i) ASSERT_EQ(wide.row<uint16_t>(y)[i], u8.row<uint8_t>(y)[i] * 257);
  EXPECT_EQ(test::bits_diff(convert(u8, SampleType::kU8, {}).view(), u8.view()), "");
  EXPECT_EQ(test::bits_diff(convert(u16, SampleType::kU16, {}).view(), u16.view()), "");
}

TEST(Convert, RoundingBoundaries) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    float v;
    int want;
  };
  // --from 0 --to 255: the scaled value is v itself (v * 255 / 255 is exact).
  const std::vector<Case> to_u8 = {{0.5f, 1},
                                   {1.5f, 2},
                                   {2.5f, 3},
                                   {std::nextafter(0.5f, 0.f), 0},
                                   {std::nextafter(0.5f, 1.f), 1},
                                   {127.5f, 128},
                                   {std::nextafter(127.5f, 0.f), 127},
                                   {254.5f, 255},
                                   {std::nextafter(254.5f, 0.f), 254},
                                   {255.4f, 255},
                                   {1e30f, 255},
                                   {-0.4f, 0},
                                   {-0.5f, 0},
                                   {-0.6f, 0},
                                   {-0.f, 0},
                                   {std::numeric_limits<float>::denorm_min(), 0},
                                   {nan, 0},
                                   {-nan, 0},
                                   {inf, 255},
                                   {-inf, 0}};
  Image img(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, static_cast<int64_t>(to_u8.size()), 1));
  for (size_t i = 0; i < to_u8.size(); ++i) img.row<float>(0)[i] = to_u8[i].v;
  const Image u8 = convert(img, SampleType::kU8, std::pair{0.0, 255.0});
  for (size_t i = 0; i < to_u8.size(); ++i) EXPECT_EQ(u8.row<uint8_t>(0)[i], to_u8[i].want) << to_u8[i].v;
  // Inverted (HI < LO): (v - 255) * 255 / -255 = 255 - v, exactly for these.
  const std::vector<Case> inverted = {{0.f, 255}, {255.f, 0},  {0.5f, 255}, {1.5f, 254},
                                      {inf, 0},   {-inf, 255}, {nan, 0},    {300.f, 0}};
  Image inv(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, static_cast<int64_t>(inverted.size()), 1));
  for (size_t i = 0; i < inverted.size(); ++i) inv.row<float>(0)[i] = inverted[i].v;
  const Image inv8 = convert(inv, SampleType::kU8, std::pair{255.0, 0.0});
  for (size_t i = 0; i < inverted.size(); ++i) EXPECT_EQ(inv8.row<uint8_t>(0)[i], inverted[i].want) << inverted[i].v;
  // u16: the halves at the top and in the middle.
  Image h(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, 4, 1));
  const float hv[] = {65534.5f, 32767.5f, std::nextafter(32767.5f, 0.f), 70000.f};
  std::memcpy(h.row_bytes(0), hv, sizeof hv);
  const Image u16 = convert(h, SampleType::kU16, std::pair{0.0, 65535.0});
  EXPECT_EQ(u16.row<uint16_t>(0)[0], 65535);
  EXPECT_EQ(u16.row<uint16_t>(0)[1], 32768);
  EXPECT_EQ(u16.row<uint16_t>(0)[2], 32767);
  EXPECT_EQ(u16.row<uint16_t>(0)[3], 65535);
  // f32 -> f32: NaN stays NaN, the range is applied in double then rounded once.
  const Image f = convert(img, SampleType::kF32, std::pair{0.0, 2.0});
  EXPECT_TRUE(std::isnan(f.row<float>(0)[16]));
  EXPECT_EQ(f.row<float>(0)[0], 0.25f);
  EXPECT_EQ(f.row<float>(0)[18], inf);
}

TEST(Convert, TileInvariance) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{67, 45}, {300, 257}}) {
    const Image f = test::random_samples(PixelFormat{SampleType::kF32, 3}, w, h, 5, -0.5, 1.5);
    const Image u = test::random_samples(kGray8, w, h, 6);
    const Image f_whole = convert(f, SampleType::kU8, std::pair{-0.5, 1.5});
    const Image u_whole = convert(u, SampleType::kU16, {});
    for (int64_t tile : {64, 67, 256}) {
      EXPECT_EQ(test::bits_diff(convert(f, SampleType::kU8, std::pair{-0.5, 1.5}, tile).view(), f_whole.view()), "")
          << w << "x" << h << " tile " << tile;
      EXPECT_EQ(test::bits_diff(convert(u, SampleType::kU16, {}, tile).view(), u_whole.view()), "")
          << w << "x" << h << " tile " << tile;
    }
  }
}

TEST(Convert, BadInput) {
  struct Case {
    PixelFormat in;
    test::Params p;
    bool param;
    const char* says;  // "" for no error
  };
  const PixelFormat f3{SampleType::kF32, 3}, i1{SampleType::kI32, 1};
  for (const Case& c : std::vector<Case>{
           {f3, {{"type", "u8"}}, true, "convert --type u8 needs --from LO --to HI for x.tif, which is f32 x3 (RGB)"},
           {i1, {{"type", "u16"}}, true, "convert --type u16 needs --from LO --to HI for x.tif, which is i32 x1"},
           {kGray16, {{"type", "u8"}}, true, "convert --type u8 needs --from LO --to HI for x.tif, which is u16 x1"},
           {f3, {{"type", "u8"}, {"from", "1"}, {"to", "1"}}, true, "convert: --from and --to must differ"},
           {f3, {{"type", "u8"}, {"from", "1"}}, true, "convert needs both --from LO and --to HI, or neither"},
           {f3, {{"type", "f32"}, {"to", "1"}}, true, "convert needs both --from LO and --to HI, or neither"},
           {f3, {{"type", "i32"}}, true, "--type i32: expected u8, u16 or f32"},
           {f3, {{"type", "u8"}, {"from", "nan"}, {"to", "1"}}, true, "is not a number"},
           {f3, {}, true, "convert needs --type T"},
           {f3, {{"type", "f32"}}, false, ""},
           {i1, {{"type", "f32"}}, false, ""},
           {kGray16, {{"type", "u16"}}, false, ""},
           {kRgb8, {{"type", "u16"}}, false, ""},
           {f3, {{"type", "u16"}, {"from", "-1e300"}, {"to", "1e300"}}, false, ""},
       }) {
    bool param = false;
    const std::string e = test::check_error("convert", {{c.in, "x.tif"}}, c.p, &param);
    if (*c.says == 0) {
      EXPECT_EQ(e, "") << c.in.str();
      continue;
    }
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_EQ(param, c.param) << e;
  }
}

}  // namespace
}  // namespace tw
