#include "io/synthetic/synthetic_source.hpp"

#include <gtest/gtest.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/border.hpp"
#include "engine/error.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::diff_images;

SyntheticSource make(const std::string& spec) {
  return SyntheticSource(parse_synthetic_spec(spec));
}

// Reads `region` as tiles of a global grid of tile x tile (clipped to the
// region), in parallel, as the engine does.
Image read_tiled(const TileSource& src, const Rect& region, int64_t tile) {
  Image out(src.info().fmt, region);
  const int64_t tx0 = region.x / tile, tx1 = (region.x1() - 1) / tile;
  const int64_t ty0 = region.y / tile, ty1 = (region.y1() - 1) / tile;
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(ty0, ty1 + 1, tx0, tx1 + 1),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      for (int64_t ty = r.rows().begin(); ty != r.rows().end(); ++ty)
                        for (int64_t tx = r.cols().begin(); tx != r.cols().end(); ++tx) {
                          const Rect t = Rect(tx * tile, ty * tile, tile, tile).intersect(region);
                          src.read(0, out.view().sub(t));
                        }
                    });
  return out;
}

// The pixel (x, y) of an RGB8 image.
const uint8_t* px(const Image& img, int64_t x, int64_t y) {
  return img.ptr<uint8_t>(x, y);
}

// A w x h rect on a 1500 px lattice from (x0, y0) whose centre is tissue, so
// comparisons are not of blank glass whatever the slide's layout.
Rect rect_on_tissue(const TileSource& src, int64_t x0, int64_t y0, int64_t w, int64_t h) {
  const LevelInfo& l = src.level(0);
  for (int64_t y = y0; y + h <= l.height; y += 1500)
    for (int64_t x = x0; x + w <= l.width; x += 1500)
      if (src.read(0, Rect(x + w / 2, y + h / 2, 1, 1)).data()[1] < 200) return {x, y, w, h};
  ADD_FAILURE() << "no tissue on " << src.info().path;
  return {x0, y0, w, h};
}

int64_t count_tissue(const Image& img) {
  int64_t n = 0;
  for (int64_t y = img.rect().y; y < img.rect().y1(); ++y)
    for (int64_t x = img.rect().x; x < img.rect().x1(); ++x) n += img.ptr<uint8_t>(x, y)[1] < 200;
  return n;
}

bool same_bytes(const Image& a, const Image& b) {
  return diff_images(a.view(), b.view()).empty();
}

// ------------------------------------------------------------------ spec and info

TEST(SyntheticSource, ReferenceSpecParsing) {
  const SyntheticSpec d = parse_synthetic_spec("");
  EXPECT_EQ(d.width, 16384);
  EXPECT_EQ(d.height, 12288);
  EXPECT_EQ(d.seed, 1u);
  EXPECT_EQ(d.channels, 3);
  EXPECT_EQ(d.bits, 8);
  EXPECT_DOUBLE_EQ(d.mpp, 0.25);

  const SyntheticSpec s = parse_synthetic_spec("300x200,seed=18446744073709551615,gray,16bit,mpp=0.5");
  EXPECT_EQ(s.width, 300);
  EXPECT_EQ(s.height, 200);
  EXPECT_EQ(s.seed, 18446744073709551615ull);
  EXPECT_EQ(s.channels, 1);
  EXPECT_EQ(s.bits, 16);
  EXPECT_DOUBLE_EQ(s.mpp, 0.5);

  // Spaces around parts, options without a size, the largest sizes allowed.
  EXPECT_EQ(parse_synthetic_spec(" 640x480 , gray ").channels, 1);
  EXPECT_EQ(parse_synthetic_spec("seed=9").seed, 9u);
  EXPECT_EQ(parse_synthetic_spec("seed=9").width, 16384);
  EXPECT_EQ(parse_synthetic_spec("2147483647x512").width, 2147483647);
  EXPECT_EQ(parse_synthetic_spec("1048576x1048576").height, 1048576);  // 2^40 pixels exactly
}

TEST(SyntheticSource, ReferenceInfo) {
  const SyntheticSource src = make("");
  const SourceInfo& info = src.info();
  EXPECT_EQ(info.path, "synthetic:16384x12288");
  EXPECT_EQ(info.format, "synthetic");
  EXPECT_EQ(info.vendor, "tilewave");
  EXPECT_EQ(info.fmt, kRgb8);
  ASSERT_EQ(src.level_count(), 1);
  EXPECT_EQ(src.level(0).width, 16384);
  EXPECT_EQ(src.level(0).height, 12288);
  EXPECT_EQ(src.level(0).tile_w, 0);
  EXPECT_EQ(src.level(0).tile_h, 0);
  EXPECT_DOUBLE_EQ(src.level(0).downsample, 1.0);
  EXPECT_EQ(src.level(0).compression, "none (generated)");
  EXPECT_DOUBLE_EQ(info.mpp_x, 0.25);
  EXPECT_DOUBLE_EQ(info.mpp_y, 0.25);
  ASSERT_EQ(info.associated.size(), 2u);
  EXPECT_EQ(info.associated[0].name, "label");
  EXPECT_EQ(info.associated[0].width, 600);
  EXPECT_EQ(info.associated[0].height, 600);
  EXPECT_EQ(info.associated[1].name, "macro");
  EXPECT_EQ(info.associated[1].width, 1024);
  EXPECT_EQ(info.associated[1].height, 768);

  // Non-default options show in the path, which parses back to the spec.
  const SyntheticSource g = make("300x200,seed=7,gray,16bit,mpp=0.125");
  EXPECT_EQ(g.info().path, "synthetic:300x200,seed=7,gray,16bit,mpp=0.125");
  EXPECT_EQ(g.info().fmt, kGray16);
  EXPECT_DOUBLE_EQ(g.info().mpp_x, 0.125);
  const SyntheticSpec back = parse_synthetic_spec(g.info().path.substr(std::string("synthetic:").size()));
  EXPECT_EQ(back.seed, 7u);
  EXPECT_EQ(back.channels, 1);
  EXPECT_EQ(back.bits, 16);
  EXPECT_EQ(make("300x200,gray").info().fmt, kGray8);
  EXPECT_EQ(make("300x200,16bit").info().fmt, (PixelFormat{SampleType::kU16, 3}));
}

TEST(SyntheticSource, BadInput) {
  const std::pair<const char*, const char*> cases[] = {
      {"abc", "bad size 'abc'"},
      {"0x5", "zero width"},
      {"5x0", "zero height"},
      {"-5x5", "negative width"},
      {"5x-5", "negative height"},
      {"5x", "bad height ''"},
      {"x5", "bad width ''"},
      {"10x10x3", "bad height '10x3'"},
      {"1.5x3", "bad width '1.5'"},
      {"3000000000x2", "width 3000000000 exceeds 2147483647"},
      {"2x99999999999999999999", "height 99999999999999999999 exceeds 2147483647"},
      {"2000000x2000000", "exceeds 2^40 pixels"},
      {"10x10,seed=x", "bad seed 'x'"},
      {"10x10,seed=-1", "bad seed '-1'"},
      {"10x10,seed=18446744073709551616", "seed 18446744073709551616 exceeds 2^64-1"},
      {"10x10,mpp=0", "bad mpp '0'"},
      {"10x10,mpp=-1", "bad mpp '-1'"},
      {"10x10,mpp=nan", "bad mpp 'nan'"},
      {"10x10,mpp=0.25um", "bad mpp '0.25um'"},
      {"10x10,mpp=", "bad mpp ''"},
      {"10x10,foo", "unknown option 'foo'"},
      {"10x10,gray=1", "unknown option 'gray=1'"},
      {"10x10,20x20", "unknown option '20x20'"},
      {"10x10,,gray", "empty option"},
      {"10x10,", "empty option"},
  };
  for (const auto& [spec, want] : cases) {
    try {
      parse_synthetic_spec(spec);
      ADD_FAILURE() << "'" << spec << "' was accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(want), std::string::npos) << "spec '" << spec << "': " << msg;
      EXPECT_NE(msg.find(std::string("synthetic:") + spec), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  // A spec built in code is checked too.
  SyntheticSpec s;
  s.channels = 2;
  EXPECT_THROW(SyntheticSource{s}, InputError);
  s = SyntheticSpec{};
  s.bits = 12;
  EXPECT_THROW(SyntheticSource{s}, InputError);
  s = SyntheticSpec{};
  s.width = 0;
  EXPECT_THROW(SyntheticSource{s}, InputError);
  s = SyntheticSpec{};
  s.mpp = 0;
  EXPECT_THROW(SyntheticSource{s}, InputError);
  // Levels other than 0 do not exist.
  EXPECT_THROW(make("64x64").read(1, Rect(0, 0, 4, 4)), InputError);
}

// ------------------------------------------------------------------ pixels

TEST(SyntheticSource, ReferenceDeterminism) {
  const Rect r(3000, 2000, 300, 200);
  const Image a = make("8192x6144").read(0, r);
  const Image b = make("8192x6144").read(0, r);
  EXPECT_EQ(diff_images(a.view(), b.view()), "");
  const Image c = make("8192x6144,seed=2").read(0, r);
  EXPECT_NE(diff_images(a.view(), c.view()), "") << "seed changes nothing";
  // The reported mpp is only metadata.
  const Image d = make("8192x6144,mpp=0.5").read(0, r);
  EXPECT_EQ(diff_images(a.view(), d.view()), "");
}

TEST(SyntheticSource, TileInvariance) {
  const SyntheticSource src = make("100000x80000");
  const Rect region = rect_on_tissue(src, 12345, 6789, 700, 500);
  const Image whole = src.read(0, region);  // several blocks: parallel inside
  for (int64_t tile : {67, 256, 1000}) {
    const Image tiled = read_tiled(src, region, tile);
    EXPECT_EQ(diff_images(whole.view(), tiled.view()), "") << "tiles of " << tile;
  }
  // A region inside the first one equals the same pixels cut out of it.
  const Rect inner(region.x + 101, region.y + 77, 131, 93);
  const Image part = src.read(0, inner);
  Image cut(kRgb8, inner);
  copy_overlap(whole.view(), cut.view());
  EXPECT_EQ(diff_images(part.view(), cut.view()), "");
  // Single rows and columns.
  const Image row = src.read(0, Rect(region.x, region.y + 250, region.w, 1));
  Image row_cut(kRgb8, row.rect());
  copy_overlap(whole.view(), row_cut.view());
  EXPECT_EQ(diff_images(row.view(), row_cut.view()), "");
  const Image col = src.read(0, Rect(region.x + 333, region.y, 1, region.h));
  Image col_cut(kRgb8, col.rect());
  copy_overlap(whole.view(), col_cut.view());
  EXPECT_EQ(diff_images(col.view(), col_cut.view()), "");

  EXPECT_GT(count_tissue(whole), region.area() / 10);
}

TEST(SyntheticSource, TileInvarianceAllFormats) {
  for (const char* spec : {"3000x2000,gray", "3000x2000,16bit", "3000x2000,gray,16bit"}) {
    const SyntheticSource src = make(spec);
    const Rect region(1200, 800, 520, 300);
    const Image whole = src.read(0, region);
    EXPECT_EQ(diff_images(whole.view(), read_tiled(src, region, 67).view()), "") << spec;
  }
}

// Reads past the edge make the outside up by the border rule from pixels
// that themselves match a plain read.
TEST(SyntheticSource, HaloReflect101) {
  const SyntheticSource src = make("1000x700,seed=3");
  const Image full = src.read(0, Rect(0, 0, 1000, 700));
  auto check = [&](const Rect& r, const Border& border) {
    const Image img = src.read(0, r, border);
    int64_t bad = 0;
    std::string first;
    for (int64_t y = r.y; y < r.y1(); ++y)
      for (int64_t x = r.x; x < r.x1(); ++x) {
        const int64_t sx = border_index(x, 1000, border.mode), sy = border_index(y, 700, border.mode);
        if (std::memcmp(img.ptr<uint8_t>(x, y), full.ptr<uint8_t>(sx, sy), 3) != 0 && bad++ == 0)
          first = "(" + std::to_string(x) + ", " + std::to_string(y) + ") from (" + std::to_string(sx) + ", " +
                  std::to_string(sy) + ")";
      }
    EXPECT_EQ(bad, 0) << r.str() << " " << border_mode_name(border.mode) << ": first at " << first;
  };
  const Border r101{BorderMode::kReflect101, 0};
  check(Rect(-16, -16, 128, 96), r101);             // top-left corner with a halo
  check(Rect(1000 - 90, 700 - 50, 106, 66), r101);  // bottom-right
  check(Rect(-40, 300, 1080, 20), r101);            // wider than the image
  check(Rect(-5, -7, 40, 30), Border{BorderMode::kReplicate, 0});
  check(Rect(990, 690, 40, 30), Border{BorderMode::kReflect, 0});
}

TEST(SyntheticSource, ContentLooksLikeHE) {
  const SyntheticSource src = make("4096x4096");
  const Image img = src.read(0, Rect(0, 0, 4096, 4096));
  int64_t glass = 0, purple = 0, pink = 0, strong_edges = 0;
  double glass_sum = 0;
  std::vector<uint8_t> luma(4096 * 4096);
  for (int64_t y = 0; y < 4096; ++y)
    for (int64_t x = 0; x < 4096; ++x) {
      const uint8_t* p = px(img, x, y);
      const int r = p[0], g = p[1], b = p[2];
      luma[y * 4096 + x] = static_cast<uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
      if (std::min({r, g, b}) >= 225 && std::max({r, g, b}) - std::min({r, g, b}) < 16) {
        ++glass;
        glass_sum += (r + g + b) / 3.0;
      } else if (b > r && g < 110 && r < 150) {
        ++purple;  // hematoxylin: nuclei
      } else if (r > 180 && r > g + 40 && b > g + 15) {
        ++pink;  // eosin: stroma and cytoplasm
      }
    }
  // Sobel magnitude on luma: nuclei and tissue edges are real edges.
  for (int64_t y = 1; y < 4095; y += 2)
    for (int64_t x = 1; x < 4095; ++x) {
      auto l = [&](int64_t dx, int64_t dy) { return static_cast<int>(luma[(y + dy) * 4096 + x + dx]); };
      const int gx = l(1, -1) + 2 * l(1, 0) + l(1, 1) - l(-1, -1) - 2 * l(-1, 0) - l(-1, 1);
      const int gy = l(-1, 1) + 2 * l(0, 1) + l(1, 1) - l(-1, -1) - 2 * l(0, -1) - l(1, -1);
      strong_edges += std::abs(gx) + std::abs(gy) > 300;
    }
  const double n = 4096.0 * 4096.0;
  const double glass_frac = glass / n;
  EXPECT_GT(glass_frac, 0.2);
  EXPECT_LT(glass_frac, 0.8);
  EXPECT_GT(glass_sum / glass, 238);
  EXPECT_LT(glass_sum / glass, 252);
  const double tissue = n - glass;
  EXPECT_GT(purple / tissue, 0.01) << "too few nuclei";
  EXPECT_LT(purple / tissue, 0.5) << "too many nuclei";
  EXPECT_GT(pink / tissue, 0.3) << "too little eosin";
  EXPECT_GT(strong_edges, 20000);

  // Background is not flat: scanner noise.
  int64_t levels[256] = {};
  for (int64_t x = 0; x < 200; ++x) ++levels[px(img, x, 5)[1]];
  EXPECT_GE(std::count_if(levels, levels + 256, [](int64_t c) { return c > 0; }), 3);
}

TEST(SyntheticSource, GrayAnd16Bit) {
  const Rect r(1500, 1000, 400, 300);
  const Image rgb = make("3000x2000,seed=5").read(0, r);
  const Image gray = make("3000x2000,seed=5,gray").read(0, r);
  const Image rgb16 = make("3000x2000,seed=5,16bit").read(0, r);
  const Image gray16 = make("3000x2000,seed=5,gray,16bit").read(0, r);
  ASSERT_EQ(gray.fmt(), kGray8);
  ASSERT_EQ(gray16.fmt(), kGray16);
  int64_t bad_luma = 0, bad16 = 0, bad_gray16 = 0, detail = 0, gray_detail = 0;
  for (int64_t y = r.y; y < r.y1(); ++y)
    for (int64_t x = r.x; x < r.x1(); ++x) {
      const uint8_t* p = px(rgb, x, y);
      const int luma = (299 * p[0] + 587 * p[1] + 114 * p[2] + 500) / 1000;  // BT.601, rounded
      bad_luma += *gray.ptr<uint8_t>(x, y) != luma;
      for (int c = 0; c < 3; ++c) {
        const int v = rgb16.ptr<uint16_t>(x, y)[c];
        bad16 += (v + 128) / 257 != p[c] || std::abs(v - p[c] * 257) > 128;
        detail += v != p[c] * 257;
      }
      const int g = *gray16.ptr<uint16_t>(x, y);
      bad_gray16 += (g + 128) / 257 != luma || std::abs(g - luma * 257) > 128;
      gray_detail += g != luma * 257;
    }
  EXPECT_EQ(bad_luma, 0);
  EXPECT_EQ(bad16, 0);
  EXPECT_EQ(bad_gray16, 0);
  EXPECT_GT(detail, r.area() * 3 / 2) << "16-bit data is only 8-bit data scaled";
  EXPECT_GT(gray_detail, r.area() / 2);
}

// ------------------------------------------------------------------ associated images

TEST(SyntheticSource, AssociatedImages) {
  const SyntheticSource src = make("3000x2000,seed=4");
  const Image label = src.read_associated("label");
  EXPECT_EQ(label.fmt(), kRgb8);
  EXPECT_EQ(label.rect(), Rect(0, 0, 600, 600));
  int64_t dark = 0, light = 0;
  for (int64_t y = 0; y < 600; ++y)
    for (int64_t x = 0; x < 600; ++x) {
      dark += px(label, x, y)[0] < 60;
      light += px(label, x, y)[0] > 230;
    }
  EXPECT_GT(dark, 600 * 600 / 20);
  EXPECT_GT(light, 600 * 600 / 2);
  EXPECT_FALSE(same_bytes(label, make("3000x2000,seed=5").read_associated("label")));

  // The macro samples the slide itself: every 3rd pixel here.
  const Image macro = src.read_associated("macro");
  EXPECT_EQ(macro.fmt(), kRgb8);
  EXPECT_EQ(macro.rect(), Rect(0, 0, 1000, 667));
  EXPECT_EQ(src.info().associated[1].width, 1000);
  EXPECT_EQ(src.info().associated[1].height, 667);
  const Image full = src.read(0, Rect(0, 0, 3000, 2000));
  int64_t bad = 0;
  for (int64_t j = 0; j < 667; ++j)
    for (int64_t i = 0; i < 1000; ++i)
      bad += std::memcmp(px(macro, i, j),
                         px(full, std::min<int64_t>(1 + 3 * i, 2999), std::min<int64_t>(1 + 3 * j, 1999)), 3) != 0;
  EXPECT_EQ(bad, 0);
  // A gray or 16-bit slide still has an RGB8 macro.
  EXPECT_EQ(make("3000x2000,gray,16bit").read_associated("macro").fmt(), kRgb8);

  EXPECT_THROW(src.read_associated("thumbnail"), InputError);
}

// With a coarse stride the macro takes its nuclei sample by sample rather than
// cell by cell, and its fields from grid points alone: the same pixels.
TEST(SyntheticSource, MacroOfLargeSlide) {
  const SyntheticSource src = make("60000x45000,seed=2");
  const Image macro = src.read_associated("macro");
  // Stride 64 (59 rounded up to whole 8 px grid cells), from (24, 0).
  ASSERT_EQ(macro.rect(), Rect(0, 0, 938, 704));
  EXPECT_EQ(src.info().associated[1].width, 938);
  int64_t checked = 0, tissue = 0;
  for (int64_t j = 0; j < 704; j += 23)
    for (int64_t i = 0; i < 938; i += 31) {
      const Image p = src.read(0, Rect(24 + 64 * i, 64 * j, 1, 1));
      EXPECT_EQ(std::memcmp(px(macro, i, j), p.data(), 3), 0) << "macro pixel (" << i << ", " << j << ")";
      ++checked;
      tissue += p.data()[1] < 200;
    }
  EXPECT_GT(tissue, checked / 5);
}

// ------------------------------------------------------------------ extremes

TEST(SyntheticSource, WorstCases) {
  // 1x1: a halo of any size repeats the one pixel.
  const SyntheticSource one = make("1x1");
  const Image p = one.read(0, Rect(0, 0, 1, 1));
  const Image halo = one.read(0, Rect(-9, -9, 19, 19));
  for (int64_t y = -9; y < 10; ++y)
    for (int64_t x = -9; x < 10; ++x) ASSERT_EQ(std::memcmp(px(halo, x, y), p.data(), 3), 0);
  EXPECT_EQ(one.read_associated("macro").rect(), Rect(0, 0, 1, 1));

  // 1xN and Nx1, whole and in pieces.
  for (const char* spec : {"1x5000", "5000x1"}) {
    const SyntheticSource src = make(spec);
    const Rect all = src.level(0).bounds();
    const Image whole = src.read(0, all);
    EXPECT_EQ(diff_images(whole.view(), read_tiled(src, all, 67).view()), "") << spec;
  }

  // Small slides still show tissue and glass.
  for (const char* spec : {"300x200", "512x512,seed=3", "64x48"}) {
    const SyntheticSource src = make(spec);
    const Image img = src.read(0, src.level(0).bounds());
    int64_t tissue = 0;
    for (int64_t y = 0; y < img.rect().h; ++y)
      for (int64_t x = 0; x < img.rect().w; ++x) tissue += px(img, x, y)[1] < 215;
    EXPECT_GT(tissue, img.rect().area() / 10) << spec;
    EXPECT_LT(tissue, img.rect().area() * 9 / 10) << spec;
  }

  // The far end of the largest slides: coordinates near 2^31.
  const SyntheticSource wide = make("2147483647x512");
  const Rect far(2147483647 - 300, 200, 300, 100);
  EXPECT_EQ(diff_images(wide.read(0, far).view(), read_tiled(wide, far, 67).view()), "");
  // The most extreme aspect ratios (found by fuzz_specs: the count of tissue
  // pieces went through int past its range, and on x86 came out negative: no
  // pieces, and a tissue scale from the square root of a negative area). Eight
  // pieces of 0.8 * w * h / 8 pixels each.
  for (const char* spec : {"2147483647x1", "1x2147483647"}) {
    const SyntheticSource thin = make(spec);
    std::string scale;
    for (const auto& p : thin.info().properties)
      if (p.first == "synthetic.tissue-scale-px") scale = p.second;
    EXPECT_EQ(scale, std::to_string(std::llround(std::sqrt(0.8 * 2147483647.0 / (8 * 3.141592653589793))))) << spec;
    const Rect end = thin.level(0).width > 1 ? Rect(2147483647 - 300, 0, 300, 1) : Rect(0, 2147483647 - 300, 1, 300);
    EXPECT_EQ(diff_images(thin.read(0, end).view(), read_tiled(thin, end, 67).view()), "") << spec;
  }
  const SyntheticSource huge = make("1048576x1048576");
  const Rect mid(524288 - 150, 524288 - 100, 300, 200);
  const Image m = huge.read(0, mid);
  EXPECT_EQ(diff_images(m.view(), read_tiled(huge, mid, 67).view()), "");
}

}  // namespace
}  // namespace tw
