// The generic pyramidal TIFF (`.tif`) of images with channels that are not
// RGB: MinIsBlack with ExtraSamples 0 (unspecified) for every sample past
// the first, so tifffile hands the samples back as they were written
// instead of as RGB plus alpha; RGB (3) and RGBA (4, alpha declared) as
// before. Checked with tifffile against the input's samples, and every level
// against scipy's REDUCE of the level above (tests/oracles/check_pyramid.py).
#include <gtest/gtest.h>

#include <fstream>

#include "engine/error.hpp"
#include "engine/exec_context.hpp"
#include "engine/memory_source.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/tiff_pyramid_sink.hpp"
#include "jobs/write_result.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

constexpr uint16_t kMinIsBlack = 1, kRgb = 2, kYCbCr = 6;

EncodeSettings settings(PixelFormat fmt, Codec codec = Codec::kDeflate, bool color = true) {
  EncodeSettings s;
  s.fmt = fmt;
  s.codec = codec;
  s.color = color;
  return s;
}

// Smooth content, a different pattern per channel, any count of channels.
Image channels_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed) {
  Image img(fmt, Rect(0, 0, w, h));
  for (int c = 0; c < fmt.channels; ++c) {
    const Image p = test::pattern_image(kGray16, w, h, seed + static_cast<uint64_t>(c));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const uint16_t v = p.row<uint16_t>(y)[x];
        if (fmt.type == SampleType::kU8)
          img.ptr<uint8_t>(x, y)[c] = static_cast<uint8_t>(v >> 8);
        else if (fmt.type == SampleType::kU16)
          img.ptr<uint16_t>(x, y)[c] = v;
        else
          img.ptr<float>(x, y)[c] = static_cast<float>(v) / 65535.0f;
      }
  }
  return img;
}

void write(const TileSource& src, const std::string& path, int64_t min_size = 16) {
  OutputSpec out;
  out.path = path;
  out.codec = Codec::kDeflate;
  out.min_size = min_size;
  ExecContext ctx;
  ctx.memory = size_t{256} << 20;
  write_pyramid(src, out, ctx);
}

// tifffile's view of level 0: photometric, ExtraSamples and the samples.
const char* kCheckPy =
    "import sys, json, numpy as np, tifffile\n"
    "a = np.load(sys.argv[2])\n"
    "with tifffile.TiffFile(sys.argv[1]) as t:\n"
    "    p = t.pages[0]\n"
    "    b = p.asarray()\n"
    "    if a.ndim == 2: a = a[..., None]\n"
    "    if b.ndim == 2: b = b[..., None]\n"
    "    same = b.shape == a.shape and b.dtype == a.dtype and np.array_equal(a, b)\n"
    "    print(json.dumps({'photometric': int(p.photometric), 'extrasamples': [int(v) for v in p.extrasamples],\n"
    "                      'shape': list(b.shape), 'dtype': str(b.dtype), 'equal': bool(same)}))\n";

nlohmann::json check_level0(const test::TempDir& tmp, const std::string& tif, const Image& img) {
  {
    std::ofstream py(tmp.file("check.py"));
    py << kCheckPy;
  }
  test::save_npy(tmp.file("in.npy"), img.view());
  const auto r = test::run_python(tmp.file("check.py"), {tif, tmp.file("in.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(MultichannelTiffWrite, PhotometricByChannelCount) {
  struct Case {
    int channels;
    bool color;
    uint16_t photometric;
  } cases[] = {{1, true, kMinIsBlack}, {2, true, kMinIsBlack},  {3, true, kRgb},        {3, false, kMinIsBlack},
               {4, true, kRgb},        {4, false, kMinIsBlack}, {5, true, kMinIsBlack}, {64, true, kMinIsBlack}};
  for (const Case& c : cases)
    for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kF32}) {
      const RawTileFormat f = tiff_format_for(settings(PixelFormat{t, c.channels}, Codec::kDeflate, c.color));
      EXPECT_EQ(f.photometric, c.photometric) << c.channels << " channels, color " << c.color;
      EXPECT_EQ(f.samples_per_pixel, c.channels);
    }
  // JPEG: RGB as YCbCr; channels of their own are no JPEG's business.
  EXPECT_EQ(tiff_format_for(settings(kRgb8, Codec::kJpeg)).photometric, kYCbCr);
  EXPECT_EQ(tiff_format_for(settings(kGray8, Codec::kJpeg)).photometric, kMinIsBlack);
  for (int ch : {2, 4, 5}) EXPECT_THROW(settings({SampleType::kU8, ch}, Codec::kJpeg).validate(), InputError);
  EXPECT_THROW(settings(kRgb8, Codec::kJpeg, false).validate(), InputError);
}

// N channels through write_pyramid: tifffile reads MinIsBlack with
// unspecified extra samples, level 0 equal to the input, every level REDUCE
// of the one above (per channel, as for RGB).
TEST(MultichannelTiffWrite, NChannelPyramidReadsBackAsWritten) {
  if (!test::python_has("tifffile") || !test::python_has("scipy")) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  struct Case {
    PixelFormat fmt;
    int64_t w, h;
  } cases[] = {{{SampleType::kU16, 8}, 1000, 777}, {{SampleType::kU8, 5}, 300, 300}, {{SampleType::kU16, 2}, 257, 255},
               {{SampleType::kU8, 40}, 129, 65},   {{SampleType::kF32, 2}, 100, 70}, {{SampleType::kU8, 64}, 33, 17}};
  for (const Case& c : cases) {
    const std::string what = c.fmt.str() + " " + std::to_string(c.w) + "x" + std::to_string(c.h);
    const MemorySource src(channels_image(c.fmt, c.w, c.h, 21), 0);
    const std::string out = tmp.file("n.tif");
    write(src, out);
    const auto j = check_level0(tmp, out, src.image());
    EXPECT_EQ(j["photometric"], kMinIsBlack) << what;
    EXPECT_EQ(j["extrasamples"], nlohmann::json(std::vector<int>(static_cast<size_t>(c.fmt.channels - 1), 0))) << what;
    EXPECT_EQ(j["shape"], nlohmann::json({c.h, c.w, c.fmt.channels})) << what;
    EXPECT_EQ(j["equal"], true) << what;
    if (c.fmt.type != SampleType::kF32) {
      const auto p = test::run_python(test::oracle("check_pyramid.py"), {out, "--pixels"});
      EXPECT_EQ(p.exit_code, 0) << what << ": " << p.err;
    }
  }
}

// RGB stays RGB without extra samples, RGBA stays RGB + unassociated alpha.
TEST(MultichannelTiffWrite, RgbAndRgbaAsBefore) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  for (int ch : {3, 4}) {
    const MemorySource src(channels_image({SampleType::kU8, ch}, 300, 211, 4), 0);
    write(src, tmp.file("c.tif"));
    const auto j = check_level0(tmp, tmp.file("c.tif"), src.image());
    EXPECT_EQ(j["photometric"], kRgb);
    EXPECT_EQ(j["extrasamples"], ch == 4 ? nlohmann::json({2}) : nlohmann::json::array());
    EXPECT_EQ(j["equal"], true);
  }
}

// 4 channels that are not RGBA (EncodeSettings::color false): MinIsBlack
// with three unspecified extra samples, through the TIFF sink itself.
TEST(MultichannelTiffWrite, FourChannelsThatAreNotRgba) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const Image img = channels_image({SampleType::kU16, 4}, 100, 40, 8);
  EncodeSettings enc = settings(img.fmt(), Codec::kDeflate, false);
  enc.tile_w = enc.tile_h = 64;
  {
    TiffPyramidSink sink(tmp.file("f.tif"), enc, {{100, 40, tiff_format_for(enc)}}, PyramidWriterOptions{});
    Image tile(img.fmt(), Rect(0, 0, 64, 64));
    std::vector<uint8_t> bytes;
    for (int64_t tx = 0; tx < 2; ++tx) {
      tile.set_origin(tx * 64, 0);
      tile.fill_zero();
      copy_overlap(img.view(), tile.view());
      sink.encode(0, tile.view(), bytes);
      sink.write(0, tx, 0, bytes);
    }
    sink.finish();
  }
  const auto j = check_level0(tmp, tmp.file("f.tif"), img);
  EXPECT_EQ(j["photometric"], kMinIsBlack);
  EXPECT_EQ(j["extrasamples"], nlohmann::json({0, 0, 0}));
  EXPECT_EQ(j["equal"], true);
}

// From the command line: a 5-channel TIFF (written by tifffile) becomes a
// 5-channel pyramid, never RGB (issue 18: it used to drop two channels), as
// `.tif` and as `.ome.tif`. Needs the N-channel reader (docs/channels.md).
TEST(MultichannelTiffWrite, FiveChannelTiffFromTheCli) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const Image img = channels_image({SampleType::kU8, 5}, 300, 300, 2);
  test::save_npy(tmp.file("in.npy"), img.view());
  {
    std::ofstream py(tmp.file("make.py"));
    py << "import sys, numpy as np, tifffile\n"
          "tifffile.imwrite(sys.argv[2], np.load(sys.argv[1]), photometric='minisblack', planarconfig='contig',\n"
          "                 tile=(256, 256), compression='zlib')\n";
  }
  ASSERT_EQ(test::run_python(tmp.file("make.py"), {tmp.file("in.npy"), tmp.file("in.tif")}).exit_code, 0);
  const auto r = test::run_cli({"pyramid", tmp.file("in.tif"), tmp.file("out.tif"), "--min-size", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = check_level0(tmp, tmp.file("out.tif"), img);
  EXPECT_EQ(j["photometric"], kMinIsBlack);
  EXPECT_EQ(j["shape"], nlohmann::json({300, 300, 5}));
  EXPECT_EQ(j["equal"], true);
  const auto o = test::run_cli({"pyramid", tmp.file("in.tif"), tmp.file("out.ome.tif"), "--min-size", "64"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto c =
      test::run_python(test::oracle("check_ome_tiff.py"), {tmp.file("out.ome.tif"), "--generic", tmp.file("out.tif")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto k = nlohmann::json::parse(c.out);
  EXPECT_EQ(k["diffs"], nlohmann::json::array()) << k["diffs"].dump();
  EXPECT_EQ(k["series"][0]["shape"], nlohmann::json({5, 300, 300}));
}

}  // namespace
}  // namespace tw
