// The libtiff TileSource against files written by libtiff's own encoders:
// every layout, pixel type and compression the issue names, regions with
// halos in every border mode, pyramids, SVS-like files, and broken files.
#include "io/tiff/tiff_source.hpp"

#include <gtest/gtest.h>
#include <tiffio.h>
#include <zlib.h>

#include <fstream>

#include "engine/border.hpp"
#include "io/open_source.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct Case {
  const char* name;
  PixelFormat fmt;
  int64_t w, h;
  test::TiffSpec spec;
  int tolerance;  // 0 = lossless
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

test::TiffSpec tiled(uint16_t comp, int tile = 64) {
  test::TiffSpec s;
  s.tiled = true;
  s.tile_w = s.tile_h = tile;
  s.compression = comp;
  return s;
}

test::TiffSpec strips(uint16_t comp, int rps) {
  test::TiffSpec s;
  s.tiled = false;
  s.rows_per_strip = rps;
  s.compression = comp;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"tiled_none_gray8", kGray8, 300, 200, tiled(COMPRESSION_NONE), 0});
  auto lzw = tiled(COMPRESSION_LZW);
  lzw.predictor = 2;
  c.push_back({"tiled_lzw_pred_rgb8", kRgb8, 257, 131, lzw, 0});
  auto dfl = tiled(COMPRESSION_ADOBE_DEFLATE, 32);
  dfl.predictor = 2;
  c.push_back({"tiled_deflate_pred_gray16", kGray16, 190, 77, dfl, 0});
  c.push_back({"tiled_zstd_rgb8", kRgb8, 129, 129, tiled(COMPRESSION_ZSTD, 128), 0});
  c.push_back({"strips_none_rgb8_rps7", kRgb8, 101, 50, strips(COMPRESSION_NONE, 7), 0});
  c.push_back({"strips_lzw_gray8_rps1", kGray8, 77, 33, strips(COMPRESSION_LZW, 1), 0});
  c.push_back({"strips_deflate_gray16_one_strip", kGray16, 64, 300, strips(COMPRESSION_ADOBE_DEFLATE, 300), 0});
  auto big = tiled(COMPRESSION_ADOBE_DEFLATE);
  big.bigtiff = true;
  c.push_back({"bigtiff_deflate_rgb8", kRgb8, 200, 150, big, 0});
  auto planar = tiled(COMPRESSION_LZW, 32);
  planar.planar_separate = true;
  c.push_back({"planar_separate_rgb8", kRgb8, 70, 90, planar, 0});
  auto white = strips(COMPRESSION_NONE, 16);
  white.min_is_white = true;
  c.push_back({"miniswhite_gray8", kGray8, 40, 40, white, 0});
  c.push_back({"rgba8_deflate", PixelFormat{SampleType::kU8, 4}, 80, 60, tiled(COMPRESSION_ADOBE_DEFLATE, 16), 0});
  c.push_back({"jpeg_ycbcr_tiled", kRgb8, 300, 200, tiled(COMPRESSION_JPEG, 64), 12});
  auto jrgb = tiled(COMPRESSION_JPEG, 64);
  jrgb.jpeg_ycbcr = false;
  c.push_back({"jpeg_rgb_tiled", kRgb8, 130, 70, jrgb, 12});
  c.push_back({"jpeg_gray_tiled", kGray8, 200, 100, tiled(COMPRESSION_JPEG, 32), 12});
  c.push_back({"jpeg_ycbcr_strips", kRgb8, 120, 100, strips(COMPRESSION_JPEG, 16), 12});
  return c;
}

class TiffSourceCases : public ::testing::TestWithParam<Case> {};

// The case's pattern image (from seed), written to path as the case says.
Image write_case(const std::string& path, const Case& c, uint64_t seed) {
  Image img = test::pattern_image(c.fmt, c.w, c.h, seed);
  test::write_tiff(path, img.view(), c.spec);
  return img;
}

TEST_P(TiffSourceCases, ReadsWholeLevel) {
  const Case& c = GetParam();
  test::TempDir tmp;
  const std::string path = tmp.file("in.tif");
  const Image img = write_case(path, c, 5);
  TiffSource src(path);
  ASSERT_EQ(src.level_count(), 1);
  EXPECT_EQ(src.info().fmt, c.fmt);
  EXPECT_EQ(src.level(0).width, c.w);
  EXPECT_EQ(src.level(0).height, c.h);
  const Image got = src.read(0, Rect(0, 0, c.w, c.h));
  if (c.tolerance == 0) {
    EXPECT_EQ(test::diff_images(got.view(), img.view()), "");
  } else {
    // Lossy: close to the original, and to libtiff's own decode.
    const Image ref = test::read_tiff_libtiff(path, 0);
    EXPECT_GT(test::psnr(got.view(), img.view()), test::psnr(ref.view(), img.view()) - 0.5);
    EXPECT_GT(test::psnr(got.view(), img.view()), 28.0);
    EXPECT_EQ(test::diff_images(got.view(), ref.view(), c.tolerance), "");
  }
}

// Regions that straddle tiles and the image edge, in every border mode:
// each pixel must equal the whole image's pixel at the mirrored coordinate.
TEST_P(TiffSourceCases, RegionsWithHaloAndBorders) {
  const Case& c = GetParam();
  test::TempDir tmp;
  const std::string path = tmp.file("in.tif");
  write_case(path, c, 6);
  TiffSource src(path);
  const Image whole = src.read(0, Rect(0, 0, c.w, c.h));
  const Rect regions[] = {Rect(-5, -3, 40, 30), Rect(c.w - 20, c.h - 9, 37, 21), Rect(13, 17, 70, 45),
                          Rect(-60, -60, c.w + 120, c.h + 120), Rect(c.w / 2, -2, 1, c.h + 4)};
  for (BorderMode m : {BorderMode::kReflect101, BorderMode::kReflect, BorderMode::kReplicate, BorderMode::kConstant}) {
    for (const Rect& r : regions) {
      const Image got = src.read(0, r, Border{m, 7});
      const size_t bpp = c.fmt.bytes_per_pixel();
      int64_t bad = 0;
      for (int64_t y = r.y; y < r.y1(); ++y)
        for (int64_t x = r.x; x < r.x1(); ++x) {
          const int64_t sx = border_index(x, c.w, m), sy = border_index(y, c.h, m);
          std::vector<uint8_t> want(bpp);
          if (sx < 0 || sy < 0) {
            for (int ch = 0; ch < c.fmt.channels; ++ch) {
              if (c.fmt.type == SampleType::kU8)
                want[ch] = 7;
              else
                reinterpret_cast<uint16_t*>(want.data())[ch] = 7;
            }
          } else {
            std::memcpy(want.data(), whole.ptr_bytes(sx, sy), bpp);
          }
          if (std::memcmp(want.data(), got.ptr_bytes(x, y), bpp) != 0 && bad++ == 0)
            ADD_FAILURE() << c.name << " mode " << border_mode_name(m) << " region " << r.str() << " first bad pixel ("
                          << x << ", " << y << ")";
        }
    }
  }
}

// Reads through the cache of decoded chunks equal reads without one, for a
// cache larger than the image (every chunk read whole is kept) and one of a
// few chunks (full: chunks read whole pass by, parts of chunks evict):
// passes over the whole image, then tiles, then regions across chunks.
TEST_P(TiffSourceCases, ReadsThroughTheChunkCache) {
  const Case& c = GetParam();
  test::TempDir tmp;
  const std::string path = tmp.file("in.tif");
  write_case(path, c, 8);
  const Image want = TiffSource(path).read(0, Rect(0, 0, c.w, c.h));
  const int64_t chunk_px = c.spec.tiled ? int64_t{c.spec.tile_w} * c.spec.tile_h : c.w * c.spec.rows_per_strip;
  const size_t chunk = static_cast<size_t>(chunk_px) * c.fmt.bytes_per_pixel();
  for (const size_t cache : {want.size_bytes() * 2, chunk * 3}) {
    TiffSource src(path);
    src.set_read_cache(cache);
    for (int pass = 0; pass < 3; ++pass) {
      EXPECT_EQ(test::diff_images(src.read(0, Rect(0, 0, c.w, c.h)).view(), want.view()), "")
          << c.name << " cache " << cache << " pass " << pass;
      for (int64_t y = 0; y < c.h; y += 64)
        for (int64_t x = 0; x < c.w; x += 64) {
          const Rect r = Rect(x, y, 64, 64).intersect(want.rect());
          Image w(want.fmt(), r);
          copy_overlap(want.view(), w.view());
          ASSERT_EQ(test::diff_images(src.read(0, r).view(), w.view()), "") << c.name << " tile " << r.str();
        }
      const Rect r = Rect(c.w / 3, c.h / 5, c.w / 2, c.h / 2);
      Image w(want.fmt(), r);
      copy_overlap(want.view(), w.view());
      EXPECT_EQ(test::diff_images(src.read(0, r).view(), w.view()), "") << c.name << " region " << r.str();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, TiffSourceCases, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TiffSource, PyramidLevelsAndResolution) {
  test::TempDir tmp;
  const std::string path = tmp.file("pyr.tif");
  const Image l0 = test::pattern_image(kRgb8, 400, 300, 1);
  const Image l1 = test::pattern_image(kRgb8, 200, 150, 2);
  const Image l2 = test::pattern_image(kRgb8, 100, 75, 3);
  auto spec = tiled(COMPRESSION_ADOBE_DEFLATE, 64);
  spec.xres = 40000;  // 0.25 um per pixel
  test::write_tiff(path, l0.view(), spec);
  test::append_tiff_directory(path, l1.view(), spec, FILETYPE_REDUCEDIMAGE);
  test::append_tiff_directory(path, l2.view(), spec, FILETYPE_REDUCEDIMAGE);
  auto label = strips(COMPRESSION_LZW, 16);
  label.description = "label";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 60, 40, 4).view(), label, 0);
  TiffSource src(path);
  ASSERT_EQ(src.level_count(), 3);
  EXPECT_EQ(src.level(1).width, 200);
  EXPECT_DOUBLE_EQ(src.level(2).downsample, 4.0);
  EXPECT_NEAR(src.info().mpp_x, 0.25, 1e-6);
  ASSERT_EQ(src.info().associated.size(), 1u);
  EXPECT_EQ(src.info().associated[0].name, "label");
  EXPECT_EQ(test::diff_images(src.read(2, Rect(0, 0, 100, 75)).view(), l2.view()), "");
  const Image lab = src.read_associated("label");
  EXPECT_EQ(lab.rect().w, 60);
  EXPECT_THROW(src.read_associated("macro"), InputError);
}

// An Aperio-like SVS: level directories without the reduced flag, a stripped
// thumbnail second, label and macro last, MPP in the description.
TEST(TiffSource, AperioLayout) {
  test::TempDir tmp;
  const std::string path = tmp.file("slide.svs");
  auto spec = tiled(COMPRESSION_JPEG, 64);
  spec.description =
      "Aperio Image Library v12.0.5\r\n400x320 [0,0 400x320] (64x64) JPEG/RGB Q=70|AppMag = 40|MPP = 0.2520";
  test::write_tiff(path, test::pattern_image(kRgb8, 400, 320, 1).view(), spec);
  auto thumb = strips(COMPRESSION_JPEG, 16);
  thumb.description = "Aperio Image Library v12.0.5\r\n400x320 -> 100x80 - |AppMag = 40";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 100, 80, 2).view(), thumb, 0);
  spec.description = "Aperio Image Library v12.0.5\r\n400x320 -> 200x160";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 200, 160, 3).view(), spec, 0);
  auto label = strips(COMPRESSION_LZW, 16);
  label.description = "Aperio Image Library v12.0.5\r\nlabel 60x40";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 60, 40, 4).view(), label, 1);
  label.description = "Aperio Image Library v12.0.5\r\nmacro 120x40";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 120, 40, 5).view(), label, 9);
  TiffSource src(path);
  ASSERT_EQ(src.level_count(), 2);
  EXPECT_EQ(src.level(1).width, 200);
  EXPECT_NEAR(src.info().mpp_x, 0.252, 1e-9);
  std::vector<std::string> names;
  for (const auto& a : src.info().associated) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"thumbnail", "label", "macro"}));
  const RawTileFormat* raw = src.raw_tiles()->raw_format(0);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->codec, Codec::kJpeg);
  EXPECT_EQ(raw->photometric, 6);
  // The same slide through OpenSlide's reader: same geometry.
  const SourcePtr os = open_source(path, ReaderChoice::kOpenSlide);
  EXPECT_EQ(os->info().vendor, "aperio");
  EXPECT_EQ(os->level_count(), 2);
  EXPECT_NEAR(os->info().mpp_x, 0.252, 1e-9);
  EXPECT_EQ(
      test::diff_images(os->read(0, Rect(10, 10, 100, 100)).view(), src.read(0, Rect(10, 10, 100, 100)).view(), 12),
      "");
}

TEST(TiffSource, RawTilesPassThrough) {
  test::TempDir tmp;
  const std::string path = tmp.file("j.tif");
  const Image img = test::pattern_image(kRgb8, 200, 100, 8);
  test::write_tiff(path, img.view(), tiled(COMPRESSION_JPEG, 64));
  TiffSource src(path);
  const RawTileFormat* raw = src.raw_tiles()->raw_format(0);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->tile_w, 64);
  EXPECT_FALSE(raw->jpeg_tables.empty());
  const auto bytes = src.raw_tiles()->read_raw_tile(0, 3, 1);
  // The raw bytes are exactly libtiff's stored tile.
  TIFF* t = TIFFOpen(path.c_str(), "r");
  std::vector<uint8_t> ref(static_cast<size_t>(TIFFTileSize(t)) * 2);
  const tmsize_t n =
      TIFFReadRawTile(t, TIFFComputeTile(t, 3 * 64, 64, 0, 0), ref.data(), static_cast<tmsize_t>(ref.size()));
  TIFFClose(t);
  ref.resize(static_cast<size_t>(n));
  EXPECT_EQ(bytes, ref);
  Image dec(kRgb8, Rect(192, 64, 8, 36));
  src.raw_tiles()->decode_raw_tile(0, 3, 1, bytes, dec.view());
  EXPECT_EQ(test::diff_images(dec.view(), src.read(0, Rect(192, 64, 8, 36)).view()), "");
}

// An 8 x 8 one-strip floating-point TIFF of `bits` (32 or 64) per sample.
void write_float_strip(const std::string& path, int bits, uint16_t photometric) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 8);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, 8);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, photometric);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 8);
  std::vector<uint8_t> px(static_cast<size_t>(64 * bits / 8), 0);
  TIFFWriteEncodedStrip(t, 0, px.data(), static_cast<tmsize_t>(px.size()));
  TIFFClose(t);
}

TEST(TiffSource, BadInput) {
  test::TempDir tmp;
  auto expect_error = [](const std::string& path, const std::string& fragment) {
    try {
      TiffSource s(path);
      s.read(0, Rect(0, 0, s.level(0).width, s.level(0).height));
      ADD_FAILURE() << "no error for " << path;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    }
  };
  expect_error(tmp.file("missing.tif"), "No such file");
  { std::ofstream(tmp.file("text.tif")) << "this is not an image\n"; }
  expect_error(tmp.file("text.tif"), "not a TIFF");
  // Truncated: the tiles' bytes end past the end of the file.
  const Image img = test::pattern_image(kRgb8, 256, 256, 3);
  test::write_tiff(tmp.file("full.tif"), img.view(), tiled(COMPRESSION_NONE, 64));
  {
    std::ifstream in(tmp.file("full.tif"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // libtiff puts the directory at the end; keep it and cut tile data out.
    std::ofstream out(tmp.file("truncated.tif"), std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  expect_error(tmp.file("truncated.tif"), "cannot read TIFF");
  // tifffile puts each directory before its pixels: cutting the tail keeps
  // the directory and loses tiles, which must be refused at open.
  if (test::python_has("tifffile")) {
    const auto r = test::run({test::python(), "-c",
                              "import sys, numpy as np, tifffile\n"
                              "a = (np.arange(256*256*3) % 251).astype(np.uint8).reshape(256, 256, 3)\n"
                              "tifffile.imwrite(sys.argv[1], a, tile=(64, 64))\n"
                              "b = open(sys.argv[1], 'rb').read()\n"
                              "open(sys.argv[1], 'wb').write(b[:len(b) * 2 // 3])\n",
                              tmp.file("cut.tif")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_error(tmp.file("cut.tif"), "truncated TIFF");
  }
  // A corrupt JPEG tile: valid structure, garbage entropy-coded data.
  test::write_tiff(tmp.file("jpeg.tif"), img.view(), tiled(COMPRESSION_JPEG, 64));
  {
    TIFF* t = TIFFOpen(tmp.file("jpeg.tif").c_str(), "r");
    uint64_t* offs = nullptr;
    uint64_t* cnts = nullptr;
    TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &cnts);
    const uint64_t off = offs[5], n = cnts[5];
    TIFFClose(t);
    std::fstream f(tmp.file("jpeg.tif"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off + 2));
    std::string junk(static_cast<size_t>(n - 4), '\xff');
    for (size_t i = 0; i < junk.size(); i += 3) junk[i] = static_cast<char>(i * 7);
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  expect_error(tmp.file("jpeg.tif"), "corrupt JPEG");
  // 64-bit floating-point samples are not read: a clear UnsupportedFormat.
  write_float_strip(tmp.file("float.tif"), 64, PHOTOMETRIC_MINISBLACK);
  EXPECT_THROW(TiffSource(tmp.file("float.tif")), UnsupportedFormat);
  expect_error(tmp.file("float.tif"), "floating-point");
  // MinIsWhite float32: no white to invert from, so refused when opened
  // (it was read as is: the image's negative).
  write_float_strip(tmp.file("white_float.tif"), 32, PHOTOMETRIC_MINISWHITE);
  EXPECT_THROW(TiffSource(tmp.file("white_float.tif")), UnsupportedFormat);
  expect_error(tmp.file("white_float.tif"), "white_float.tif: floating-point MinIsWhite images are not supported");
}

// Two directories that both call themselves "label" (found by
// fuzz_tiff_source): the second was listed but never readable, and a pyramid
// got the first one twice. Names are unique; the second keeps its
// directory's name.
TEST(TiffSource, AssociatedNamesAreUnique) {
  test::TempDir tmp;
  const std::string path = tmp.file("two_labels.tif");
  test::write_tiff(path, test::pattern_image(kRgb8, 128, 128, 1).view(), tiled(COMPRESSION_NONE, 64));
  auto label = strips(COMPRESSION_LZW, 16);
  label.description = "label";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 60, 40, 2).view(), label, 1);
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 30, 20, 3).view(), label, 1);
  TiffSource src(path);
  ASSERT_EQ(src.info().associated.size(), 2u);
  EXPECT_EQ(src.info().associated[0].name, "label");
  EXPECT_EQ(src.info().associated[1].name, "image-2");
  for (const auto& a : src.info().associated) {
    const Image img = src.read_associated(a.name);
    EXPECT_EQ(img.rect(), Rect(0, 0, a.width, a.height)) << a.name;
  }
}

// A JPEG tile whose frame header claims 32767x32767 in a 64x64 tile (found
// by fuzz_jpeg_decode; tests/fuzz/regressions/ keeps a genuine progressive
// one, for which libjpeg took 3 GB and decoded the whole claimed image before
// the first row). Now refused before libjpeg allocates anything for it.
TEST(TiffSource, JpegTileLargerThanItsTile) {
  test::TempDir tmp;
  const std::string path = tmp.file("lying.tif");
  test::write_tiff(path, test::pattern_image(kRgb8, 128, 128, 4).view(), tiled(COMPRESSION_JPEG, 64));
  {
    TIFF* t = TIFFOpen(path.c_str(), "r");
    ASSERT_NE(t, nullptr);
    uint64_t* offs = nullptr;
    uint64_t* cnts = nullptr;
    TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &cnts);
    const uint64_t off = offs[0], n = cnts[0];
    TIFFClose(t);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string tile(static_cast<size_t>(n), '\0');
    f.seekg(static_cast<std::streamoff>(off));
    f.read(tile.data(), static_cast<std::streamsize>(n));
    const size_t sof = tile.find("\xff\xc0");
    ASSERT_NE(sof, std::string::npos);
    tile[sof + 1] = '\xc2';                        // progressive: every scan is read before the first row
    tile.replace(sof + 5, 4, "\x7f\xff\x7f\xff");  // height, width 32767
    f.seekp(static_cast<std::streamoff>(off));
    f.write(tile.data(), static_cast<std::streamsize>(n));
  }
  TiffSource src(path);
  try {
    (void)src.read(0, Rect(0, 0, 64, 64));
    ADD_FAILURE() << "no error for a 32767x32767 stream in a 64x64 tile";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is 32767x32767, larger than its 64x64 tile"), std::string::npos) << e.what();
  }
  // The other tiles still read.
  EXPECT_EQ(src.read(0, Rect(64, 64, 64, 64)).rect().w, 64);
}

// A deflate tile whose stream decodes to more than the tile (found by
// fuzz_tiff_source): libtiff 4.5 reports success but stops before the match
// that would overflow, leaving the tile's last bytes unwritten. They showed
// whatever tile this thread decoded before (of any file); now zeros.
TEST(TiffSource, OverlongDeflateTileReadsAloneOfWhatCameBefore) {
  test::TempDir tmp;
  const std::string path = tmp.file("overlong.tif");
  auto zlib = [](const std::vector<uint8_t>& raw) {
    std::vector<uint8_t> out(compressBound(raw.size()));
    uLongf n = out.size();
    EXPECT_EQ(compress2(out.data(), &n, raw.data(), raw.size(), 9), Z_OK);
    out.resize(n);
    return out;
  };
  {
    TIFF* t = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(t, nullptr);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 48);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 16);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
    TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
    // Tiles 0 and 2: flat 0xee and 0x11. Tile 1: 250 distinct bytes, then a
    // run of 100 (a literal and a long match), 94 bytes more than the tile.
    std::vector<uint8_t> over(250);
    for (size_t i = 0; i < over.size(); ++i) over[i] = static_cast<uint8_t>(i);
    over.insert(over.end(), 100, 7);
    const std::vector<uint8_t> tiles[] = {zlib(std::vector<uint8_t>(256, 0xee)), zlib(over),
                                          zlib(std::vector<uint8_t>(256, 0x11))};
    for (uint32_t i = 0; i < 3; ++i)
      ASSERT_GT(TIFFWriteRawTile(t, i, const_cast<uint8_t*>(tiles[i].data()), static_cast<tmsize_t>(tiles[i].size())),
                0);
    TIFFClose(t);
  }
  TiffSource src(path);
  const Rect tile1(16, 0, 16, 16);
  (void)src.read(0, Rect(0, 0, 16, 16));
  const Image after0 = src.read(0, tile1);
  (void)src.read(0, Rect(32, 0, 16, 16));
  const Image after2 = src.read(0, tile1);
  EXPECT_EQ(test::diff_images(after0.view(), after2.view()), "");
  EXPECT_EQ(*after0.ptr<uint8_t>(31, 15), 0);
  EXPECT_EQ(*after0.ptr<uint8_t>(17, 0), 1);  // the decoded part is there
}

}  // namespace
}  // namespace tw
