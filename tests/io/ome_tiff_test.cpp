// OME-TIFF output (OUT.ome.tif, io/tiff/ome_tiff_sink.hpp) read back by
// independent readers: tifffile must see one series with every level
// (SubIFDs), its pixels equal to the generic `.tif` pyramid's of the same
// input, level for level; xml.etree reads the physical sizes and channel
// names from the OME-XML, and xmllint accepts it. Worst cases (64 channels,
// 1x1, 1xN, floats, labels), JPEG, bad input and an input 8x the memory
// budget.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "engine/exec_context.hpp"
#include "engine/memory_source.hpp"
#include "jobs/write_result.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// A source in memory whose channels have names (as an OME-TIFF input's).
class NamedSource : public MemorySource {
 public:
  NamedSource(Image img, double mpp, std::vector<std::string> names) : MemorySource(std::move(img), mpp) {
    info_.channel_names = std::move(names);
  }
};

// Smooth content with a different pattern in each channel, of any count and
// sample type (floats get fractions, u32 labels values past 16 bits).
Image channels_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed) {
  Image img(fmt, Rect(0, 0, w, h));
  for (int c = 0; c < fmt.channels; ++c) {
    const Image p = test::pattern_image(kGray16, w, h, seed + static_cast<uint64_t>(c));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const uint16_t v = p.row<uint16_t>(y)[x];
        switch (fmt.type) {
          case SampleType::kU8:
            img.ptr<uint8_t>(x, y)[c] = static_cast<uint8_t>(v >> 8);
            break;
          case SampleType::kU16:
            img.ptr<uint16_t>(x, y)[c] = v;
            break;
          case SampleType::kF32:
            img.ptr<float>(x, y)[c] = static_cast<float>(v) / 65535.0f - 0.25f;
            break;
          default:
            img.ptr<uint32_t>(x, y)[c] = 70000u + v / 4096u;
            break;
        }
      }
  }
  return img;
}

// Writes `src` through write_pyramid as the CLI does, lossless (deflate).
void write(const TileSource& src, const std::string& path, int64_t min_size = 16, const std::string& description = "",
           int64_t tile = 256) {
  OutputSpec out;
  out.path = path;
  out.description = description;
  out.codec = Codec::kDeflate;
  out.min_size = min_size;
  ExecContext ctx;
  ctx.memory = size_t{256} << 20;
  ctx.tile = tile;
  write_pyramid(src, out, ctx);
}

nlohmann::json check(const std::string& ome, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{ome};
  args.insert(args.end(), more.begin(), more.end());
  const auto r = test::run_python(test::oracle("check_ome_tiff.py"), args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

bool have_tifffile() {
  return test::python_has("tifffile") && test::python_has("numpy");
}

// `.ome.tif` and `.tif` of the same source; the OME-TIFF's levels must be
// the generic file's, pixel for pixel. Returns the checker's report.
nlohmann::json write_both(const TileSource& src, const test::TempDir& tmp, const std::string& name,
                          int64_t min_size = 16, int64_t tile = 256) {
  write(src, tmp.file(name + ".tif"), min_size, "", tile);
  write(src, tmp.file(name + ".ome.tif"), min_size, "", tile);
  nlohmann::json j = check(tmp.file(name + ".ome.tif"), {"--generic", tmp.file(name + ".tif")});
  EXPECT_EQ(j["diffs"], nlohmann::json::array()) << name << ": " << j["diffs"].dump();
  EXPECT_EQ(j["is_ome"], true) << name;
  EXPECT_EQ(j["is_bigtiff"], true) << name;
  return j;
}

std::vector<std::vector<int64_t>> level_shapes(const nlohmann::json& series) {
  std::vector<std::vector<int64_t>> r;
  for (const auto& l : series["levels"]) r.push_back(l["shape"].get<std::vector<int64_t>>());
  return r;
}

// RGB and 16-bit gray from the CLI: one series with all levels in SubIFDs,
// flagged reduced-resolution, equal to the generic layout's; the OME-XML's
// type, size, physical size in µm; label and macro as Images of their own;
// xmllint accepts the XML; --tile 512 gives 512-pixel tiles.
TEST(OmeTiff, RgbAndGrayLevelsEqualGenericTif) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  struct Case {
    const char* src;
    const char* tile;
    const char* type;
    int size_c;
    const char* axes;
  } cases[] = {{"synthetic:1000x777", "256", "uint8", 3, "YXS"},
               {"synthetic:1000x777,gray,16bit,mpp=0.5", "512", "uint16", 1, "YX"}};
  for (const Case& c : cases) {
    for (const char* name : {"p.tif", "p.ome.tif"}) {
      const auto r = test::run_cli(
          {"pyramid", c.src, tmp.file(name), "--compression", "deflate", "--tile", c.tile, "--min-size", "16"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const auto j = check(tmp.file("p.ome.tif"), {"--generic", tmp.file("p.tif"), "--xml-out", tmp.file("p.xml")});
    EXPECT_EQ(j["diffs"], nlohmann::json::array()) << c.src << ": " << j["diffs"].dump();
    EXPECT_EQ(j["is_ome"], true);
    EXPECT_EQ(j["is_bigtiff"], true);
    ASSERT_EQ(j["series"].size(), 3u) << j.dump();  // the pyramid, label, macro
    const auto& s = j["series"][0];
    EXPECT_EQ(s["axes"], c.axes);
    EXPECT_EQ(s["dtype"], c.type);
    EXPECT_EQ(s["levels"].size(), j["generic_levels"]);
    EXPECT_EQ(s["levels"].size(), 7u);  // 1000x777 .. 16x13
    for (size_t k = 0; k < s["levels"].size(); ++k) {
      const auto& l = s["levels"][k];
      EXPECT_EQ(l["subfiletype"], k == 0 ? 0 : 1) << "level " << k;
      EXPECT_EQ(l["tile"][0], std::atoi(c.tile));
      EXPECT_EQ(l["compression"], 8);
    }
    EXPECT_EQ(j["pages"], 3) << "the levels must be SubIFDs, not pages of the main chain";
    const auto& im = j["images"][0];
    EXPECT_EQ(im["pixels"]["Type"], c.type);
    EXPECT_EQ(im["pixels"]["DimensionOrder"], "XYCZT");
    EXPECT_EQ(im["pixels"]["SizeX"], "1000");
    EXPECT_EQ(im["pixels"]["SizeY"], "777");
    EXPECT_EQ(im["pixels"]["SizeC"], std::to_string(c.size_c));
    EXPECT_EQ(im["pixels"]["SizeZ"], "1");
    EXPECT_EQ(im["pixels"]["SizeT"], "1");
    const double mpp = c.size_c == 3 ? 0.25 : 0.5;
    EXPECT_DOUBLE_EQ(std::stod(im["pixels"]["PhysicalSizeX"].get<std::string>()), mpp);
    EXPECT_DOUBLE_EQ(std::stod(im["pixels"]["PhysicalSizeY"].get<std::string>()), mpp);
    EXPECT_EQ(im["pixels"]["PhysicalSizeXUnit"], "\xC2\xB5m");
    ASSERT_EQ(im["channels"].size(), 1u);
    EXPECT_EQ(im["channels"][0]["SamplesPerPixel"], std::to_string(c.size_c));
    EXPECT_EQ(im["tiffdata"][0]["IFD"], "0");
    EXPECT_EQ(j["images"][1]["name"], "label");
    EXPECT_EQ(j["images"][2]["name"], "macro");
    EXPECT_EQ(j["images"][2]["tiffdata"][0]["IFD"], "2");
    const auto lint = test::run({"xmllint", "--noout", tmp.file("p.xml")});
    if (lint.exit_code == 127 || lint.err.find("No such file") != std::string::npos) {
      std::printf("[ info     ] xmllint missing: XML not linted\n");
    } else {
      EXPECT_EQ(lint.exit_code, 0) << lint.err;
    }
  }
}

// 8 channels of uint16 at an odd size, with names: one plane per channel
// (the main chain holds 8 directories), each with its levels; the series
// reads back as C, Y, X with the channel names of the source.
TEST(OmeTiff, EightChannelsU16WithNames) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const std::vector<std::string> names = {"DAPI", "CD3", "CD8 & <CD4>", "PD-L1", "Ki67", "\xC2\xB5-chan", "AF", "x\"y"};
  const NamedSource src(channels_image(PixelFormat{SampleType::kU16, 8}, 1000, 777, 7), 0.325, names);
  const auto j = write_both(src, tmp, "c8");
  ASSERT_EQ(j["series"].size(), 1u);
  const auto& s = j["series"][0];
  EXPECT_EQ(s["axes"], "CYX");
  EXPECT_EQ(s["dtype"], "uint16");
  const std::vector<std::vector<int64_t>> want = {{8, 777, 1000}, {8, 389, 500}, {8, 195, 250}, {8, 98, 125},
                                                  {8, 49, 63},    {8, 25, 32},   {8, 13, 16}};
  EXPECT_EQ(level_shapes(s), want);
  EXPECT_EQ(j["pages"], 8);
  const auto& im = j["images"][0];
  EXPECT_EQ(im["pixels"]["SizeC"], "8");
  EXPECT_EQ(im["pixels"]["Interleaved"], "false");
  EXPECT_DOUBLE_EQ(std::stod(im["pixels"]["PhysicalSizeX"].get<std::string>()), 0.325);
  ASSERT_EQ(im["channels"].size(), 8u);
  ASSERT_EQ(im["tiffdata"].size(), 8u);
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(im["channels"][c]["Name"], names[c]);
    EXPECT_EQ(im["channels"][c]["SamplesPerPixel"], "1");
    EXPECT_EQ(im["tiffdata"][c]["IFD"], std::to_string(c));
    EXPECT_EQ(im["tiffdata"][c]["FirstC"], std::to_string(c));
  }
}

// Names and a description from a hostile or old input (Latin-1 bytes,
// control characters, markup) still make well-formed XML: markup escaped,
// what XML cannot hold replaced by U+FFFD, never a failed run.
TEST(OmeTiff, HostileNamesAndDescription) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const std::vector<std::string> names = {"a</Channel><x>", std::string("lat\xB5", 4),
                                          std::string("c\x01") + '\0' + "d"};
  const NamedSource src(channels_image(PixelFormat{SampleType::kU8, 3}, 64, 48, 1), 0, names);
  // 8-bit RGB is one interleaved plane: its names are not written (one
  // Channel); 3 channels of 16 bits are planes with names.
  const NamedSource src16(channels_image(PixelFormat{SampleType::kU16, 3}, 64, 48, 1), 0, names);
  const std::string desc = std::string("Aperio Image \xB5m & <b> \x02 \"q\"");
  write(src, tmp.file("h8.ome.tif"), 16, desc);
  write(src16, tmp.file("h16.ome.tif"), 16, desc);
  for (const char* f : {"h8", "h16"}) {
    const auto j = check(tmp.file(std::string(f) + ".ome.tif"), {"--xml-out", tmp.file("h.xml")});
    EXPECT_EQ(j["images"][0]["description"], "Aperio Image \xEF\xBF\xBDm & <b> \xEF\xBF\xBD \"q\"") << f;
    const auto lint = test::run({"xmllint", "--noout", tmp.file("h.xml")});
    if (lint.exit_code != 127) {
      EXPECT_EQ(lint.exit_code, 0) << f << ": " << lint.err;
    }
  }
  const auto j = check(tmp.file("h16.ome.tif"));
  ASSERT_EQ(j["images"][0]["channels"].size(), 3u);
  EXPECT_EQ(j["images"][0]["channels"][0]["Name"], "a</Channel><x>");
  EXPECT_EQ(j["images"][0]["channels"][1]["Name"], "lat\xEF\xBF\xBD");
  EXPECT_EQ(j["images"][0]["channels"][2]["Name"],
            "c\xEF\xBF\xBD\xEF\xBF\xBD"
            "d");
}

// Unknown mpp: no PhysicalSize at all (rather than a made-up 1 µm).
TEST(OmeTiff, UnknownMppWritesNoPhysicalSize) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const MemorySource src(channels_image(kGray8, 300, 200, 3), 0);
  const auto j = write_both(src, tmp, "g");
  const auto& px = j["images"][0]["pixels"];
  EXPECT_FALSE(px.contains("PhysicalSizeX")) << px.dump();
  EXPECT_FALSE(px.contains("PhysicalSizeY")) << px.dump();
  EXPECT_EQ(px["Type"], "uint8");
}

// float32 and u32 labels, single channel and 3 channels of float (planes,
// not RGB): the levels equal the generic file's (labels by nearest, floats
// by REDUCE, as the cascade computes them).
TEST(OmeTiff, FloatAndLabels) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  struct Case {
    PixelFormat fmt;
    const char* type;
    const char* name;
  } cases[] = {{{SampleType::kF32, 1}, "float", "f1"},
               {{SampleType::kF32, 3}, "float", "f3"},
               {{SampleType::kU32, 1}, "uint32", "l1"}};
  for (const Case& c : cases) {
    const MemorySource src(channels_image(c.fmt, 517, 301, 11), 0.5);
    const auto j = write_both(src, tmp, c.name);
    EXPECT_EQ(j["images"][0]["pixels"]["Type"], c.type) << c.name;
    EXPECT_EQ(j["series"][0]["levels"].size(), 7u) << c.name;  // 517x301 .. 9x5
    EXPECT_EQ(j["pages"], c.fmt.channels) << c.name;
  }
}

// 64 channels, the most a TIFF of ours carries: 64 planes.
TEST(OmeTiff, SixtyFourChannels) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const MemorySource src(test::random_image(PixelFormat{SampleType::kU8, 64}, 131, 97, 5), 0);
  const auto j = write_both(src, tmp, "c64");
  EXPECT_EQ(j["pages"], 64);
  EXPECT_EQ(j["series"][0]["shape"], nlohmann::json({64, 97, 131}));
  EXPECT_EQ(j["images"][0]["channels"].size(), 64u);
  EXPECT_FALSE(j["images"][0]["channels"][0].contains("Name"));
}

// A 1x1, a 1xN and an Nx1 image: one level (or a few), tiles padded.
TEST(OmeTiff, TinyAndThinImages) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  struct Case {
    int64_t w, h;
    int channels;
  } cases[] = {{1, 1, 3}, {1, 300, 1}, {300, 1, 3}, {257, 1, 2}};
  for (const Case& c : cases) {
    const std::string name = "t" + std::to_string(c.w) + "x" + std::to_string(c.h);
    const MemorySource src(test::random_image(PixelFormat{SampleType::kU8, c.channels}, c.w, c.h, 9), 0);
    const auto j = write_both(src, tmp, name, 1);
    const auto& l0 = j["series"][0]["levels"][0]["shape"];
    if (c.channels == 2) {
      EXPECT_EQ(l0, nlohmann::json({2, c.h, c.w})) << name;
    } else if (c.channels == 3) {
      EXPECT_EQ(l0, nlohmann::json({c.h, c.w, 3})) << name;
    } else {
      EXPECT_EQ(l0, nlohmann::json({c.h, c.w})) << name;
    }
  }
}

// Small tiles and sizes just above and below their multiples: every
// level's edge tiles, padded, in every plane.
TEST(OmeTiff, SmallTilesAndOddSizes) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  for (int64_t tile : {16, 64})
    for (PixelFormat fmt : {kRgb8, PixelFormat{SampleType::kU16, 3}}) {
      const MemorySource src(channels_image(fmt, 4 * tile + 1, 3 * tile - 1, 5), 0);
      const auto j = write_both(src, tmp, "s" + std::to_string(tile), 8, tile);
      EXPECT_EQ(j["series"][0]["levels"][0]["tile"], nlohmann::json({tile, tile}));
    }
}

// JPEG RGB (the default for 8-bit RGB): the OME-TIFF's tiles are the
// generic file's byte for byte (same encoder, same tables), YCbCr 4:2:0.
TEST(OmeTiff, JpegRgbTilesAsGeneric) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  for (const char* name : {"j.tif", "j.ome.tiff"}) {
    const auto r = test::run_cli({"pyramid", "synthetic:700x500", tmp.file(name), "--min-size", "32"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto j = check(tmp.file("j.ome.tiff"), {"--generic", tmp.file("j.tif"), "--raw"});
  EXPECT_EQ(j["diffs"], nlohmann::json::array()) << j["diffs"].dump();
  EXPECT_EQ(j["series"][0]["levels"][0]["compression"], 7);
  EXPECT_EQ(j["series"][0]["levels"][0]["photometric"], 6);
  EXPECT_EQ(j["series"][0]["levels"].size(), 6u);  // 700x500 .. 22x16
  // libtiff decodes the first directory as it does the generic file's.
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("j.ome.tiff"), 0).view(),
                              test::read_tiff_libtiff(tmp.file("j.tif"), 0).view()),
            "");
}

// Bad input: a one-line error, exit 1, nothing at the output path.
TEST(OmeTiff, BadInputRefusedCleanly) {
  test::TempDir tmp;
  const auto expect_refused = [&](const std::vector<std::string>& args, const std::string& out,
                                  const std::string& words) {
    const auto r = test::run_cli(args);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(access(out.c_str(), F_OK), 0) << out << " left behind";
  };
  const std::string out = tmp.file("o.ome.tif");
  expect_refused({"pyramid", "synthetic:300x200,16bit", out, "--compression", "jpeg"}, out, "JPEG");
  expect_refused({"pyramid", "synthetic:300x200", tmp.file("none/o.ome.tif")}, tmp.file("none/o.ome.tif"), "none");
  // The output is the input (forced to OME-TIFF by --format): refused, the
  // input left as it was.
  const std::string in = tmp.file("in.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:300x200", in}).exit_code, 0);
  std::ifstream before_f(in, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(before_f)), {});
  const auto r = test::run_cli({"pyramid", in, in, "--format", "ome-tiff"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("refusing to overwrite an input"), std::string::npos) << r.err;
  std::ifstream after_f(in, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(after_f)), {});
  EXPECT_EQ(before, after);
  for (const auto& name : tmp.list()) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

// An input 8x the budget through `--memory 4M`: peak RSS within the budget
// plus the fixed cost of a tiny run, as the generic layout's test measures.
TEST(OmeTiff, OutOfCoreMemoryBound) {
  test::TempDir tmp;
  const auto base = test::run_cli({"pyramid", "synthetic:100x100", tmp.file("tiny.ome.tif"), "--min-size", "1000"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  // 3400 x 3300 RGB: 33.7 MB of pixels, 8x the 4 MiB budget.
  const auto r = test::run_cli({"pyramid", "synthetic:3400x3300", tmp.file("big.ome.tif"), "--memory", "4M",
                                "--quality", "70", "--min-size", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(r.peak_rss_bytes, (size_t{4} << 20) + overhead)
        << "peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB, overhead " << overhead / 1048576.0 << " MiB";
  }
  std::printf("[ info     ] synthetic:3400x3300 --memory 4M: peak RSS %.1f MiB (%.1f s)\n",
              r.peak_rss_bytes / 1048576.0, r.seconds);
  if (have_tifffile()) {
    const auto j = check(tmp.file("big.ome.tif"));
    EXPECT_EQ(j["series"][0]["levels"].size(), 7u);
  }
}

}  // namespace
}  // namespace tw
