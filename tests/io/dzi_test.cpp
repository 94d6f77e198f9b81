// Deep Zoom output (`tilewave pyramid IN OUT.dzi`, io/dzi/): the tile grid
// and file names against vips dzsave's for the same options, the tiles'
// pixels against the same pyramid written as a lossless TIFF and read by
// tifffile, the descriptor through Python's xml parser, the zip through
// Python's zipfile, atomicity under kill, bad input, and an input 8x the
// memory budget.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "io/dzi/dzi_geometry.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// The oracle: python3 SCRIPT MODE ARGS...
//  grid OURS.dzi VIPS.dzi ...: descriptors equal (parsed by xml.etree), the
//    same tile files, each tile the same width and height (decoded).
//  pixels OURS.dzi REF.tif TOL: every tile equal (max |diff| <= TOL, and
//    PSNR over all tiles >= 35 dB where TOL > 0) to its rectangle of the
//    TIFF's level.
//  zip OURS.zip VIPS.zip: the same entries (vips's properties file aside),
//    ours all stored, the descriptor inside parsed.
constexpr const char* kOracle = R"PY(
import json, os, sys, zipfile
import xml.etree.ElementTree as ET
import numpy as np
import cv2

NS = '{http://schemas.microsoft.com/deepzoom/2008}'

def descriptor(path):
    root = ET.parse(path).getroot()
    assert root.tag == NS + 'Image', root.tag
    size = root.find(NS + 'Size')
    return dict(fmt=root.get('Format'), tile=int(root.get('TileSize')), overlap=int(root.get('Overlap')),
                w=int(size.get('Width')), h=int(size.get('Height')))

def tiles(dzi):
    folder = dzi[:-4] + '_files'
    out = {}
    for level in os.listdir(folder):
        if level == 'vips-properties.xml':
            continue
        for name in os.listdir(os.path.join(folder, level)):
            out[level + '/' + name] = os.path.join(folder, level, name)
    return out

def decode(path):
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    assert img is not None, path
    if img.ndim == 3:
        img = img[..., ::-1]  # BGR -> RGB
    return img

mode = sys.argv[1]
if mode == 'grid':
    args = sys.argv[2:]
    for ours, vips in zip(args[0::2], args[1::2]):
        d0, d1 = descriptor(ours), descriptor(vips)
        assert d0 == d1, (ours, d0, d1)
        t0, t1 = tiles(ours), tiles(vips)
        assert set(t0) == set(t1), (ours, sorted(set(t0) ^ set(t1))[:10])
        for k in t0:
            a, b = decode(t0[k]), decode(t1[k])
            assert a.shape == b.shape, (ours, k, a.shape, b.shape)
    print(json.dumps({'pairs': len(args) // 2}))
elif mode == 'pixels':
    import tifffile
    dzi, tif, tol = sys.argv[2], sys.argv[3], int(sys.argv[4])
    d = descriptor(dzi)
    pages = tifffile.TiffFile(tif).pages
    levels = []
    w, h = d['w'], d['h']
    while True:
        levels.append((w, h))
        if w == 1 and h == 1:
            break
        w, h = (w + 1) // 2, (h + 1) // 2
    top = len(levels) - 1
    arrays = [pages[i].asarray() for i in range(len(levels))]
    for i, (w, h) in enumerate(levels):
        assert arrays[i].shape[:2] == (h, w), (i, arrays[i].shape, w, h)
    T, O = d['tile'], d['overlap']
    worst, checked, sq, n = 0, 0, 0.0, 0
    for k, path in tiles(dzi).items():
        level, name = k.split('/')
        col, row = map(int, name.split('.')[0].split('_'))
        ref = arrays[top - int(level)]
        lh, lw = ref.shape[:2]
        x0 = max(0, col * T - (O if col > 0 else 0)); y0 = max(0, row * T - (O if row > 0 else 0))
        x1 = min(lw, (col + 1) * T + O); y1 = min(lh, (row + 1) * T + O)
        want = ref[y0:y1, x0:x1]
        got = decode(path)
        assert got.shape == want.shape, (k, got.shape, want.shape)
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        worst = max(worst, int(diff.max()))
        sq += float((diff.astype(np.float64) ** 2).sum())
        n += diff.size
        checked += 1
    peak = 255.0 if arrays[0].dtype == np.uint8 else 65535.0
    psnr = 10 * np.log10(peak * peak / max(sq / n, 1e-12))
    assert worst <= tol, (worst, tol)
    assert tol == 0 or psnr >= 35, psnr
    print(json.dumps({'tiles': checked, 'max_diff': worst, 'psnr': psnr}))
elif mode == 'zip':
    ours, vips = zipfile.ZipFile(sys.argv[2]), zipfile.ZipFile(sys.argv[3])
    n0 = {i.filename for i in ours.infolist()}
    n1 = {i.filename for i in vips.infolist() if not i.filename.endswith('vips-properties.xml')}
    assert n0 == n1, sorted(n0 ^ n1)[:10]
    assert all(i.compress_type == zipfile.ZIP_STORED for i in ours.infolist())
    assert ours.testzip() is None
    base = os.path.basename(sys.argv[2])[:-4]
    root = ET.fromstring(ours.read(base + '/' + base + '.dzi'))
    assert root.tag == NS + 'Image'
    print(json.dumps({'entries': len(n0)}))
)PY";

class Dzi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("cv2") || !test::python_has("tifffile")) GTEST_SKIP() << "python3 cv2/tifffile missing";
    oracle_ = tmp_.file("dzi_oracle.py");
    std::ofstream(oracle_) << kOracle;
  }
  test::RunResult oracle(const std::vector<std::string>& args) { return test::run_python(oracle_, args); }
  static bool have_vips() { return test::run({"vips", "--version"}).exit_code == 0; }
  static bool exists(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
  }
  // A lossless TIFF written by libtiff (independent of our writer).
  std::string input(int64_t w, int64_t h, PixelFormat fmt = kRgb8) {
    const std::string path =
        tmp_.file("in" + std::to_string(w) + "x" + std::to_string(h) + "_" + std::to_string(fmt.channels) + ".tif");
    test::TiffSpec spec;
    spec.compression = 8;  // deflate
    spec.tile_w = spec.tile_h = 64;
    test::write_tiff(path, test::pattern_image(fmt, w, h, static_cast<uint64_t>(w * 7 + h)).view(), spec);
    return path;
  }
  test::TempDir tmp_;
  std::string oracle_;
};

struct GridCase {
  int64_t w, h, tile;
  int overlap;
};

// Same levels, same file names, same tile sizes at the edges as vips dzsave.
TEST_F(Dzi, GridAndNamesMatchVipsDzsave) {
  if (!have_vips()) GTEST_SKIP() << "vips missing";
  const GridCase cases[] = {{1, 1, 254, 1},      {1, 300, 17, 0},    {300, 1, 254, 3},    {255, 257, 254, 1},
                            {255, 257, 17, 3},   {255, 257, 256, 0}, {1000, 777, 254, 1}, {1000, 777, 256, 0},
                            {1000, 777, 100, 3}, {1000, 777, 17, 1}, {512, 512, 256, 1}};
  std::vector<std::string> pairs;
  int n = 0;
  for (const GridCase& c : cases) {
    const std::string in = input(c.w, c.h);
    const std::string ours = tmp_.file("o" + std::to_string(n) + ".dzi");
    const std::string vips = tmp_.file("v" + std::to_string(n++));
    const auto r = test::run_cli({"pyramid", in, ours, "--tile", std::to_string(c.tile), "--overlap",
                                  std::to_string(c.overlap), "--compression", "png"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = test::run({"vips", "dzsave", in, vips, "--tile-size", std::to_string(c.tile), "--overlap",
                              std::to_string(c.overlap), "--suffix", ".png"});
    ASSERT_EQ(v.exit_code, 0) << v.err;
    pairs.push_back(ours);
    pairs.push_back(vips + ".dzi");
  }
  std::vector<std::string> args{"grid"};
  args.insert(args.end(), pairs.begin(), pairs.end());
  const auto c = oracle(args);
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

// PNG tiles hold exactly the level's pixels (the same pass written as a
// lossless TIFF, read by tifffile); JPEG ones within the codec's error.
TEST_F(Dzi, TilesEqualTheLevelsPixels) {
  struct Case {
    std::string src, tile, overlap, compression;
    int tol;
  };
  const Case cases[] = {{"synthetic:1000x777", "254", "1", "png", 0},
                        {"synthetic:1000x777", "254", "1", "jpeg", 90},
                        {"synthetic:515x263,gray,16bit", "100", "3", "png", 0},
                        {"synthetic:257x255,gray", "17", "0", "png", 0}};
  int n = 0;
  for (const Case& c : cases) {
    const std::string ref = tmp_.file("ref" + std::to_string(n) + ".tif");
    const std::string out = tmp_.file("t" + std::to_string(n++) + ".dzi");
    auto r = test::run_cli({"pyramid", c.src, ref, "--compression", "deflate", "--min-size", "1", "--no-associated"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_cli(
        {"pyramid", c.src, out, "--tile", c.tile, "--overlap", c.overlap, "--compression", c.compression});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto p = oracle({"pixels", out, ref, std::to_string(c.tol)});
    EXPECT_EQ(p.exit_code, 0) << c.src << " " << c.compression << ": " << p.err << p.out;
  }
}

// Every pass tile size: the re-tiling is the same whatever grid the pass
// hands over (its --tile is 256 for Deep Zoom; here the 16-bit PNG of a
// tile that is a multiple of 16 makes the pass use it too).
TEST_F(Dzi, PassTileSizeDoesNotChangeTheTiles) {
  const std::string a = tmp_.file("a.dzi"), b = tmp_.file("b.dzi"), ref = tmp_.file("ref.tif");
  ASSERT_EQ(test::run_cli(
                {"pyramid", "synthetic:700x301", ref, "--compression", "deflate", "--min-size", "1", "--no-associated"})
                .exit_code,
            0);
  for (const auto& [out, tile] : {std::pair{a, "16"}, std::pair{b, "64"}}) {
    const auto r = test::run_cli({"pyramid", "synthetic:700x301", out, "--tile", tile, "--compression", "png"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto p = oracle({"pixels", out, ref, "0"});
    EXPECT_EQ(p.exit_code, 0) << tile << ": " << p.err;
  }
}

TEST_F(Dzi, ZipHasVipsEntries) {
  if (!have_vips()) GTEST_SKIP() << "vips missing";
  const std::string in = input(600, 401);
  const std::string ours = tmp_.file("ours.zip"), vips = tmp_.file("ours_vips/ours.zip");
  ASSERT_EQ(mkdir(tmp_.file("ours_vips").c_str(), 0755), 0);
  const auto r = test::run_cli({"pyramid", in, ours, "--quality", "80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(test::run({"vips", "dzsave", in, vips}).exit_code, 0);
  const auto z = oracle({"zip", ours, vips});
  EXPECT_EQ(z.exit_code, 0) << z.err;
  // Nothing else beside it: the tiles went through a temporary folder.
  for (const std::string& name : tmp_.list())
    EXPECT_EQ(name.find(".tw-"), std::string::npos) << "temporary left: " << name;
  // --format dzi with a .zip name does the same.
  const auto f = test::run_cli({"pyramid", in, tmp_.file("f.zip"), "--format", "dzi"});
  EXPECT_EQ(f.exit_code, 0) << f.err;
}

// A killed run leaves nothing at the final paths; an interrupted one not even
// its temporary folder, and the next run into the folder removes what a
// kill -9 left.
TEST_F(Dzi, KilledRunLeavesNoOutput) {
  const std::string out = tmp_.file("big.dzi");
  for (int sig : {SIGTERM, SIGKILL}) {
    test::RunOptions kill;
    kill.terminate_after = 1.0;
    kill.signal = sig;
    const auto r = test::run_cli({"pyramid", "synthetic:30000x30000", out, "--threads", "2"}, kill);
    ASSERT_EQ(r.exit_code, 128 + sig) << "finished before the kill: make the input larger";
    EXPECT_FALSE(exists(out));
    EXPECT_FALSE(exists(tmp_.file("big_files")));
    // An interrupt removes the temporary folder at once; kill -9 cannot.
    if (sig == SIGTERM) {
      for (const std::string& name : tmp_.list())
        EXPECT_EQ(name.find(".tw-"), std::string::npos) << "temporary left after SIGTERM: " << name;
    }
  }
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:300x200", tmp_.file("small.dzi")}).exit_code, 0);
  for (const std::string& name : tmp_.list())
    EXPECT_EQ(name.find(".tw-"), std::string::npos) << "stale temporary not removed: " << name;
  EXPECT_TRUE(exists(tmp_.file("small_files/9/1_0.jpeg")));
}

void expect_refused(const test::RunResult& r, const std::string& text, int code = 1) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(Dzi, BadInputIsRefusedWithNothingWritten) {
  const std::string out = tmp_.file("o.dzi");
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200", out, "--tile", "0"}), "--tile", 2);
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200", out, "--overlap", "-1"}), "--overlap", 2);
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200,gray,16bit", out, "--compression", "jpeg"}),
                 "use --compression png");
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200", out, "--compression", "zstd"}), "JPEG or PNG");
  // float32: an op's result (the HED deconvolution) to Deep Zoom.
  expect_refused(test::run_cli({"filter", "hed", "synthetic:300x200", out}), "cannot hold");
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200", tmp_.file("missing/o.dzi")}), "does not exist");
  if (geteuid() != 0) {
    ASSERT_EQ(mkdir(tmp_.file("ro").c_str(), 0555), 0);
    expect_refused(test::run_cli({"pyramid", "synthetic:300x200", tmp_.file("ro/o.dzi")}), "not writable");
  }
  EXPECT_FALSE(exists(out));
  EXPECT_FALSE(exists(tmp_.file("o_files")));
  // A user's folder named OUT_files is never replaced...
  ASSERT_EQ(mkdir(tmp_.file("o_files").c_str(), 0755), 0);
  std::ofstream(tmp_.file("o_files/notes.txt")) << "mine";
  expect_refused(test::run_cli({"pyramid", "synthetic:300x200", out}), "refusing to replace it");
  EXPECT_TRUE(exists(tmp_.file("o_files/notes.txt")));
  EXPECT_FALSE(exists(out));
  // ... but an earlier Deep Zoom output is, in one step.
  const std::string again = tmp_.file("again.dzi");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:300x200", again}).exit_code, 0);
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:100x50", again, "--compression", "png"}).exit_code, 0);
  EXPECT_TRUE(exists(tmp_.file("again_files/7/0_0.png")));
  EXPECT_FALSE(exists(tmp_.file("again_files/9")));
  for (const std::string& name : tmp_.list())
    EXPECT_EQ(name.find(".tw-"), std::string::npos) << "temporary left: " << name;
}

// An input 8x --memory: the sink keeps a few rows of pass tiles, not levels.
// (64-pixel tiles: the pass's too, so its rows are small enough for 4M.)
TEST_F(Dzi, InputEightTimesTheBudget) {
  const std::string out = tmp_.file("ooc.dzi");
  // 1024 x 32768 gray: 32 MiB of pixels under --memory 4M.
  const auto r =
      test::run_cli({"pyramid", "synthetic:1024x32768,gray", out, "--memory", "4M", "--tile", "64", "--quality", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LT(r.peak_rss_bytes, size_t{4 + 48} << 20);
  }
  DziGeometry g{1024, 32768, 64, 1};
  const int top = g.max_level();
  EXPECT_TRUE(exists(tmp_.file("ooc_files/" + std::to_string(top) + "/" + std::to_string(g.cols(top) - 1) + "_" +
                               std::to_string(g.rows(top) - 1) + ".jpeg")));
  EXPECT_TRUE(exists(tmp_.file("ooc_files/0/0_0.jpeg")));
  EXPECT_FALSE(exists(tmp_.file("ooc_files/" + std::to_string(top) + "/" + std::to_string(g.cols(top)) + "_0.jpeg")));
}

}  // namespace
}  // namespace tw
