// N-channel TIFF inputs read by TiffSource: MinIsBlack of 2 to 64 samples
// and RGB with extra samples, 8/16-bit and float32, PlanarConfiguration
// contiguous and separate, tiles and strips, written by tifffile and by
// libtiff; every read equal to the pixels written. What stays refused is
// refused by name.
#include <gtest/gtest.h>

#include <cstring>

#include "io/tiff/tiff_source.hpp"
#include "tests/support/raw_tiff.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct Made {
  std::string tif, npy;
};

// A TIFF made by tifffile (tests/oracles/channels_oracle.py make).
Made make(const test::TempDir& tmp, const std::string& name, const std::string& hwc, const std::string& dtype,
          const std::vector<std::string>& opts) {
  Made m{tmp.file(name + ".tif"), tmp.file(name + ".npy")};
  std::vector<std::string> args{"make", m.tif, m.npy, hwc, dtype};
  args.insert(args.end(), opts.begin(), opts.end());
  const auto r = test::run_python(test::oracle("channels_oracle.py"), args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return m;
}

bool have_tifffile() {
  return test::python_has("tifffile") && test::python_has("scipy");
}

struct Case {
  std::string name, hwc, dtype;
  std::vector<std::string> opts;
};

// Sizes just above and below tile multiples, 1xN and Nx1, tiles 16/64/256,
// strips of odd heights, contiguous and planar.
const Case kCases[] = {
    {"u16x8_tiles64_planar", "777,1000,8", "u16", {"--planar", "--tile", "64", "--zlib"}},
    {"u16x8_tiles256", "777,1000,8", "u16", {"--tile", "256"}},
    {"u16x8_strips_planar", "777,1000,8", "u16", {"--planar", "--rows", "50", "--zlib"}},
    {"u8x5_tiles64", "300,300,5", "u8", {"--tile", "64"}},
    {"u8x5_strips", "257,255,5", "u8", {"--rows", "7"}},
    {"f32x2_planar_tiles16", "129,257,2", "f32", {"--planar", "--tile", "16"}},
    {"f32x3_gray_strips", "65,63,3", "f32", {"--rows", "10", "--zlib"}},
    {"u8x40", "67,129,40", "u8", {"--zlib", "--tile", "16"}},
    {"u8x64_planar", "33,17,64", "u8", {"--planar"}},
    {"u16x5_rgb_extra", "100,90,5", "u16", {"--rgb", "--tile", "32"}},
    {"u8x6_1xN", "1,300,6", "u8", {"--rows", "1"}},
    {"u8x7_Nx1_planar", "301,1,7", "u8", {"--planar", "--tile", "16"}},
};

TEST(MultichannelRead, TifffileInputsReadExactly) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  for (const Case& c : kCases) {
    const Made m = make(tmp, c.name, c.hwc, c.dtype, c.opts);
    TiffSource src(m.tif);
    const Image want = test::load_npy(m.npy);
    ASSERT_EQ(src.info().fmt, want.fmt()) << c.name << ": " << src.info().fmt.str();
    EXPECT_TRUE(src.info().channel_names.empty()) << c.name;
    const Image got = src.read(0, src.level(0).bounds());
    EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << c.name;
    // A region with a halo reaching outside, mirrored: as the whole read.
    const Rect r(-5, -3, std::min<int64_t>(want.rect().w + 9, 70), std::min<int64_t>(want.rect().h + 7, 40));
    const Image part = src.read(0, r, Border{BorderMode::kReflect101, 0});
    for (int64_t y = std::max<int64_t>(r.y, 0); y < std::min(r.y1(), want.rect().h); ++y)
      ASSERT_EQ(std::memcmp(part.view().ptr_bytes(std::max<int64_t>(r.x, 0), y),
                            want.view().ptr_bytes(std::max<int64_t>(r.x, 0), y),
                            static_cast<size_t>(std::min(r.x1(), want.rect().w) - std::max<int64_t>(r.x, 0)) *
                                want.fmt().bytes_per_pixel()),
                0)
          << c.name << " row " << y;
  }
}

// libtiff as the writer (an independent encoder), contiguous and planar,
// deflate with the predictor.
TEST(MultichannelRead, LibtiffInputsReadExactly) {
  test::TempDir tmp;
  for (const PixelFormat fmt : {PixelFormat{SampleType::kU8, 5}, PixelFormat{SampleType::kU16, 9}}) {
    const Image img = test::random_image(fmt, 211, 97, 7);
    for (bool planar : {false, true})
      for (bool tiled : {true, false}) {
        test::TiffSpec spec;
        spec.tiled = tiled, spec.tile_w = spec.tile_h = 64, spec.rows_per_strip = 13;
        spec.compression = 8, spec.predictor = 2, spec.planar_separate = planar;
        const std::string path = tmp.file("l.tif");
        test::write_tiff(path, img.view(), spec);
        TiffSource src(path);
        ASSERT_EQ(src.info().fmt, fmt);
        EXPECT_EQ(test::diff_images(src.read(0, src.level(0).bounds()).view(), img.view()), "")
            << fmt.str() << (planar ? " planar" : " contiguous") << (tiled ? " tiles" : " strips");
      }
  }
}

// Pyramids stored in the file are levels of N channels too.
TEST(MultichannelRead, StoredLevelsOfNChannels) {
  test::TempDir tmp;
  const PixelFormat fmt{SampleType::kU16, 6};
  const Image l0 = test::random_image(fmt, 300, 200, 1), l1 = test::random_image(fmt, 150, 100, 2);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64, spec.planar_separate = true;
  test::write_tiff(tmp.file("p.tif"), l0.view(), spec);
  test::append_tiff_directory(tmp.file("p.tif"), l1.view(), spec, 1);
  TiffSource src(tmp.file("p.tif"));
  ASSERT_EQ(src.level_count(), 2);
  EXPECT_EQ(test::diff_images(src.read(1, src.level(1).bounds()).view(), l1.view()), "");
}

void expect_refused(const std::string& path, const std::string& says) {
  try {
    TiffSource src(path);
    ADD_FAILURE() << path << " was read as " << src.info().fmt.str();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(MultichannelRead, WhatStaysRefusedIsNamed) {
  test::TempDir tmp;
  struct Bad {
    std::string name, says;
    uint16_t bits, spp, compression, photometric, planar;
  };
  const Bad cases[] = {
      {"c65.tif", "65 samples per pixel (at most 64", 8, 65, 1, 1, 1},
      {"rgb65.tif", "65 samples per pixel (at most 64", 8, 65, 1, 2, 1},
      {"jpeg5.tif", "JPEG with 5 samples per pixel", 8, 5, 7, 1, 1},
      {"jpeg_planar.tif", "planar JPEG", 8, 3, 7, 2, 2},
      {"white3.tif", "MinIsWhite image with 3 samples per pixel", 8, 3, 1, 0, 1},
      {"u32x4.tif", "32-bit samples with 4 samples per pixel", 32, 4, 1, 1, 1},
      {"rgb2.tif", "RGB image with 2 samples per pixel", 8, 2, 1, 2, 1},
  };
  for (const Bad& b : cases) {
    test::RawIfd d;
    d.width = d.height = 32, d.tile_w = d.tile_h = 32;
    d.bits = b.bits, d.spp = b.spp, d.compression = b.compression, d.photometric = b.photometric;
    d.planar = b.planar;
    const size_t plane = 32 * 32 * (b.bits / 8) * (b.planar == 2 ? 1 : b.spp);
    d.chunks.assign(b.planar == 2 ? b.spp : 1, std::string(plane, '\x20'));
    test::write_raw_tiff(tmp.file(b.name), {d});
    expect_refused(tmp.file(b.name), b.says);
  }
  // A header that lies about its samples: 5 planes declared, 2 stored.
  test::RawIfd lie;
  lie.width = lie.height = 32, lie.tile_w = lie.tile_h = 32;
  lie.spp = 5, lie.photometric = 1, lie.planar = 2;
  lie.chunks.assign(2, std::string(32 * 32, '\x20'));
  test::write_raw_tiff(tmp.file("lie.tif"), {lie});
  expect_refused(tmp.file("lie.tif"), "damaged directory: its TileOffsets do not match its size");
  // Planar chunks past the end of the file: refused on opening.
  test::RawIfd cut = lie;
  cut.chunks.assign(5, std::string(32 * 32, '\x20'));
  cut.offsets = {8, 8, 8, 8, 1u << 30};
  cut.counts = {1024, 1024, 1024, 1024, 1024};
  test::write_raw_tiff(tmp.file("cut.tif"), {cut});
  expect_refused(tmp.file("cut.tif"), "past the end of the file");
}

}  // namespace
}  // namespace tw
