// N-channel images through the CLI: `tilewave pyramid` of a 5-, 8-, 40- or
// 2-channel TIFF, and of an OME-TIFF of channels one IFD each, keeps every
// channel (tifffile reads them back, each level equal to scipy's REDUCE of
// the level above per channel: tests/oracles/channels_oracle.py check);
// ops defined per channel equal the op run on each channel alone; ops that
// need gray or RGB, and outputs that cannot hold N channels, refuse in one
// line with nothing left behind; memory stays bounded for an input many
// times --memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "io/tiff/tiff_source.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

bool have_oracles() {
  return test::python_has("tifffile") && test::python_has("scipy");
}

test::RunResult oracle(const std::vector<std::string>& args) {
  return test::run_python(test::oracle("channels_oracle.py"), args);
}

Image read_level0(const std::string& path) {
  TiffSource s(path);
  return s.read(0, s.level(0).bounds());
}

Image channel_of(const Image& img, int c) {
  const PixelFormat f = img.fmt();
  Image out(PixelFormat{f.type, 1}, img.rect());
  const size_t sb = sample_bytes(f.type);
  for (int64_t y = 0; y < img.rect().h; ++y)
    for (int64_t x = 0; x < img.rect().w; ++x)
      std::memcpy(out.row_bytes(y) + x * sb, img.row_bytes(y) + (x * f.channels + c) * sb, sb);
  return out;
}

void expect_refused(const test::RunResult& r, const std::string& says, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << what << ": " << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": one line: " << r.err;
}

TEST(ChannelsCli, PyramidKeepsEveryChannel) {
  if (!have_oracles()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  struct Case {
    std::string name, hwc, dtype;
    std::vector<std::string> make, pyramid;
    std::string tolerance;
  };
  const Case cases[] = {
      // The case: 300x300x5 was refused (once: written as RGB).
      {"u8x5", "300,300,5", "u8", {"--tile", "64"}, {}, "0"},
      {"u16x8_planar_t64", "777,1000,8", "u16", {"--planar", "--tile", "64", "--zlib"}, {"--tile", "64"}, "0"},
      {"u16x8_strips_t256", "300,517,8", "u16", {"--rows", "33"}, {"--tile", "256"}, "0"},
      {"u8x40", "67,129,40", "u8", {"--zlib"}, {"--tile", "16"}, "0"},
      {"f32x2_planar", "129,257,2", "f32", {"--planar", "--tile", "16"}, {"--tile", "64"}, "1e-5"},
  };
  for (const Case& c : cases) {
    const std::string in = tmp.file(c.name + ".tif"), npy = tmp.file(c.name + ".npy"), out = tmp.file("out.tif");
    std::vector<std::string> make{"make", in, npy, c.hwc, c.dtype};
    make.insert(make.end(), c.make.begin(), c.make.end());
    ASSERT_EQ(oracle(make).exit_code, 0) << c.name;
    std::vector<std::string> args{"pyramid", in, out, "--compression", "deflate", "--min-size", "8"};
    args.insert(args.end(), c.pyramid.begin(), c.pyramid.end());
    const auto r = test::run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    const auto chk = oracle({"check", out, npy, "--tolerance", c.tolerance});
    EXPECT_EQ(chk.exit_code, 0) << c.name << ": " << chk.err;
    EXPECT_NE(chk.out.find("\"channels\": " + std::to_string(read_level0(in).fmt().channels)), std::string::npos)
        << chk.out;
  }
}

// Three or four separate channels (MinIsBlack, e.g. fluorescence) stay
// separate channels: never relabelled RGB, never JPEG-coded as YCbCr by
// default (lossy colour conversion of unrelated channels); RGB stays RGB.
TEST(ChannelsCli, ThreeSeparateChannelsAreNotWrittenAsRgb) {
  if (!have_oracles()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  for (const char* kind : {"minisblack", "rgb"}) {
    const bool rgb = std::string(kind) == "rgb";
    const std::string in = tmp.file(std::string(kind) + ".tif"), npy = tmp.file("a.npy"), out = tmp.file("o.tif");
    std::vector<std::string> make{"make", in, npy, "200,300,3", "u8", "--tile", "64"};
    if (rgb) make.push_back("--rgb");
    ASSERT_EQ(oracle(make).exit_code, 0);
    const auto r = test::run_cli({"pyramid", in, out, "--min-size", "32"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto tags = test::read_tiff_tags(out, 0);
    EXPECT_EQ(tags.photometric, rgb ? 6 : 1) << kind;  // YCbCr JPEG for colour, MinIsBlack otherwise
    EXPECT_EQ(tags.compression, rgb ? 7 : 8) << kind;  // JPEG / deflate by default
    if (!rgb) {
      const auto chk = oracle({"check", out, npy});
      EXPECT_EQ(chk.exit_code, 0) << chk.err;
      // Asked for JPEG: refused by name rather than converted.
      expect_refused(test::run_cli({"pyramid", in, out, "--compression", "jpeg"}), "separate channels", kind);
    }
  }
}

TEST(ChannelsCli, OmeTiffInputNamesAndPyramid) {
  if (!have_oracles()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  const std::string in = tmp.file("m.ome.tif");
  ASSERT_EQ(oracle({"ome", in, tmp.file("m"), "6,301,259", "u16", "--names", "DAPI,CD3,CD8,CD20,PD-L1,panCK",
                    "--subifds", "2", "--tile", "64"})
                .exit_code,
            0);
  const auto info = test::run_cli({"info", in});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("channels:   6 (DAPI, CD3, CD8, CD20, PD-L1, panCK)"), std::string::npos) << info.out;
  const auto json = test::run_cli({"info", in, "--json"});
  EXPECT_NE(json.out.find("\"channel_names\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"panCK\""), std::string::npos) << json.out;
  const auto r = test::run_cli({"pyramid", in, tmp.file("out.tif"), "--compression", "deflate", "--tile", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto chk = oracle({"check", tmp.file("out.tif"), tmp.file("m_level0.npy")});
  EXPECT_EQ(chk.exit_code, 0) << chk.err;
  // A Z stack: refused by name, nothing written.
  ASSERT_EQ(oracle({"ome", tmp.file("z.ome.tif"), tmp.file("z"), "2,64,64", "u8", "--z", "5"}).exit_code, 0);
  expect_refused(test::run_cli({"pyramid", tmp.file("z.ome.tif"), tmp.file("z.tif")}),
                 "OME-TIFF with SizeZ=5 (a Z stack)", "z stack");
  EXPECT_FALSE(std::ifstream(tmp.file("z.tif")).good());
}

// An op defined per channel on 5 (or 8) channels equals the op on each
// channel alone, written and read as a one-channel image.
TEST(ChannelsCli, PerChannelOpsEqualTheOpOnEachChannel) {
  test::TempDir tmp;
  struct Case {
    PixelFormat fmt;
    std::vector<std::string> op;
  };
  const Case cases[] = {
      {{SampleType::kU8, 5}, {"filter", "gaussian", "--sigma", "1.5"}},
      {{SampleType::kU8, 5}, {"filter", "erode", "--radius", "2"}},
      {{SampleType::kU8, 5}, {"filter", "invert"}},
      {{SampleType::kU8, 5}, {"filter", "brightness", "--add", "-40"}},
      {{SampleType::kU8, 5}, {"filter", "contrast", "--factor", "1.7"}},
      {{SampleType::kU8, 5}, {"filter", "gamma", "--gamma", "0.6"}},
      {{SampleType::kU8, 4}, {"filter", "gaussian", "--sigma", "2"}},
      {{SampleType::kU16, 8}, {"filter", "dilate", "--radius", "1", "--shape", "square"}},
      {{SampleType::kU16, 8}, {"filter", "convert", "--type", "u8", "--from", "1000", "--to", "60000"}},
  };
  for (const Case& c : cases) {
    const Image img = test::random_image(c.fmt, 203, 131, 11);
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = 64, spec.compression = 8;
    test::write_tiff(tmp.file("all.tif"), img.view(), spec);
    std::string what;
    for (const auto& w : c.op) what += w + " ";
    what += c.fmt.str();
    auto run = [&](const std::string& in, const std::string& out) {
      std::vector<std::string> args = c.op;
      args.insert(args.end(), {in, out, "--tile", "64"});
      const auto r = test::run_cli(args);
      EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
    };
    run(tmp.file("all.tif"), tmp.file("all_out.tif"));
    const Image all = read_level0(tmp.file("all_out.tif"));
    ASSERT_EQ(all.fmt().channels, c.fmt.channels) << what;
    for (int k = 0; k < c.fmt.channels; ++k) {
      test::write_tiff(tmp.file("one.tif"), channel_of(img, k).view(), spec);
      run(tmp.file("one.tif"), tmp.file("one_out.tif"));
      EXPECT_EQ(test::diff_images(channel_of(all, k).view(), read_level0(tmp.file("one_out.tif")).view()), "")
          << what << ", channel " << k;
    }
  }
}

TEST(ChannelsCli, ChannelSelectAndStats) {
  test::TempDir tmp;
  const Image img = test::random_image(PixelFormat{SampleType::kU16, 9}, 150, 70, 4);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 32, spec.planar_separate = true;
  test::write_tiff(tmp.file("in.tif"), img.view(), spec);
  for (int k : {0, 4, 8}) {
    const auto r = test::run_cli(
        {"filter", "channel", "--index", std::to_string(k), tmp.file("in.tif"), tmp.file("c.tif"), "--device", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::diff_images(read_level0(tmp.file("c.tif")).view(), channel_of(img, k).view()), "") << k;
  }
  expect_refused(test::run_cli({"filter", "channel", "--index", "9", tmp.file("in.tif"), tmp.file("c.tif")}),
                 "--index 9 but", "index past the channels");
  // stats of 5 channels of u8: each channel's as alone.
  const Image u8 = test::random_image(PixelFormat{SampleType::kU8, 5}, 90, 40, 2);
  test::write_tiff(tmp.file("u8.tif"), u8.view(), spec);
  const auto all = test::run_cli({"stats", tmp.file("u8.tif"), "--histogram", "16"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto j = nlohmann::json::parse(all.out);
  ASSERT_EQ(j["channels"], 5);
  for (int k = 0; k < 5; ++k) {
    test::write_tiff(tmp.file("one.tif"), channel_of(u8, k).view(), spec);
    const auto one = nlohmann::json::parse(test::run_cli({"stats", tmp.file("one.tif"), "--histogram", "16"}).out);
    for (const char* key : {"min", "max", "mean", "sum", "histogram"}) EXPECT_EQ(j[key][k], one[key][0]) << key << k;
  }
}

TEST(ChannelsCli, WhatNeedsGrayOrRgbRefusesByName) {
  test::TempDir tmp;
  const Image img = test::random_image(PixelFormat{SampleType::kU8, 5}, 64, 64, 1);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64;
  const std::string in = tmp.file("in.tif"), out = tmp.file("out.tif");
  test::write_tiff(in, img.view(), spec);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"filter", "hed", in, out}, "is u8 x5 (5 channels); hed needs 8-bit RGB"},
      {{"filter", "gray", in, out}, "gray needs 8-bit gray or RGB (pick a channel first"},
      {{"filter", "sobel", in, out}, "sobel needs 8-bit gray or RGB"},
      {{"filter", "threshold", "--value", "9", in, out}, "threshold needs 8-bit gray or RGB"},
      {{"filter", "canny", "--low", "1", "--high", "2", in, out}, "canny needs 8-bit gray or RGB"},
      {{"label", in, out}, "label needs a one-channel image"},
      {{"pyramid", in, out, "--compression", "jpeg"}, "this image has 5 channels"},
  };
  for (const auto& [args, says] : cases) {
    expect_refused(test::run_cli(args), says, args[0] + " " + args[1]);
    EXPECT_FALSE(std::ifstream(out).good()) << args[1] << ": output left behind";
  }
}

// 8 channels of u16 (64 MiB of pixels) through a pyramid and a per-channel
// op with --memory 8M --tile 64: peak RSS stays within the budget plus the fixed cost.
TEST(ChannelsCli, OutOfCoreNChannels) {
  test::TempDir tmp;
  const Image img = test::random_image(PixelFormat{SampleType::kU16, 8}, 2048, 2048, 5);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 256, spec.planar_separate = true;
  test::write_tiff(tmp.file("big.tif"), img.view(), spec);
  // Each command's fixed cost: the same command on a 64x64 corner of the
  // image. On the CPU and 2 threads: the CUDA context and the per-thread
  // buffers are outside --memory (docs/LIMITS.md), and the base (one tile)
  // has no other thread's; so the test measures the same on any machine.
  test::write_tiff(tmp.file("small.tif"), img.view().sub(Rect(0, 0, 64, 64)), spec);
  const size_t budget = size_t{8} << 20;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"pyramid", "IN", tmp.file("o.tif"), "--compression", "zstd"},
        std::vector<std::string>{"filter", "dilate", "--radius", "2", "IN", tmp.file("d.tif")}}) {
    auto with_input = [&](const std::string& in) {
      std::vector<std::string> a = args;
      std::replace(a.begin(), a.end(), std::string("IN"), in);
      a.insert(a.end(), {"--memory", "8M", "--tile", "64", "--device", "cpu", "--threads", "2"});
      return a;
    };
    const auto base = test::run_cli(with_input(tmp.file("small.tif")));
    ASSERT_EQ(base.exit_code, 0) << args[0] << " (64x64): " << base.err;
    const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
    const auto r = test::run_cli(with_input(tmp.file("big.tif")));
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    if (!test::kSanitizerBuild) {
      EXPECT_LE(r.peak_rss_bytes, budget + overhead)
          << args[0] << ": peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB, overhead " << overhead / 1048576.0;
    }
    std::printf("[ info     ] %s u16 x8 2048x2048 --memory 8M --tile 64: peak RSS %.1f MiB (64x64: %.1f MiB; %.1f s)\n",
                args[0].c_str(), r.peak_rss_bytes / 1048576.0, base.peak_rss_bytes / 1048576.0, r.seconds);
  }
  TiffSource o(tmp.file("o.tif"));
  EXPECT_EQ(o.info().fmt, (PixelFormat{SampleType::kU16, 8}));
  const Rect r(1000, 1000, 300, 200);
  EXPECT_EQ(test::diff_images(o.read(0, r).view(), img.view().sub(r)), "");
}

}  // namespace
}  // namespace tw
