// `tilewave pyramid` and `tilewave info` as users run them: outputs checked by
// independent readers (tifffile + scipy, libtiff, OpenSlide, vips), level-0
// pass-through, bounded memory on images far larger than the budget, and a
// clear one-line error with nothing left behind for every kind of bad input.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <fstream>

#include "engine/cuda/device.hpp"
#include "io/tiff/tiff_source.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

int count_in(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::vector<uint8_t> raw_tile(const std::string& path, int dir, uint32_t index) {
  TIFF* t = TIFFOpen(path.c_str(), "r");
  EXPECT_NE(t, nullptr);
  TIFFSetDirectory(t, static_cast<tdir_t>(dir));
  std::vector<uint8_t> buf(static_cast<size_t>(TIFFTileSize(t)) * 4 + 4096);
  const tmsize_t n = TIFFReadRawTile(t, index, buf.data(), static_cast<tmsize_t>(buf.size()));
  TIFFClose(t);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

TEST(PyramidCli, LosslessLevelsMatchScipy) {
  if (!test::python_has("tifffile") || !test::python_has("scipy")) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  for (const char* tile : {"64", "256"}) {
    const std::string out = tmp.file(std::string("p") + tile + ".tif");
    const auto r = test::run_cli(
        {"pyramid", "synthetic:1031x517", out, "--compression", "deflate", "--tile", tile, "--min-size", "16"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto c = test::run_python(test::oracle("check_pyramid.py"), {out, "--pixels"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.out.find("\"pixels_checked\": true"), std::string::npos) << c.out;
    EXPECT_EQ(count_in(c.out, "\"shape\""), 8 + 2) << c.out;  // 1031x517 .. 9x5, label, macro
  }
}

// LZW, zstd and none decoded by libtiff; every level equals REDUCE of the
// level above as libtiff decodes it.
TEST(PyramidCli, EveryCompressionDecodesWithLibtiff) {
  test::TempDir tmp;
  for (const char* comp : {"lzw", "zstd", "none", "deflate"}) {
    for (const char* src : {"synthetic:300x211", "synthetic:257x129,gray,16bit"}) {
      const std::string out = tmp.file(std::string(comp) + ".tif");
      const auto r = test::run_cli({"pyramid", src, out, "--compression", comp, "--tile", "32", "--min-size", "8"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const int levels = test::count_tiff_directories(out) - 2;  // label and macro follow the pyramid
      ASSERT_GE(levels, 5) << comp;
      Image prev = test::read_tiff_libtiff(out, 0);
      for (int l = 1; l < levels; ++l) {
        const Image cur = test::read_tiff_libtiff(out, l);
        EXPECT_EQ(test::diff_images(cur.view(), reduce_image(prev).view()), "") << comp << " " << src << " level " << l;
        prev = Image(cur.fmt(), cur.rect());
        copy_overlap(cur.view(), prev.view());
      }
    }
  }
}

// What viewers see: OpenSlide lists every level (reduced-resolution flags),
// resolution tags carry the microns per pixel, vips and tifffile read it.
TEST(PyramidCli, ReadableByOpenSlideVipsTifffile) {
  test::TempDir tmp;
  const std::string out = tmp.file("slide.tif");
  const auto r = test::run_cli({"pyramid", "synthetic:3000x2000", out, "--quality", "85"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("5 levels"), std::string::npos) << r.out;  // 3000 -> 1500 -> 750 -> 375 -> 188 (<=256)
  const auto os = test::run({"openslide-show-properties", out});
  if (os.exit_code == 127) GTEST_SKIP() << "openslide-tools missing";
  ASSERT_EQ(os.exit_code, 0) << os.err;
  EXPECT_NE(os.out.find("openslide.level-count: '5'"), std::string::npos) << os.out;
  EXPECT_NE(os.out.find("openslide.level[4].width: '188'"), std::string::npos) << os.out;
  EXPECT_NE(os.out.find("openslide.vendor: 'generic-tiff'"), std::string::npos) << os.out;
  EXPECT_NE(os.out.find("tiff.XResolution: '40000'"), std::string::npos) << os.out;  // 0.25 um/px = 40000 px/cm
  EXPECT_NE(os.out.find("tiff.ResolutionUnit: 'centimeter'"), std::string::npos) << os.out;
  const auto vh = test::run({"vipsheader", "-f", "n-pages", out});
  if (vh.exit_code != 127) {
    ASSERT_EQ(vh.exit_code, 0) << vh.err;
    EXPECT_EQ(vh.out, "7\n");  // 5 levels + label + macro
  }
  const auto t = test::read_tiff_tags(out, 3);
  EXPECT_EQ(t.subfile_type, 1u);
  EXPECT_EQ(t.photometric, PHOTOMETRIC_YCBCR);
  EXPECT_EQ(t.sub_h, 2);
  EXPECT_NEAR(t.xres, 40000.0 / 8, 0.01);
  EXPECT_EQ(test::read_tiff_tags(out, 5).description, "label");
  EXPECT_EQ(test::read_tiff_tags(out, 6).description, "macro");
  // OpenSlide's pixels of level 2 against libtiff's.
  if (test::python_has("openslide")) {
    const auto p = test::run({test::python(), "-c",
                              "import sys, openslide, numpy as np\n"
                              "s = openslide.OpenSlide(sys.argv[1])\n"
                              "a = np.asarray(s.read_region((0, 0), 2, s.level_dimensions[2]).convert('RGB'))\n"
                              "np.save(sys.argv[2], a)\n",
                              out, tmp.file("os.npy")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const Image os_px = test::load_npy(tmp.file("os.npy"));
    EXPECT_EQ(test::diff_images(os_px.view(), test::read_tiff_libtiff(out, 2).view(), 3), "");
  }
  // Our own reader sees the pyramid too.
  const auto info = test::run_cli({"info", out});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("levels:     5"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("0.2500 x 0.2500 microns per pixel"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("label 6"), std::string::npos) << info.out;
}

// JPEG tiles of the output's size are copied, not re-encoded: byte-identical
// level 0, and --recompress turns it off.
TEST(PyramidCli, Level0PassThrough) {
  test::TempDir tmp;
  const std::string in = tmp.file("in.tif"), out = tmp.file("out.tif"), re = tmp.file("re.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:1300x900", in, "--quality", "80", "--min-size", "2000"}).exit_code, 0);
  const auto r = test::run_cli({"pyramid", in, out, "--quality", "85", "--report", tmp.file("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("copied unchanged"), std::string::npos) << r.out;
  for (uint32_t i : {0u, 7u, 19u}) EXPECT_EQ(raw_tile(in, 0, i), raw_tile(out, 0, i)) << "tile " << i;
  EXPECT_EQ(test::read_json(tmp.file("r.json"))["tiles_passed_through"], 24);
  ASSERT_EQ(test::run_cli({"pyramid", in, re, "--quality", "85", "--recompress"}).exit_code, 0);
  EXPECT_NE(raw_tile(in, 0, 7), raw_tile(re, 0, 7));
  // Level 1 is the same either way (computed from the decoded pixels).
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(out, 1).view(), test::read_tiff_libtiff(re, 1).view(), 0), "");
  // Label and macro come across unchanged (they are compressed beside the pass).
  const TiffSource a(in), b(out);
  ASSERT_EQ(b.info().associated.size(), 2u);
  for (const char* name : {"label", "macro"})
    EXPECT_EQ(test::diff_images(a.read_associated(name).view(), b.read_associated(name).view(), 0), "") << name;
}

// Peak RSS stays under --memory plus a fixed overhead for an image many
// times larger than the budget, in rows and (for a very wide image) in
// stripes.
TEST(PyramidCli, OutOfCoreMemoryBound) {
  test::TempDir tmp;
  // The fixed cost: a tiny pyramid on the same default device (with a GPU,
  // the CUDA driver and context alone take ~100 MB of RSS).
  const auto base = test::run_cli({"pyramid", "synthetic:100x100", tmp.file("tiny.tif"), "--min-size", "1000"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  struct Case {
    const char* input;
    const char* memory;
    size_t budget;
  } cases[] = {{"synthetic:12000x8000", "32M", size_t{32} << 20},    // 288 MB of pixels, 9x the budget
               {"synthetic:120000x1000", "16M", size_t{16} << 20}};  // one 256-row band is 92 MB: stripes
  for (const auto& c : cases) {
    const std::string out = tmp.file("big.tif");
    const auto r = test::run_cli(
        {"pyramid", c.input, out, "--memory", c.memory, "--quality", "70", "--report", tmp.file("big.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (!test::kSanitizerBuild) {
      EXPECT_LE(r.peak_rss_bytes, c.budget + overhead)
          << c.input << ": peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB, budget " << c.memory << ", overhead "
          << overhead / 1048576.0 << " MiB";
    }
    std::printf("[ info     ] %s --memory %s: peak RSS %.1f MiB (%.1f s)\n", c.input, c.memory,
                r.peak_rss_bytes / 1048576.0, r.seconds);
  }
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;  // OUT is replaced by the output path
  std::string fragment;
  int exit_code;
};

TEST(PyramidCli, BadInputOneLineNothingLeft) {
  test::TempDir tmp;
  const std::string good = tmp.file("good.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:600x400", good, "--min-size", "1000"}).exit_code, 0);
  { std::ofstream(tmp.file("notes.txt")) << "not an image\n"; }
  // A JPEG tile damaged in place.
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:600x400", tmp.file("bad.tif"), "--min-size", "1000"}).exit_code, 0);
  test::damage_tiff_tile(tmp.file("bad.tif"), 4);
  // Truncated: the file cut at two thirds.
  {
    std::ifstream in(good, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(tmp.file("cut.tif"), std::ios::binary) << bytes.substr(0, bytes.size() * 2 / 3);
  }
  {
    TIFF* t = TIFFOpen(tmp.file("float.tif").c_str(), "w");
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 8);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 8);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 64);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 8);
    std::vector<double> px(64, 0.5);
    TIFFWriteEncodedStrip(t, 0, px.data(), 512);
    TIFFClose(t);
  }
  const std::vector<BadCase> cases = {
      {"missing file", {"pyramid", tmp.file("nope.svs"), "OUT"}, "No such file", 1},
      {"non-image", {"pyramid", tmp.file("notes.txt"), "OUT"}, "not a TIFF", 1},
      {"truncated", {"pyramid", tmp.file("cut.tif"), "OUT"}, "TIFF", 1},
      {"corrupt tile", {"pyramid", tmp.file("bad.tif"), "OUT", "--recompress"}, "corrupt JPEG", 1},
      {"float pixels", {"pyramid", tmp.file("float.tif"), "OUT"}, "floating-point", 1},
      {"missing folder", {"pyramid", "synthetic:100x100", tmp.file("no/such/dir/out.tif")}, "does not exist", 1},
      {"tile 0", {"pyramid", "synthetic:100x100", "OUT", "--tile", "0"}, "--tile", 2},
      {"tile 100", {"pyramid", "synthetic:100x100", "OUT", "--tile", "100"}, "multiple of 16", 2},
      {"quality 500", {"pyramid", "synthetic:100x100", "OUT", "--quality", "500"}, "--quality", 2},
      {"memory junk", {"pyramid", "synthetic:100x100", "OUT", "--memory", "lots"}, "--memory", 2},
      {"memory tiny", {"pyramid", "synthetic:100x100", "OUT", "--memory", "1K"}, "--memory", 2},
      {"unknown option", {"pyramid", "synthetic:100x100", "OUT", "--qualty", "5"}, "unknown option", 2},
      {"bad compression", {"pyramid", "synthetic:100x100", "OUT", "--compression", "webp"}, "compression", 1},
      {"jpeg on 16 bit", {"pyramid", "synthetic:100x100,16bit", "OUT", "--compression", "jpeg"}, "8-bit", 1},
      {"absurd size", {"pyramid", "synthetic:0x100", "OUT"}, "synthetic", 1},
      {"min-size 0", {"pyramid", "synthetic:100x100", "OUT", "--min-size", "0"}, "--min-size", 2},
      {"output is input", {"pyramid", good, good}, "is the input file", 1},
      {"one argument", {"pyramid", good}, "OUTPUT", 2},
      {"unknown command", {"pyramd"}, "unknown command", 2},
      {"unknown device", {"pyramid", "synthetic:100x100", "OUT", "--device", "tpu"}, "unknown device", 1},
      {"device number", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda:x"}, "invalid device", 1},
      {"device list", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda:0,,1"}, "invalid device", 1},
      {"device list end", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda:0,"}, "invalid device", 1},
      {"device list sign", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda:0,-1"}, "invalid device", 1},
      {"gpu-memory tiny", {"pyramid", "synthetic:100x100", "OUT", "--gpu-memory", "10K"}, "--gpu-memory", 2},
  };
  // Without a GPU, asking for one is a clear error (with one, it would run).
  std::vector<BadCase> all = cases;
  if (cuda_devices().empty())
    all.push_back(
        {"cuda without a GPU", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda"}, "--device cuda", 1});
  else
    all.push_back({"cuda device 99", {"pyramid", "synthetic:100x100", "OUT", "--device", "cuda:99"}, "cuda:99", 1});
  for (const auto& c : all) {
    const std::string out = tmp.file("out-" + std::to_string(&c - all.data()) + ".tif");
    std::vector<std::string> args = c.args;
    for (auto& a : args)
      if (a == "OUT") a = out;
    const auto before = tmp.list();
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.name << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << c.name << ": " << r.err;
    EXPECT_EQ(count_in(r.err, "\n"), 1) << c.name << ": not one line: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(tmp.list().size(), before.size()) << c.name << ": left files behind";
    std::ifstream probe(out);
    EXPECT_FALSE(probe.good()) << c.name << ": output exists";
  }
}

// Checks a refused run: exit 1, one line saying `says`, nothing new in tmp.
void expect_refused_cleanly(const test::TempDir& tmp, const std::vector<std::string>& args, const std::string& says) {
  auto before = tmp.list();
  const auto r = test::run_cli(args);
  auto after = tmp.list();
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  const std::string what = args[0] + " " + args[args.size() > 2 ? 2 : 1];
  EXPECT_EQ(r.exit_code, 1) << what << ": " << r.err;
  EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << what << ": " << r.err;
  EXPECT_EQ(count_in(r.err, "\n"), 1) << what << ": not one line: " << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(after, before) << what << ": left files behind";
}

// MinIsWhite is inverted from its white (255, 65535); float32 has none, and
// was once passed through as its own negative by every command. It is
// refused where the file is opened, so every command says the same; 16-bit
// MinIsWhite is inverted.
TEST(PyramidCli, MinIsWhiteWithoutAWhiteIsRefusedEverywhere) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const auto made = test::run({test::python(), "-c",
                               "import sys, numpy as np, tifffile as tf\n"
                               "a = np.linspace(0, 1, 100 * 100, dtype=np.float32).reshape(100, 100)\n"
                               "tf.imwrite(sys.argv[1] + '/mwf.tif', a, photometric='miniswhite')\n"
                               "b = (np.arange(100 * 100) * 7).astype(np.uint16).reshape(100, 100)\n"
                               "tf.imwrite(sys.argv[1] + '/mw16.tif', b, photometric='miniswhite')\n"
                               "np.save(sys.argv[1] + '/mw16.npy', 65535 - b)\n",
                               tmp.path()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string in = tmp.file("mwf.tif");
  const std::string says = "mwf.tif: floating-point MinIsWhite images are not supported";
  expect_refused_cleanly(tmp, {"info", in}, says);
  expect_refused_cleanly(tmp, {"pyramid", in, tmp.file("o.tif")}, says);
  expect_refused_cleanly(tmp, {"pyramid", in, tmp.file("o.zarr")}, says);
  expect_refused_cleanly(tmp, {"region", in, tmp.file("r.png"), "--rect", "0,0,10,10"}, says);
  expect_refused_cleanly(tmp, {"thumbnail", in, tmp.file("t.png"), "--size", "16"}, says);
  expect_refused_cleanly(tmp, {"filter", "gaussian", in, tmp.file("g.tif"), "--sigma", "1"}, says);
  expect_refused_cleanly(tmp, {"run", in, tmp.file("p.tif"), "filter invert"}, says);
  // 16 bits: inverted from 65535, as the lossless pyramid's level 0 shows.
  const std::string out = tmp.file("o16.tif");
  ASSERT_EQ(test::run_cli({"pyramid", tmp.file("mw16.tif"), out, "--compression", "deflate"}).exit_code, 0);
  const auto r = test::run({test::python(), "-c",
                            "import sys, numpy as np, tifffile as tf\n"
                            "a = tf.imread(sys.argv[1], key=0)\n"
                            "sys.exit(0 if np.array_equal(a, np.load(sys.argv[2])) else 'level 0 is not inverted')\n",
                            out, tmp.file("mw16.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A pyramid under a .png or .jpg name was a BigTIFF that image viewers
// cannot open (region and thumbnail write real ones there): refused by every
// command that writes a pyramid, whatever --format says.
TEST(PyramidCli, FlatImageNamesAreRefusedForPyramids) {
  test::TempDir tmp;
  const std::string says = "a pyramid cannot be a PNG or JPEG file; name it .tif, .ome.tif, .dzi or .zarr";
  for (const char* name : {"o.png", "o.jpg", "o.jpeg", "O.PNG"}) {
    const std::string out = tmp.file(name);
    expect_refused_cleanly(tmp, {"pyramid", "synthetic:100x100", out}, says);
    expect_refused_cleanly(tmp, {"pyramid", "synthetic:100x100", out, "--format", "tiff"}, says);
    expect_refused_cleanly(tmp, {"filter", "invert", "synthetic:100x100", out}, says);
    expect_refused_cleanly(tmp, {"run", "synthetic:100x100", out, "filter invert"}, says);
    expect_refused_cleanly(
        tmp, {"run", "synthetic:100x100", tmp.file("k.tif"), "filter invert", "filter invert", "--keep", "1=" + out},
        says);
  }
  EXPECT_TRUE(tmp.list().empty());
  // The flat-image commands still write real PNG and JPEG files there.
  ASSERT_EQ(test::run_cli({"region", "synthetic:100x100", tmp.file("r.png"), "--rect", "0,0,10,10"}).exit_code, 0);
  ASSERT_EQ(test::run_cli({"thumbnail", "synthetic:100x100", tmp.file("t.jpg"), "--size", "20"}).exit_code, 0);
  std::ifstream png(tmp.file("r.png"), std::ios::binary), jpg(tmp.file("t.jpg"), std::ios::binary);
  std::string png_head(8, '\0'), jpg_head(3, '\0');
  png.read(&png_head[0], 8);
  jpg.read(&jpg_head[0], 3);
  EXPECT_EQ(png_head, "\x89PNG\r\n\x1a\n");
  EXPECT_EQ(jpg_head, "\xff\xd8\xff");
}

// An interrupted run leaves neither the output nor its temporary files.
TEST(PyramidCli, InterruptedRunLeavesNothing) {
  test::TempDir tmp;
  test::RunOptions opt;
  opt.terminate_after = 0.7;
  const auto r = test::run_cli({"pyramid", "synthetic:30000x30000", tmp.file("big.tif"), "--threads", "1"}, opt);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(tmp.list().empty()) << "left: " << (tmp.list().empty() ? "" : tmp.list()[0]);
}

// Progress on stderr (forced here: stderr is not a terminal in tests).
TEST(PyramidCli, ProgressWhenAsked) {
  test::TempDir tmp;
  test::RunOptions opt;
  opt.env["TW_PROGRESS"] = "1";
  const auto r = test::run_cli({"pyramid", "synthetic:2000x2000", tmp.file("p.tif")}, opt);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pyramid: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("MP/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(100.0%)"), std::string::npos) << r.err;
  const auto quiet = test::run_cli({"pyramid", "synthetic:2000x2000", tmp.file("q.tif")});
  EXPECT_EQ(quiet.err, "");
}

// The Quick start's main job: no arguments pyramids the built-in sample.
TEST(PyramidCli, SampleWithoutArguments) {
  test::TempDir tmp;
  test::RunOptions opt;
  opt.cwd = tmp.path();
  const auto r = test::run_cli({"pyramid"}, opt);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote tilewave-sample.tif"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("openslide-show-properties"), std::string::npos) << r.out;
  const auto info = test::run_cli({"info", tmp.file("tilewave-sample.tif"), "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["levels"][0]["width"], 16384) << info.out;
}

}  // namespace
}  // namespace tw
