// The op API's filters against OpenCV and scikit-image, and their
// independence from the tiling: every op read in odd tiles equals the op read
// whole, and both equal the reference.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/memory_source.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/run_op.hpp"
#include "jobs/canny/canny_job.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/hed/hed.hpp"
#include "kernels/point/point_ops.hpp"
#include "kernels/sobel/sobel.hpp"
#include "kernels/stats/stats.hpp"
#include "tests/support/op_test.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::read_tiled;
using test::source_of;

using SourceP = std::shared_ptr<const TileSource>;
const Backend kCpu{};

class Filters : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("cv2") || !test::python_has("skimage")) GTEST_SKIP() << "OpenCV or scikit-image missing";
  }
  Image image(const std::string& name) {
    const auto r = test::run_python(test::oracle("filter_oracle.py"), {"image", name, tmp.file(name + ".npy")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::load_npy(tmp.file(name + ".npy"));
  }
  Image oracle(const std::vector<std::string>& args, const Image& in) {
    test::save_npy(tmp.file("in.npy"), in.view());
    std::vector<std::string> a = {args[0], tmp.file("in.npy")};
    a.insert(a.end(), args.begin() + 1, args.end());
    a.push_back(tmp.file("out.npy"));
    const auto r = test::run_python(test::oracle("filter_oracle.py"), a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::load_npy(tmp.file("out.npy"));
  }
  // The op's result read whole, then in two odd tilings: all equal.
  Image whole_and_tiled(const TileSource& s) {
    Image whole = read_tiled(s);
    for (int64_t t : {37, 100}) EXPECT_EQ(test::diff_images(read_tiled(s, t).view(), whole.view()), "") << "tile " << t;
    return whole;
  }
  test::TempDir tmp;
};

// Samples farther apart than `tol`, and the largest difference.
std::pair<int64_t, int> count_off(const Image& a, const Image& b, int tol) {
  int64_t n = 0;
  int worst = 0;
  const int64_t w = a.rect().w * a.fmt().channels;
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t i = 0; i < w; ++i) {
      const int d = std::abs(int(a.row<uint8_t>(y)[i]) - int(b.row<uint8_t>(y)[i]));
      worst = std::max(worst, d);
      n += d > tol;
    }
  return {n, worst};
}

TEST_F(Filters, GrayIsOpenCvLuma) {
  const Image ihc = image("ihc");
  auto g = ops::run_op(source_of(ihc), ops::Gray{}, kCpu, "gray");
  EXPECT_EQ(test::diff_images(whole_and_tiled(*g).view(), oracle({"gray"}, ihc).view()), "");
}

TEST_F(Filters, GaussianMatchesOpenCvWithinOneLevel) {
  const Image cam = image("camera");
  for (double sigma : {0.5, 1.4, 2.0, 4.5, 20.0}) {
    SCOPED_TRACE("sigma " + std::to_string(sigma));
    auto g = ops::run_op(source_of(cam), ops::make_gaussian<1>(sigma), kCpu, "gaussian");
    const Image ours = whole_and_tiled(*g);
    const auto [off, worst] = count_off(ours, oracle({"gaussian", std::to_string(sigma)}, cam), 0);
    EXPECT_LE(worst, 1);
    EXPECT_LT(off, cam.rect().w * cam.rect().h / 100) << "pixels off by one";
  }
  const Image ihc = image("ihc");  // RGB, each channel alike
  auto g = ops::run_op(source_of(ihc), ops::make_gaussian<3>(2.0), kCpu, "gaussian");
  EXPECT_LE(count_off(whole_and_tiled(*g), oracle({"gaussian", "2.0"}, ihc), 0).second, 1);
}

TEST_F(Filters, SobelMatchesOpenCvWithinOneLevel) {
  for (const char* name : {"camera", "coins"}) {
    const Image img = image(name);
    auto s = ops::run_op(source_of(img), ops::Sobel{}, kCpu, "sobel");
    const auto [off, worst] = count_off(whole_and_tiled(*s), oracle({"sobel"}, img), 0);
    EXPECT_LE(worst, 1) << name;
    EXPECT_LT(off, img.rect().w * img.rect().h / 100) << name;
  }
}

// cv2.Canny on the image smoothed by our Gaussian: identical edge maps, for
// tile sizes that cut edges everywhere.
TEST_F(Filters, CannyClassicEqualsOpenCvOnOurSmoothing) {
  struct Case {
    const char* image;
    double sigma, low, high;
  };
  for (const Case& c : {Case{"camera", 1.4, 40, 100}, Case{"coins", 1.4, 20, 60}, Case{"ihc", 2.0, 10, 30}}) {
    SCOPED_TRACE(c.image);
    Image img = image(c.image);
    SourceP src = source_of(img);
    if (img.fmt().channels == 3) src = ops::run_op(src, ops::Gray{}, kCpu, "gray");
    const Image smoothed = read_tiled(*ops::run_op(src, ops::make_gaussian<1>(c.sigma), kCpu, "smooth"));
    const Image ref = oracle({"canny", std::to_string(c.low), std::to_string(c.high)}, smoothed);
    for (int64_t tile : {16, 64, 67, 512}) {
      ReconstructJob job;
      job.tile = tile;
      job.memory = 64 << 20;
      job.scratch_near = tmp.file("canny.tif");
      ops::CannyParams p;
      p.sigma = c.sigma, p.low = c.low, p.high = c.high;
      const auto r = ops::canny_classic(src, p, job);
      EXPECT_EQ(test::diff_images(read_tiled(*r.edges, 45).view(), ref.view()), "") << "tile " << tile;
    }
  }
}

// Canny's suppression has three implementations of one rule: the functor
// (CannyNms::operator(), per pixel), the CPU's vectorised rows (cpu_block)
// and the GPU's (cuda_block, checked against the CPU by CpuVsCuda). The
// functor and the CPU rows agree on every pixel, border ones included.
TEST(CannyNms, FunctorEqualsRowKernel) {
  for (const auto& [w, h] : {std::pair<int64_t, int64_t>{300, 211}, {37, 5}, {1, 40}}) {
    const SourceP smooth =
        ops::run_op(source_of(test::pattern_image(kGray8, w, h, 3)), ops::make_gaussian<1>(1.0), kCpu, "smooth");
    const auto nms = ops::make_canny_nms(8, 24);
    const Image rows = read_tiled(*ops::run_op(smooth, nms, kCpu, "nms"), 64);
    const Rect all(0, 0, w, h);
    const Image in = smooth->read(0, all.grown(nms.radius()), nms.border());
    Image per_pixel(kGray8, all);
    const int64_t stride = static_cast<int64_t>(in.view().stride);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        nms(ops::Window<uint8_t>{in.ptr<uint8_t>(x, y), stride, 1, x, y, w, h}, per_pixel.ptr<uint8_t>(x, y));
    EXPECT_EQ(test::diff_images(rows.view(), per_pixel.view()), "") << w << "x" << h;
    int64_t weak = 0, strong = 0;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        weak += rows.ptr<uint8_t>(x, y)[0] == ops::kCannyWeak;
        strong += rows.ptr<uint8_t>(x, y)[0] == ops::kCannyStrong;
      }
    if (w > 100) {
      EXPECT_GT(weak, 0);
      EXPECT_GT(strong, 0);
    }
  }
}

// One edge chain winding through dozens of 16-pixel tiles, strong only at
// one end: hysteresis must follow it all the way.
TEST_F(Filters, CannyHysteresisFollowsChainsAcrossTiles) {
  const int64_t n = 400;
  Image img(kGray8, Rect(0, 0, n, n));
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) img.ptr<uint8_t>(x, y)[0] = 40;
  // A square spiral, 3 px wide, 10 px between turns, at low contrast (90
  // on 40: weak edges), a little brighter (110) along its first 30 px where
  // the only strong edges are; its edges form one chain of ~31000 pixels
  // from the outer end to the centre.
  auto paint = [&](int64_t cx, int64_t cy, uint8_t v) {
    for (int64_t y = cy - 1; y <= cy + 1; ++y)
      for (int64_t x = cx - 1; x <= cx + 1; ++x) img.ptr<uint8_t>(x, y)[0] = v;
  };
  int64_t x = 5, y = 5, len = n - 10, step = 0;
  const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
  for (int seg = 0; len > 10; ++seg) {
    for (int64_t s = 0; s < len; ++s, ++step, x += dx[seg % 4], y += dy[seg % 4]) paint(x, y, step < 30 ? 110 : 90);
    if (seg % 2 == 1) len -= 10;
  }
  SourceP src = source_of(img);
  const Image smoothed = read_tiled(*ops::run_op(src, ops::make_gaussian<1>(1.4), kCpu, "smooth"));
  const Image ref = oracle({"canny", "20", "105"}, smoothed);
  int64_t ref_edges = 0;
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) ref_edges += ref.ptr<uint8_t>(x, y)[0] != 0;
  ASSERT_GT(ref_edges, 30000) << "the chain should be long";
  ReconstructJob job;
  job.tile = 16;
  job.memory = 1 << 20;               // smaller than the image's stores: spills
  job.whole_image_on_device = false;  // the tiles, not the whole image's bit rows
  job.scratch_near = tmp.file("canny.tif");
  ops::CannyParams p;
  p.low = 20, p.high = 105;
  const auto r = ops::canny_classic(src, p, job);
  EXPECT_EQ(test::diff_images(read_tiled(*r.edges).view(), ref.view()), "");
  EXPECT_GT(r.hysteresis.wavefront.tile_visits, r.hysteresis.wavefront.tiles);
}

TEST_F(Filters, PointOps) {
  const Image ihc = image("ihc");
  SourceP src = source_of(ihc);
  const Image inv = whole_and_tiled(*ops::run_op(src, ops::Invert<3>{}, kCpu, "invert"));
  ops::Brightness<3> br;
  br.add = -70;
  const Image dark = whole_and_tiled(*ops::run_op(src, br, kCpu, "brightness"));
  ops::Contrast<3> co;
  co.factor = 1.7f, co.center = 100.f;
  const Image con = whole_and_tiled(*ops::run_op(src, co, kCpu, "contrast"));
  for (int64_t y = 0; y < ihc.rect().h; ++y)
    for (int64_t i = 0; i < ihc.rect().w * 3; ++i) {
      const int v = ihc.row<uint8_t>(y)[i];
      ASSERT_EQ(inv.row<uint8_t>(y)[i], 255 - v);
      ASSERT_EQ(dark.row<uint8_t>(y)[i], std::max(0, v - 70));
      ASSERT_EQ(con.row<uint8_t>(y)[i], std::clamp<int>(int(std::floor((v - 100.f) * 1.7f + 100.f + 0.5f)), 0, 255));
    }
  ops::Threshold th;
  th.t = 128;
  const Image cam = image("camera");
  const Image bin = whole_and_tiled(*ops::run_op(source_of(cam), th, kCpu, "threshold"));
  for (int64_t y = 0; y < cam.rect().h; ++y)
    for (int64_t x = 0; x < cam.rect().w; ++x)
      ASSERT_EQ(bin.ptr<uint8_t>(x, y)[0], cam.ptr<uint8_t>(x, y)[0] > 128 ? 255 : 0);
}

// Where run_op puts an op under a GPU backend: light ops (a few integer
// instructions a sample) over a host input on the CPU, the others on the GPU
// where CUDA is built; the CPU backend keeps everything.
TEST(RunOp, LightOpsOverAHostInputStayOnTheCpu) {
  const MemorySource host(Image(kGray8, Rect(0, 0, 8, 8)));
  const Backend gpu = Backend::cuda(0), cpu{};
  EXPECT_FALSE(ops::runs_on_gpu<ops::Invert<1>>(host, gpu));
  EXPECT_FALSE(ops::runs_on_gpu<ops::Invert<3>>(host, gpu));
  EXPECT_FALSE(ops::runs_on_gpu<ops::Brightness<1>>(host, gpu));
  EXPECT_FALSE(ops::runs_on_gpu<ops::Threshold>(host, gpu));
#if TW_HAVE_CUDA
  const bool cuda_built = true;
#else
  const bool cuda_built = false;
#endif
  EXPECT_EQ(ops::runs_on_gpu<ops::Gray>(host, gpu), cuda_built);
  EXPECT_EQ(ops::runs_on_gpu<ops::Contrast<1>>(host, gpu), cuda_built);  // float arithmetic: not light
  EXPECT_FALSE(ops::runs_on_gpu<ops::Gray>(host, cpu));
  // The result the CPU computes is the op's.
  Image img(kGray8, Rect(0, 0, 5, 3));
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 5; ++x) *img.ptr<uint8_t>(x, y) = static_cast<uint8_t>(40 * y + 7 * x);
  const auto inv = ops::run_op(std::make_shared<MemorySource>(std::move(img)), ops::Invert<1>{}, gpu, "invert");
  EXPECT_EQ(inv->device_tiles(), nullptr);
  const Image got = inv->read(0, Rect(0, 0, 5, 3));
  EXPECT_EQ(*got.ptr<uint8_t>(4, 2), 255 - (80 + 28));
}

TEST_F(Filters, HedMatchesScikitImage) {
  const Image ihc = image("ihc");
  const Image ours = whole_and_tiled(*ops::run_op(source_of(ihc), ops::make_hed(), kCpu, "hed"));
  const Image ref = oracle({"hed"}, ihc);
  ASSERT_EQ(ours.fmt(), ref.fmt());
  float worst = 0;
  for (int64_t y = 0; y < ihc.rect().h; ++y)
    for (int64_t i = 0; i < ihc.rect().w * 3; ++i)
      worst = std::max(worst, std::abs(ours.row<float>(y)[i] - ref.row<float>(y)[i]));
  EXPECT_LT(worst, 1e-5f);
}

// One stain alone is that channel of the three, bit for bit, on every pixel
// value (all 256^3 would be 16M pixels: every value of each channel in
// every position, plus the IHC image's colours).
TEST_F(Filters, HedStainIsThatChannelOfHed) {
  const Image ihc = image("ihc");
  Image ramp(kRgb8, Rect(0, 0, 256, 3));
  for (int64_t x = 0; x < 256; ++x)
    for (int c = 0; c < 3; ++c)
      for (int64_t y = 0; y < 3; ++y) ramp.ptr<uint8_t>(x, y)[c] = static_cast<uint8_t>(y == c ? x : 255 - x);
  for (const Image* in : std::vector<const Image*>{&ihc, &ramp}) {
    const Image all = whole_and_tiled(*ops::run_op(source_of(*in), ops::make_hed(), kCpu, "hed"));
    for (int j = 0; j < 3; ++j) {
      const Image one = whole_and_tiled(*ops::run_op(source_of(*in), ops::make_hed_stain(j), kCpu, "hed"));
      ASSERT_EQ(one.fmt(), (PixelFormat{SampleType::kF32, 1}));
      for (int64_t y = 0; y < in->rect().h; ++y)
        for (int64_t x = 0; x < in->rect().w; ++x)
          ASSERT_EQ(std::memcmp(one.ptr<float>(x, y), all.ptr<float>(x, y) + j, 4), 0) << j << ": " << x << ", " << y;
    }
  }
}

TEST_F(Filters, StatsHistogramAndOtsu) {
  const Image ihc = image("ihc");
  const auto st = ops::reduce(*source_of(ihc), ops::Stats<3>{}, kCpu, "stats");
  uint64_t sum[3] = {0, 0, 0};
  uint32_t lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
  std::vector<uint64_t> h16(16, 0);
  for (int64_t y = 0; y < ihc.rect().h; ++y)
    for (int64_t x = 0; x < ihc.rect().w; ++x)
      for (int c = 0; c < 3; ++c) {
        const uint32_t v = ihc.ptr<uint8_t>(x, y)[c];
        sum[c] += v, lo[c] = std::min(lo[c], v), hi[c] = std::max(hi[c], v);
        if (c == 1) ++h16[v * 16 / 256];
      }
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(st.sum[c], sum[c]);
    EXPECT_EQ(st.lo[c], lo[c]);
    EXPECT_EQ(st.hi[c], hi[c]);
  }
  ops::ChannelHistogram<3> h;
  h.channel = 1, h.n = 16;
  EXPECT_EQ(ops::histogram(*source_of(ihc), h, kCpu, "hist"), h16);
  for (const char* name : {"camera", "coins"}) {
    const Image g = image(name);
    const int t = ops::otsu_threshold(ops::histogram(*source_of(g), ops::ChannelHistogram<1>{}, kCpu, "h"));
    test::save_npy(tmp.file("g.npy"), g.view());
    ASSERT_EQ(
        test::run_python(test::oracle("filter_oracle.py"), {"otsu", tmp.file("g.npy"), tmp.file("t.txt")}).exit_code,
        0);
    std::ifstream f(tmp.file("t.txt"));
    int ref = -1;
    f >> ref;
    EXPECT_EQ(t, ref) << name;
  }
}

// --otsu --nonzero: a masked image's zeros do not vote (OpenCV's Otsu of the
// non-zero pixels), through the command line.
TEST_F(Filters, OtsuOfTheNonZeroPixels) {
  Image g = image("coins");
  for (int64_t y = 0; y < g.rect().h; ++y)
    for (int64_t x = 0; x < g.rect().w; ++x)
      if ((x / 37 + y / 23) % 3 == 0) g.ptr<uint8_t>(x, y)[0] = 0;  // a third of the image masked
  test::save_npy(tmp.file("g.npy"), g.view());
  ASSERT_EQ(test::run_python(test::oracle("filter_oracle.py"), {"otsu_nonzero", tmp.file("g.npy"), tmp.file("t.txt")})
                .exit_code,
            0);
  int ref = -1;
  std::ifstream(tmp.file("t.txt")) >> ref;
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64;
  test::write_tiff(tmp.file("g.tif"), g.view(), spec);
  const auto r = test::run_cli({"filter", "threshold", tmp.file("g.tif"), tmp.file("t.tif"), "--otsu", "--nonzero",
                                "--tile", "48", "--compression", "deflate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Otsu threshold: " + std::to_string(ref) + "\n"), std::string::npos) << r.out;
  const Image t = test::read_tiff_libtiff(tmp.file("t.tif"), 0);
  int64_t wrong = 0;
  for (int64_t y = 0; y < g.rect().h; ++y)
    for (int64_t x = 0; x < g.rect().w; ++x)
      wrong += t.ptr<uint8_t>(x, y)[0] != (g.ptr<uint8_t>(x, y)[0] > ref ? 255 : 0);
  EXPECT_EQ(wrong, 0);
  // Without --otsu it means nothing.
  const auto bad =
      test::run_cli({"filter", "threshold", tmp.file("g.tif"), tmp.file("u.tif"), "--value", "9", "--nonzero"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--nonzero goes with --otsu"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tw
