// OME-Zarr output (io/zarr): the store read back by python3-zarr with the
// right shapes, dtypes, chunks and multiscales metadata, its pixels equal
// to the same input's lossless generic TIFF pyramid read by tifffile (or to
// scipy's REDUCE for N channels), over pixel types, odd and tiny sizes and
// tile sizes; written atomically (nothing at OUT.zarr after a failure or a
// kill); bad paths refused; bounded memory on an input 8x the budget.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/memory_source.hpp"
#include "engine/output_folder.hpp"
#include "io/zarr/zarr_chunk.hpp"
#include "io/zarr/zarr_metadata.hpp"
#include "jobs/write_result.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

bool have_zarr() {
  return test::python_has("zarr") && test::python_has("tifffile") && test::python_has("scipy");
}
#define REQUIRE_ZARR()                                                                                   \
  do {                                                                                                   \
    if (!have_zarr()) GTEST_SKIP() << "python3-zarr, tifffile or scipy missing (tools/install-deps.sh)"; \
  } while (0)

// check_zarr.py's verdict: "" when the store passes, else its message.
std::string check_store(const std::string& store, int64_t chunk, std::vector<std::string> extra) {
  std::vector<std::string> args{store, std::to_string(chunk)};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = test::run_python(test::oracle("check_zarr.py"), args);
  return r.exit_code == 0 ? "" : "check_zarr.py " + store + ": " + r.err + r.out;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Labels past 65535 in a grid of blobs (16 bits would lose them).
Image label_image(int64_t w, int64_t h) {
  Image img(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      img.row<uint32_t>(y)[x] =
          (x % 13) < 10 && (y % 11) < 8 ? static_cast<uint32_t>(70000 + (y / 11) * 1000 + x / 13) : 0u;
  return img;
}

// ---------------------------------------------------------------- units

TEST(ZarrChunk, PlanesAreChannelFirstAndZeroOutsideTheLevel) {
  // A 4x4 tile of RGB at (4, 4) of a 6x5 level: 2 columns and 1 row inside.
  Image tile(kRgb8, Rect(4, 4, 4, 4));
  for (int64_t y = 4; y < 8; ++y)
    for (int64_t x = 4; x < 8; ++x)
      for (int c = 0; c < 3; ++c) tile.row<uint8_t>(y)[(x - 4) * 3 + c] = static_cast<uint8_t>(100 * c + 10 * y + x);
  std::vector<uint8_t> planes(48, 0xEE);
  tile_to_planes(tile.view(), 6, 5, planes.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        const uint8_t want = (x < 2 && y < 1) ? static_cast<uint8_t>(100 * c + 10 * (y + 4) + x + 4) : 0;
        EXPECT_EQ(planes[static_cast<size_t>(c * 16 + y * 4 + x)], want) << "c " << c << " y " << y << " x " << x;
      }
}

TEST(ZarrChunk, DeltaWrapsAsNumcodecs) {
  // numcodecs.Delta('<u2'): [first, then differences modulo 2^16].
  std::vector<uint16_t> v{5, 3, 65535, 0, 7};
  delta_encode(reinterpret_cast<uint8_t*>(v.data()), v.size() * 2, SampleType::kU16);
  EXPECT_EQ(v, (std::vector<uint16_t>{5, 65534, 65532, 1, 7}));
  std::vector<uint8_t> b{200, 10};
  delta_encode(b.data(), b.size(), SampleType::kU8);
  EXPECT_EQ(b, (std::vector<uint8_t>{200, 66}));
}

// Uniform chunks inside the level come from a cache: each must be the very
// bytes a fresh encoder gives, whatever came before (other values, the same
// value at the level's edge, where the rest is zero, a chunk differing in one
// byte).
TEST(ZarrChunk, UniformChunksEncodeAsAFreshEncoderWould) {
  const int64_t chunk = 32, level_w = 80, level_h = 70;
  for (Codec codec : {Codec::kDeflate, Codec::kZstd})
    for (bool delta : {false, true})
      for (PixelFormat fmt : {kGray8, kRgb8, kGray16, PixelFormat{SampleType::kU32, 1}}) {
        ZarrCompression c;
        c.codec = codec;
        c.delta = delta;
        ZarrChunkEncoder cached(fmt, chunk, c);
        std::vector<uint8_t> got, want;
        for (int round = 0; round < 2; ++round)
          for (int v : {0, 255, 7, 0, 1, 2, 3, 4, 5, 6, 8, 9, 255})
            for (const Rect& r : {Rect(0, 0, chunk, chunk), Rect(32, 32, chunk, chunk), Rect(64, 32, chunk, chunk),
                                  Rect(32, 64, chunk, chunk)})
              for (bool odd : {false, true}) {
                Image tile(fmt, r);
                for (int64_t y = r.y; y < r.y1(); ++y)
                  std::memset(tile.row_bytes(y), v, tile.view().row_length_bytes());
                if (odd) tile.row_bytes(r.y1() - 1)[tile.view().row_length_bytes() - 1] ^= 1;
                cached.encode(tile.view(), level_w, level_h, got);
                ZarrChunkEncoder(fmt, chunk, c).encode(tile.view(), level_w, level_h, want);
                ASSERT_EQ(got, want) << codec_name(codec) << " delta " << delta << " " << fmt.str() << " value " << v
                                     << " at " << r.x << "," << r.y << " odd " << odd;
              }
      }
}

TEST(ZarrChunk, RefusesCodecsZarrReadersLack) {
  for (Codec c : {Codec::kJpeg, Codec::kLzw, Codec::kPng}) {
    ZarrCompression z;
    z.codec = c;
    try {
      z.validate(kRgb8);
      ADD_FAILURE() << codec_name(c) << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("deflate, zstd or none"), std::string::npos) << e.what();
    }
  }
  ZarrCompression z;
  z.level = 13;
  EXPECT_THROW(z.validate(kGray8), InputError);
}

TEST(ZarrMetadata, ArraysAndMultiscales) {
  ZarrImageSpec s;
  s.name = "slide";
  s.fmt = PixelFormat{SampleType::kU16, 2};
  s.chunk = 64;
  s.levels = {{1000, 777}, {500, 389}};
  s.mpp_x = 0.25, s.mpp_y = 0.5;
  s.channel_names = {"DAPI", "CD3"};
  const nlohmann::json a = zarr_array_json(s, 1);
  EXPECT_EQ(a["shape"], nlohmann::json({2, 389, 500}));
  EXPECT_EQ(a["chunks"], nlohmann::json({2, 64, 64}));
  EXPECT_EQ(a["dtype"], "<u2");
  EXPECT_EQ(a["dimension_separator"], "/");
  EXPECT_EQ(a["compressor"]["id"], "zlib");
  const nlohmann::json z = ome_zarr_attrs(s);
  const auto& m = z["multiscales"][0];
  EXPECT_EQ(m["version"], "0.4");
  EXPECT_EQ(m["axes"][1]["unit"], "micrometer");
  EXPECT_EQ(m["datasets"][1]["coordinateTransformations"][0]["scale"], nlohmann::json({1.0, 1.0, 0.5}));
  EXPECT_EQ(z["omero"]["channels"][1]["label"], "CD3");
  EXPECT_EQ(z["omero"]["channels"][0]["window"]["max"], 65535);
  // Without a pixel size: scales in pixels, no unit.
  s.mpp_x = s.mpp_y = 0;
  const nlohmann::json p = ome_zarr_attrs(s);
  EXPECT_FALSE(p["multiscales"][0]["axes"][2].contains("unit"));
  EXPECT_EQ(p["multiscales"][0]["datasets"][1]["coordinateTransformations"][0]["scale"],
            nlohmann::json({1.0, 2.0, 2.0}));
  // RGB without names: red, green, blue.
  s.fmt = kRgb8;
  s.channel_names.clear();
  const nlohmann::json rgb = ome_zarr_attrs(s);
  EXPECT_EQ(rgb["omero"]["channels"][0]["label"], "red");
  EXPECT_EQ(rgb["omero"]["channels"][2]["color"], "0000FF");
}

// N channels through write_pyramid from memory (the N-channel TIFF reader
// is not needed): 5 and 8 channels of uint16 at odd sizes, levels equal to
// scipy's REDUCE of the level before, channel names kept.
class NamedSource : public MemorySource {
 public:
  NamedSource(Image img, std::vector<std::string> names) : MemorySource(std::move(img), 0.5) {
    info_.channel_names = std::move(names);
  }
};

TEST(ZarrSink, ManyChannelsFromMemory) {
  REQUIRE_ZARR();
  test::TempDir tmp;
  struct Case {
    int channels;
    int64_t w, h, tile;
  } cases[] = {{5, 1000, 777, 256}, {8, 301, 217, 64}};
  for (const Case& c : cases) {
    const Image img = test::pattern_image(PixelFormat{SampleType::kU16, c.channels}, c.w, c.h, 7);
    test::save_npy(tmp.file("in.npy"), img.view());
    std::vector<std::string> names;
    std::string joined;
    for (int k = 0; k < c.channels; ++k) {
      names.push_back("marker " + std::to_string(k));
      joined += (k ? "," : "") + names.back();
    }
    Image copy(img.fmt(), img.rect());
    copy_overlap(img.view(), copy.view());
    const NamedSource src(std::move(copy), names);
    OutputSpec out;
    out.path = tmp.file("many.zarr");
    out.min_size = 16;
    ExecContext ctx;
    ctx.tile = c.tile;
    ctx.memory = size_t{256} << 20;
    write_pyramid(src, out, ctx);
    EXPECT_EQ(check_store(out.path, c.tile, {"--npy", tmp.file("in.npy"), "--mpp", "0.5", "--names", joined}), "")
        << c.channels << " channels";
  }
}

// ---------------------------------------------------------------- CLI

struct CliCase {
  const char* what;
  std::string input;  // a synthetic: spec, or a file name made by the test
  int64_t tile;
  std::string mpp;  // what check_zarr.py expects ("" = unknown)
};

class ZarrCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_zarr()) GTEST_SKIP() << "python3-zarr, tifffile or scipy missing (tools/install-deps.sh)";
  }
  // The same input as a lossless generic TIFF and as a store, compared level by level.
  void expect_same_as_tiff(const CliCase& c, std::vector<std::string> extra = {}) {
    const std::string store = tmp_.file("out.zarr"), ref = tmp_.file("ref.tif");
    std::vector<std::string> expect_files = tmp_.list();
    for (const char* name : {"out.zarr", "ref.tif"})
      if (std::find(expect_files.begin(), expect_files.end(), name) == expect_files.end()) expect_files.push_back(name);
    std::sort(expect_files.begin(), expect_files.end());
    std::vector<std::string> common{"--tile", std::to_string(c.tile), "--min-size", "8"};
    std::vector<std::string> z{"pyramid", c.input, store};
    z.insert(z.end(), common.begin(), common.end());
    z.insert(z.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(z);
    ASSERT_EQ(r.exit_code, 0) << c.what << ": " << r.err;
    std::vector<std::string> t{"pyramid", c.input, ref, "--compression", "deflate"};
    t.insert(t.end(), common.begin(), common.end());
    const auto rt = test::run_cli(t);
    ASSERT_EQ(rt.exit_code, 0) << c.what << ": " << rt.err;
    std::vector<std::string> args{"--tif", ref};
    if (!c.mpp.empty()) args.insert(args.end(), {"--mpp", c.mpp});
    EXPECT_EQ(check_store(store, c.tile, args), "") << c.what;
    std::vector<std::string> files = tmp_.list();
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, expect_files) << c.what << ": temporaries left beside the outputs";
  }
  test::TempDir tmp_;
};

TEST_F(ZarrCli, SyntheticRgbGray16AndOddSizes) {
  const CliCase cases[] = {
      {"RGB 1000x777 mpp 0.25", "synthetic:1000x777,mpp=0.25", 256, "0.25"},
      {"RGB just above a tile", "synthetic:257x255", 256, "0.25"},
      {"gray 1x1", "synthetic:1x1,gray,mpp=0.5", 16, "0.5"},
      {"16-bit 1xN", "synthetic:1x300,gray,16bit", 64, "0.25"},
      {"16-bit RGB Nx1", "synthetic:300x1,16bit", 16, "0.25"},
  };
  for (const CliCase& c : cases) expect_same_as_tiff(c);
}

TEST_F(ZarrCli, CompressionChoices) {
  // zstd and none are read by numcodecs too; --no-predictor drops the delta filter.
  const CliCase c{"zstd", "synthetic:300x211", 64, "0.25"};
  expect_same_as_tiff(c, {"--compression", "zstd"});
  expect_same_as_tiff({"none", "synthetic:300x211,gray", 16, "0.25"}, {"--compression", "none"});
  expect_same_as_tiff({"deflate without predictor", "synthetic:300x211,16bit", 64, "0.25"}, {"--no-predictor"});
  const nlohmann::json a = nlohmann::json::parse(slurp(tmp_.file("out.zarr/0/.zarray")));
  EXPECT_TRUE(a["filters"].is_null());
}

TEST_F(ZarrCli, FloatAndLabels) {
  const Image f = test::pattern_image(PixelFormat{SampleType::kF32, 1}, 257, 129, 3);
  test::write_tiff(tmp_.file("float.tif"), f.view(), test::TiffSpec{});
  const Image labels = label_image(301, 217);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64;
  test::write_tiff(tmp_.file("labels.tif"), labels.view(), spec);
  for (const auto& c : {CliCase{"float32", tmp_.file("float.tif"), 16, ""},
                        CliCase{"u32 labels (nearest)", tmp_.file("labels.tif"), 64, ""}}) {
    expect_same_as_tiff(c);
    std::remove(tmp_.file("ref.tif").c_str());
    remove_tree(tmp_.file("out.zarr"));
  }
  // The labels' levels are every other pixel, independently of the TIFF writer.
  test::save_npy(tmp_.file("labels.npy"), labels.view());
  ASSERT_EQ(test::run_cli({"pyramid", tmp_.file("labels.tif"), tmp_.file("l.zarr"), "--min-size", "16"}).exit_code, 0);
  EXPECT_EQ(check_store(tmp_.file("l.zarr"), 256, {"--npy", tmp_.file("labels.npy")}), "");
  const nlohmann::json z = nlohmann::json::parse(slurp(tmp_.file("l.zarr/.zattrs")));
  EXPECT_EQ(z["multiscales"][0]["type"], "nearest");
}

TEST_F(ZarrCli, FiveChannelTiffWhereTheReaderTakesIt) {
  const Image img = test::pattern_image(PixelFormat{SampleType::kU16, 5}, 300, 211, 11);
  test::save_npy(tmp_.file("in.npy"), img.view());
  test::TiffSpec spec;
  spec.compression = 8;  // deflate
  test::write_tiff(tmp_.file("five.tif"), img.view(), spec);
  const auto r = test::run_cli({"pyramid", tmp_.file("five.tif"), tmp_.file("five.zarr"), "--min-size", "16"});
  if (r.exit_code != 0 && r.err.find("channel") != std::string::npos)
    GTEST_SKIP() << "this build's TIFF reader refuses 5 channels: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(check_store(tmp_.file("five.zarr"), 256, {"--npy", tmp_.file("in.npy")}), "");
}

// Channel names of an OME-TIFF input (written by tifffile) become the
// store's omero labels, where this build reads OME-TIFF channels.
TEST_F(ZarrCli, ChannelNamesFromOmeTiff) {
  std::ofstream(tmp_.file("make.py")) << R"(import sys, numpy as np, tifffile
a = np.random.default_rng(1).integers(0, 4000, (3, 211, 300)).astype(np.uint16)
tifffile.imwrite(sys.argv[1], a, ome=True, tile=(64, 64),
                 metadata={'axes': 'CYX', 'Channel': {'Name': ['DAPI', 'CD3', 'CD8']}})
np.save(sys.argv[2], a.transpose(1, 2, 0))
)";
  ASSERT_EQ(test::run({test::python(), tmp_.file("make.py"), tmp_.file("in.ome.tif"), tmp_.file("in.npy")}).exit_code,
            0);
  const auto r = test::run_cli({"pyramid", tmp_.file("in.ome.tif"), tmp_.file("ch.zarr"), "--min-size", "16"});
  if (r.exit_code != 0) GTEST_SKIP() << "this build does not read the OME-TIFF's channels: " << r.err;
  EXPECT_EQ(check_store(tmp_.file("ch.zarr"), 256, {"--npy", tmp_.file("in.npy"), "--names", "DAPI,CD3,CD8"}), "");
}

// The README's and docs/outputs/zarr.md's reading snippet runs as written.
TEST_F(ZarrCli, DocsSnippetRuns) {
  const std::string doc = slurp(test::source_dir() + "/docs/outputs/zarr.md");
  const auto begin = doc.find("```python\n");
  ASSERT_NE(begin, std::string::npos) << "no python snippet in docs/outputs/zarr.md";
  const auto end = doc.find("```", begin + 10);
  std::ofstream(tmp_.file("snippet.py")) << doc.substr(begin + 10, end - begin - 10);
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:600x400,mpp=0.5", tmp_.file("slide.zarr")}).exit_code, 0);
  test::RunOptions opt;
  opt.cwd = tmp_.path();
  const auto r = test::run({test::python(), tmp_.file("snippet.py")}, opt);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(3, 400, 600)"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------- paths

TEST_F(ZarrCli, ReplacesOnlyAnEarlierStore) {
  const std::string store = tmp_.file("out.zarr");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:300x200", store}).exit_code, 0);
  // A second run replaces the first store whole (no chunk of it is left).
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x50", store, "--tile", "16"}).exit_code, 0);
  EXPECT_EQ(check_store(store, 16, {"--levels", "1", "--mpp", "0.25"}), "");
  EXPECT_FALSE(exists(store + "/0/0/0/15")) << "a chunk of the old store is left";
  EXPECT_EQ(tmp_.list().size(), 1u);

  // A file, a folder that is not a store, a link: refused and left as they were.
  std::ofstream(tmp_.file("file.zarr")) << "mine";
  ASSERT_EQ(::mkdir(tmp_.file("notes.zarr").c_str(), 0755), 0);
  std::ofstream(tmp_.file("notes.zarr/a.txt")) << "keep";
  ASSERT_EQ(::symlink(store.c_str(), tmp_.file("link.zarr").c_str()), 0);
  const struct {
    const char* path;
    const char* why;
  } bad[] = {{"file.zarr", "is a file"}, {"notes.zarr", "not an OME-Zarr store"}, {"link.zarr", "symbolic link"}};
  for (const auto& b : bad) {
    for (const char* format : {"", "zarr"}) {
      std::vector<std::string> args{"pyramid", "synthetic:100x100", tmp_.file(b.path)};
      if (*format) args.insert(args.end(), {"--format", format});
      const auto r = test::run_cli(args);
      EXPECT_EQ(r.exit_code, 1) << b.path;
      EXPECT_NE(r.err.find(b.why), std::string::npos) << b.path << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    }
  }
  EXPECT_EQ(slurp(tmp_.file("file.zarr")), "mine");
  EXPECT_EQ(slurp(tmp_.file("notes.zarr/a.txt")), "keep");
  EXPECT_EQ(tmp_.list().size(), 4u) << "temporaries left";
}

// A folder that merely holds a .zgroup is not an earlier store: replacing
// it would delete the user's files beside it. Only a store as this sink
// writes it (.zgroup, .zattrs with multiscales, level arrays) is replaced,
// as Deep Zoom replaces only an earlier OUT_files (dzi_test.cpp).
TEST_F(ZarrCli, ReplacesNoFolderThatOnlyHoldsAZgroup) {
  const auto group = [&](const std::string& name) {
    const std::string dir = tmp_.file(name);
    EXPECT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::ofstream(dir + "/.zgroup") << "{\"zarr_format\": 2}";
    return dir;
  };
  // A user's group with notes; a group whose .zattrs is not an image's; an
  // image store with a non-level folder; a level without a .zarray.
  const std::string notes = group("notes.zarr");
  std::ofstream(notes + "/notes.txt") << "keep";
  const std::string other = group("other.zarr");
  std::ofstream(other + "/.zattrs") << "{\"purpose\": \"my data\"}";
  ASSERT_EQ(::mkdir((other + "/0").c_str(), 0755), 0);
  std::ofstream(other + "/0/.zarray") << "{}";
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x100", tmp_.file("mixed.zarr")}).exit_code, 0);
  ASSERT_EQ(::mkdir(tmp_.file("mixed.zarr/labels").c_str(), 0755), 0);
  std::ofstream(tmp_.file("mixed.zarr/labels/.zgroup")) << "{}";
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x100", tmp_.file("bare.zarr")}).exit_code, 0);
  ASSERT_EQ(::mkdir(tmp_.file("bare.zarr/7").c_str(), 0755), 0);
  for (const std::string name : {"notes.zarr", "other.zarr", "mixed.zarr", "bare.zarr"}) {
    for (const char* format : {"", "zarr"}) {
      std::vector<std::string> args{"pyramid", "synthetic:64x64", tmp_.file(name)};
      if (*format) args.insert(args.end(), {"--format", format});
      auto before = tmp_.list();
      const auto r = test::run_cli(args);
      auto after = tmp_.list();
      std::sort(before.begin(), before.end());
      std::sort(after.begin(), after.end());
      EXPECT_EQ(r.exit_code, 1) << name << ": " << r.err;
      EXPECT_NE(r.err.find("is a folder that is not an OME-Zarr store"), std::string::npos) << name << ": " << r.err;
      EXPECT_NE(r.err.find("refusing to replace it"), std::string::npos) << name << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
      EXPECT_EQ(after, before) << name << ": temporaries left";
    }
  }
  EXPECT_EQ(slurp(notes + "/notes.txt"), "keep");
  EXPECT_TRUE(exists(notes + "/.zgroup"));
  EXPECT_EQ(slurp(other + "/.zattrs"), "{\"purpose\": \"my data\"}");
  EXPECT_TRUE(exists(tmp_.file("mixed.zarr/labels/.zgroup")));
  EXPECT_TRUE(exists(tmp_.file("mixed.zarr/0/.zarray")));
  EXPECT_TRUE(exists(tmp_.file("bare.zarr/7")));
  // A consolidated earlier store (.zmetadata) is still an earlier store.
  const std::string ours = tmp_.file("ours.zarr");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:300x200", ours}).exit_code, 0);
  std::ofstream(ours + "/.zmetadata") << "{}";
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x50", ours}).exit_code, 0);
  EXPECT_FALSE(exists(ours + "/.zmetadata")) << "the earlier store was not replaced whole";
  EXPECT_FALSE(exists(ours + "/1")) << "the earlier store was not replaced whole";
}

TEST_F(ZarrCli, BadPathsAndCodecs) {
  const std::string in = tmp_.file("in.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:200x100", in, "--compression", "deflate"}).exit_code, 0);
  const std::string before = slurp(in);
  const struct {
    const char* what;
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {"output = input", {"pyramid", in, in, "--format", "zarr"}, "refusing to overwrite an input"},
      {"output a folder", {"pyramid", in, tmp_.path(), "--format", "zarr"}, "is a folder"},
      {"missing folder", {"pyramid", in, tmp_.file("no/such/out.zarr")}, "does not exist"},
      {"unwritable folder", {"pyramid", in, "/proc/out.zarr"}, "/proc"},
      {"jpeg", {"pyramid", in, tmp_.file("j.zarr"), "--compression", "jpeg"}, "deflate, zstd or none"},
      {"lzw", {"pyramid", in, tmp_.file("j.zarr"), "--compression", "lzw"}, "deflate, zstd or none"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_cli(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.what;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.what << ": " << r.err;
  }
  EXPECT_EQ(slurp(in), before) << "the input changed";
  EXPECT_EQ(tmp_.list(), std::vector<std::string>{"in.tif"});

  // A store holding the input: replacing it would delete the input. (In a
  // level's folder: beside .zgroup it would make the folder no store.)
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x100", tmp_.file("s.zarr")}).exit_code, 0);
  const std::string inner = tmp_.file("s.zarr/0/in.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:64x64", inner, "--compression", "deflate"}).exit_code, 0);
  const auto r = test::run_cli({"pyramid", inner, tmp_.file("s.zarr")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lies inside the output"), std::string::npos) << r.err;
  EXPECT_TRUE(exists(inner));
}

// A run that fails part way (a truncated input) and one that is killed
// leave nothing at OUT.zarr; the killed run's temporary folder is removed
// by the next run beside it.
TEST_F(ZarrCli, AtomicAfterFailureAndKill) {
  const std::string in = tmp_.file("in.tif");
  ASSERT_EQ(
      test::run_cli({"pyramid", "synthetic:2000x3000", in, "--compression", "none", "--min-size", "3000"}).exit_code,
      0);
  ASSERT_EQ(::truncate(in.c_str(), 2000 * 1500 * 3), 0);  // the lower half's tiles lie past the end
  const auto fail = test::run_cli({"pyramid", in, tmp_.file("out.zarr"), "--tile", "64"});
  EXPECT_NE(fail.exit_code, 0);
  EXPECT_EQ(std::count(fail.err.begin(), fail.err.end(), '\n'), 1) << fail.err;
  EXPECT_EQ(tmp_.list(), std::vector<std::string>{"in.tif"}) << "left after a failure";

  for (int sig : {SIGTERM, SIGKILL}) {
    test::RunOptions opt;
    opt.terminate_after = 1.0;  // well after the store's temporary folder is made, long before the end
    opt.signal = sig;
    const auto r = test::run_cli({"pyramid", "synthetic:20000x20000", tmp_.file("big.zarr"), "--tile", "64"}, opt);
    EXPECT_NE(r.exit_code, 0) << "the run ended before the signal: make the input larger";
    EXPECT_FALSE(exists(tmp_.file("big.zarr"))) << "signal " << sig;
    // An interrupt removes the temporary folder at once; kill -9 cannot.
    if (sig == SIGTERM) {
      EXPECT_EQ(tmp_.list(), std::vector<std::string>{"in.tif"}) << "left after SIGTERM";
    }
    if (sig == SIGKILL) {
      EXPECT_EQ(tmp_.list().size(), 2u) << "kill -9 should leave its temporary folder";
    }
  }
  // The next run beside them removes what the killed runs left.
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:64x64", tmp_.file("small.zarr")}).exit_code, 0);
  auto names = tmp_.list();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"in.tif", "small.zarr"}));
}

// An input 8x --memory: bounded peak RSS, and the store equal to the TIFF's levels.
TEST_F(ZarrCli, OutOfCore) {
  const auto base = test::run_cli({"pyramid", "synthetic:100x100", tmp_.file("tiny.zarr"), "--min-size", "1000"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  const size_t budget = size_t{4} << 20;
  const std::string input = "synthetic:4000x3000";  // 36 MB of RGB: 9x the budget
  const auto r =
      test::run_cli({"pyramid", input, tmp_.file("big.zarr"), "--memory", "4M", "--min-size", "1000", "--tile", "256"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(r.peak_rss_bytes, budget + overhead) << "peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB";
  }
  std::printf("[ info     ] %s --memory 4M to .zarr: peak RSS %.1f MiB (%.1f s)\n", input.c_str(),
              r.peak_rss_bytes / 1048576.0, r.seconds);
  ASSERT_EQ(test::run_cli({"pyramid", input, tmp_.file("big.tif"), "--compression", "deflate", "--min-size", "1000"})
                .exit_code,
            0);
  EXPECT_EQ(check_store(tmp_.file("big.zarr"), 256, {"--tif", tmp_.file("big.tif"), "--mpp", "0.25"}), "");
}

}  // namespace
}  // namespace tw
