// filter channel, filter convert and the math family as users run them:
// TIFF in (float TIFFs written here with libtiff), pyramidal TIFF out, the
// pixels checked against plain loops; one-line errors with the exit status
// of their kind (2: an option; 1: an input, named).
#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/open_source.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// A strip TIFF of any of our sample types, deflate, written by libtiff
// (test::write_tiff leaves SampleFormat unset, which reads as unsigned).
void write_any_tiff(const std::string& path, const Image& img) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(t, nullptr) << path;
  const PixelFormat f = img.fmt();
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(img.rect().w));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(img.rect().h));
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<int>(sample_bytes(f.type) * 8));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, f.channels);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, f.type == SampleType::kF32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, f.channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 16);
  for (int64_t y = 0; y < img.rect().h; ++y)
    ASSERT_GE(TIFFWriteScanline(t, img.row_bytes(y), static_cast<uint32_t>(y), 0), 0);
  TIFFClose(t);
}

class PixelOpsCli : public ::testing::Test {
 protected:
  Image level0(const std::string& f) {
    const SourcePtr s = open_source(tmp.file(f));
    return s->read(0, s->level(0).bounds());
  }
  test::RunResult cli(std::vector<std::string> args) { return test::run_cli(args); }
  test::TempDir tmp;
};

TEST_F(PixelOpsCli, ChannelOfHed) {
  ASSERT_EQ(cli({"filter", "hed", "synthetic:300x257", tmp.file("hed.tif")}).exit_code, 0);
  const Image hed = level0("hed.tif");
  ASSERT_EQ(hed.fmt(), (PixelFormat{SampleType::kF32, 3}));
  for (const char* index : {"0", "2"}) {
    const auto r = cli({"filter", "channel", tmp.file("hed.tif"), tmp.file("h.tif"), "--index", index, "--tile", "64",
                        "--report", tmp.file("h.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Image h = level0("h.tif");
    ASSERT_EQ(h.fmt(), (PixelFormat{SampleType::kF32, 1}));
    const int c = std::stoi(index);
    for (int64_t y = 0; y < 257; ++y)
      for (int64_t x = 0; x < 300; ++x)
        ASSERT_EQ(std::memcmp(h.ptr<float>(x, y), hed.ptr<float>(x, y) + c, 4), 0) << x << ", " << y;
    EXPECT_EQ(test::read_json(tmp.file("h.json"))["command"], "filter channel");
  }
}

// --stain h|e|d writes that channel of the three alone, the same bits.
TEST_F(PixelOpsCli, HedOneStain) {
  ASSERT_EQ(cli({"filter", "hed", "synthetic:300x257", tmp.file("hed.tif")}).exit_code, 0);
  const Image hed = level0("hed.tif");
  const char* stains[] = {"h", "e", "d"};
  for (int c = 0; c < 3; ++c) {
    const auto r = cli({"filter", "hed", "synthetic:300x257", tmp.file("s.tif"), "--stain", stains[c], "--tile", "64"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Image s = level0("s.tif");
    ASSERT_EQ(s.fmt(), (PixelFormat{SampleType::kF32, 1}));
    for (int64_t y = 0; y < 257; ++y)
      for (int64_t x = 0; x < 300; ++x)
        ASSERT_EQ(std::memcmp(s.ptr<float>(x, y), hed.ptr<float>(x, y) + c, 4), 0)
            << stains[c] << " " << x << ", " << y;
  }
  const auto bad = cli({"filter", "hed", "synthetic:30x30", tmp.file("b.tif"), "--stain", "x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--stain"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST_F(PixelOpsCli, ConvertFloatFile) {
  // f32 x3 with NaN, inf, -0, subnormals and the halves of the u8 scale.
  const Image f = test::random_samples(PixelFormat{SampleType::kF32, 3}, 67, 45, 11, -0.5, 1.5);
  write_any_tiff(tmp.file("f.tif"), f);
  ASSERT_EQ(test::bits_diff(level0("f.tif").view(), f.view()), "") << "the float TIFF reads back";
  for (const char* type : {"u8", "u16", "f32"}) {
    const auto r = cli({"filter", "convert", tmp.file("f.tif"), tmp.file("o.tif"), "--type", type, "--from", "-0.5",
                        "--to", "1.5", "--tile", "32", "--report", tmp.file("o.json"), "--device", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_json(tmp.file("o.json"))["op_device"], "cpu");
    const Image o = level0("o.tif");
    const double max = std::string(type) == "u8" ? 255 : 65535;
    for (int64_t y = 0; y < 45; ++y)
      for (int64_t i = 0; i < 67 * 3; ++i) {
        const double v = f.row<float>(y)[i];
        if (std::string(type) == "f32") {
          const float want = static_cast<float>((v + 0.5) / 2.0);
          ASSERT_TRUE(std::memcmp(&o.row<float>(y)[i], &want, 4) == 0 ||
                      (std::isnan(want) && std::isnan(o.row<float>(y)[i])))
              << i << ", " << y << ": " << v;
          continue;
        }
        const double s = (v + 0.5) * max / 2.0;
        const int want = std::isnan(s) ? 0 : static_cast<int>(std::clamp(std::round(s), 0.0, max));
        const int got = std::string(type) == "u8" ? o.row<uint8_t>(y)[i] : o.row<uint16_t>(y)[i];
        ASSERT_EQ(got, want) << i << ", " << y << ": " << v;
      }
  }
  // u8 -> u16 without a range: v * 257.
  ASSERT_EQ(cli({"filter", "convert", "synthetic:67x45", tmp.file("w.tif"), "--type", "u16"}).exit_code, 0);
  ASSERT_EQ(cli({"pyramid", "synthetic:67x45", tmp.file("s.tif"), "--compression", "deflate"}).exit_code, 0);
  const Image w = level0("w.tif"), s = level0("s.tif");
  ASSERT_EQ(w.fmt(), (PixelFormat{SampleType::kU16, 3}));
  for (int64_t y = 0; y < 45; ++y)
    for (int64_t i = 0; i < 67 * 3; ++i) ASSERT_EQ(w.row<uint16_t>(y)[i], s.row<uint8_t>(y)[i] * 257);
}

TEST_F(PixelOpsCli, MathOnFiles) {
  const Image a = test::random_samples(kGray8, 67, 45, 1), b = test::random_samples(kGray8, 67, 45, 2);
  const Image rgb = test::random_samples(kRgb8, 67, 45, 3);
  write_any_tiff(tmp.file("A.tif"), a);
  write_any_tiff(tmp.file("B.tif"), b);
  write_any_tiff(tmp.file("rgb.tif"), rgb);
  for (const char* op : {"subtract", "min", "max", "mask"}) {
    const bool mask = std::string(op) == "mask";
    const auto r = cli({"math", op, tmp.file(mask ? "rgb.tif" : "A.tif"), tmp.file("B.tif"), tmp.file("o.tif"),
                        "--tile", "32", "--report", tmp.file("o.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto report = test::read_json(tmp.file("o.json"));
    EXPECT_EQ(report["op_device"], "cpu");
    EXPECT_EQ(report["command"], std::string("math ") + op);
    const Image o = level0("o.tif");
    ASSERT_EQ(o.fmt(), mask ? kRgb8 : kGray8);
    for (int64_t y = 0; y < 45; ++y)
      for (int64_t x = 0; x < 67; ++x) {
        const int p = a.ptr<uint8_t>(x, y)[0], q = b.ptr<uint8_t>(x, y)[0];
        if (mask) {
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(o.ptr<uint8_t>(x, y)[c], q != 0 ? rgb.ptr<uint8_t>(x, y)[c] : 0) << x << ", " << y;
          continue;
        }
        const int want = std::string(op) == "subtract" ? std::max(0, p - q)
                         : std::string(op) == "min"    ? std::min(p, q)
                                                       : std::max(p, q);
        ASSERT_EQ(o.ptr<uint8_t>(x, y)[0], want) << op << " at " << x << ", " << y;
      }
  }
}

TEST_F(PixelOpsCli, HelpListsTheOps) {
  const auto math = cli({"math", "--help"});
  ASSERT_EQ(math.exit_code, 0) << math.err;
  for (const char* op : {"subtract", "min", "max", "mask"})
    EXPECT_NE(math.out.find(std::string("\n  ") + op + " "), std::string::npos) << math.out;
  const auto top = cli({"--help"});
  ASSERT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("math OP ... OUT             ops: subtract, min, max, mask"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("channel, convert"), std::string::npos) << top.out;
  const auto filter = cli({"filter", "--help"});
  EXPECT_NE(filter.out.find("  channel --index N"), std::string::npos) << filter.out;
  EXPECT_NE(filter.out.find("  convert --type u8|u16|f32"), std::string::npos) << filter.out;
  const auto sub = cli({"math", "subtract", "--help"});
  ASSERT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("usage: tilewave math subtract A B OUTPUT.tif"), std::string::npos) << sub.out;
}

TEST_F(PixelOpsCli, BadInputGetsOneLineAndNoOutput) {
  write_any_tiff(tmp.file("A.tif"), test::random_samples(kGray8, 67, 45, 1));
  write_any_tiff(tmp.file("C.tif"), test::random_samples(kGray8, 60, 45, 2));
  write_any_tiff(tmp.file("rgb.tif"), test::random_samples(kRgb8, 67, 45, 3));
  write_any_tiff(tmp.file("f.tif"), test::random_samples(PixelFormat{SampleType::kF32, 3}, 67, 45, 4));
  const std::string A = tmp.file("A.tif"), C = tmp.file("C.tif"), rgb = tmp.file("rgb.tif"), f = tmp.file("f.tif");
  const std::string out = tmp.file("bad.tif");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"filter", "channel", f, out}, 2, "channel needs --index N"},
           {{"filter", "channel", f, out, "--index", "64"}, 2, "out of range"},
           {{"filter", "channel", f, out, "--index", "3"}, 1, "channel: --index 3 but " + f + " is f32 x3 (RGB)"},
           {{"filter", "channel", A, out, "--index", "0"}, 1, "channel: " + A + " is u8 x1 (gray)"},
           {{"filter", "convert", f, out, "--type", "u8"},
            2,
            "convert --type u8 needs --from LO --to HI for " + f + ", which is f32 x3 (RGB)"},
           {{"filter", "convert", f, out, "--type", "u8", "--from", "1", "--to", "1"},
            2,
            "--from and --to must differ"},
           {{"filter", "convert", f, out, "--type", "u8", "--from", "1"}, 2, "both --from LO and --to HI"},
           {{"filter", "convert", f, out, "--type", "s8"}, 2, "expected u8, u16 or f32"},
           {{"math", "subtract", A, C, out}, 1, "subtract: " + A + " is 67x45 but " + C + " is 60x45"},
           {{"math", "max", A, rgb, out}, 1, "max: " + A + " is u8 x1 (gray) but " + rgb + " is u8 x3 (RGB)"},
           {{"math", "mask", A, rgb, out}, 1, "mask: " + rgb + " is u8 x3 (RGB) but " + A + " is u8 x1 (gray)"},
           {{"math", "min", A, out}, 2, "min takes A B OUTPUT.tif"},
           {{"math", "divide", A, A, out}, 2, "unknown math op 'divide'"},
           {{"math"}, 2, "math takes OP INPUTS... OUTPUT.tif"},
       }) {
    const auto r = cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(tmp.list().size(), 4u) << "no output left behind";
}

}  // namespace
}  // namespace tw
