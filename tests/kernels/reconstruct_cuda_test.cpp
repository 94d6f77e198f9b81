// CpuVsCuda for reconstruction: the IWPP-MP kernel's result equals the CPU
// engine's exactly (the reconstruction is unique), on every variant, the
// worst cases, and across GPU tiles. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/cuda/device.hpp"
#include "engine/memory_source.hpp"
#include "jobs/reconstruct/reconstruct_job.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/maze.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image copy_of(const Image& a) {
  Image b(a.fmt(), a.rect());
  copy_overlap(a.view(), b.view());
  return b;
}

Image run(const Image& seed, const Image& mask, ReconstructParams p, bool cuda, ReconstructResult* out = nullptr,
          int64_t gpu_tile = kCudaTile, bool whole = true, bool on_device = false) {
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  ReconstructJob job;
  job.params = p;
  job.gpu_tile = gpu_tile;
  job.whole_image_on_device = whole;
  job.result_on_device = on_device;
  job.scratch_near = "/tmp/tilewave-test";
  if (cuda) job.backend.kind = Backend::Kind::kCuda;
  ReconstructResult r = reconstruct(s, m, job);
  Image img = r.image->read(0, mask.rect());
  if (out) *out = std::move(r);
  return img;
}

// The GPU's result equals the CPU's: through the tile wavefront, and solved
// whole on the device as well (binary: by the bit-plane kernel, brought
// down as its plane; grey: by the general kernel, brought down into a tile
// store, or left on the device for GPU steps).
void expect_same(const Image& seed, const Image& mask, ReconstructParams p, const std::string& what,
                 int64_t gpu_tile = kCudaTile, bool binary = false) {
  const Image c = run(seed, mask, p, false);
  for (int how_run = 0; how_run < (binary ? 2 : 3); ++how_run) {
    const bool whole = how_run > 0, on_device = how_run == 2;
    ReconstructResult gr;
    const Image g = run(seed, mask, p, true, &gr, gpu_tile, whole, on_device);
    const std::string how = what + (!whole      ? " (tiles)"
                                    : on_device ? " (whole image, left on the device)"
                                                : " (whole image)");
    EXPECT_EQ(test::diff_images(g.view(), c.view()), "") << how;
    EXPECT_GT(gr.gpu.megapixel_visits, 0) << how;
    EXPECT_EQ(gr.gpu_binary, binary) << how;
    EXPECT_EQ(gr.whole_image, whole) << how;
    EXPECT_EQ(gr.store == nullptr, whole && (binary || on_device)) << how;
    EXPECT_EQ(gr.image->device_tiles() != nullptr, on_device) << how;
  }
}

// 255 where `img` is nonzero, optionally transposed.
Image binarised(const Image& img, bool transpose = false) {
  const Rect r = img.rect();
  Image b(kGray8, transpose ? Rect(0, 0, r.h, r.w) : r);
  for (int64_t y = 0; y < r.h; ++y)
    for (int64_t x = 0; x < r.w; ++x)
      (transpose ? b.ptr<uint8_t>(y, x) : b.ptr<uint8_t>(x, y))[0] = img.ptr<uint8_t>(x, y)[0] ? 255 : 0;
  return b;
}
TEST(CpuVsCuda, ReconstructEveryVariant) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {kGray8, kGray16})
    for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
      for (int conn : {4, 8}) {
        const bool dil = m == ReconstructMethod::kDilation;
        Image mask = test::pattern_image(fmt, 1000, 777, 11);
        Image seed = copy_of(mask);
        std::mt19937_64 rng(5);
        for (int64_t y = 0; y < 777; ++y)
          for (int64_t x = 0; x < 1000; ++x) {
            const bool keep = rng() % 40 == 0;
            if (fmt.type == SampleType::kU8) {
              uint8_t& v = seed.ptr<uint8_t>(x, y)[0];
              v = keep ? v : (dil ? uint8_t(v / 3) : uint8_t(255 - (255 - v) / 3));
            } else {
              uint16_t& v = seed.ptr<uint16_t>(x, y)[0];
              v = keep ? v : (dil ? uint16_t(v / 3) : uint16_t(65535 - (65535 - v) / 3));
            }
          }
        expect_same(seed, mask, {m, conn}, fmt.str() + (dil ? " dilation " : " erosion ") + std::to_string(conn));
      }
}

// One seed in a flat mask across two GPU tiles (4096 wide each), and a maze.
TEST(CpuVsCuda, ReconstructWorstCases) {
  TW_REQUIRE_GPU();
  Image mask(kGray8, Rect(0, 0, 5000, 300));
  for (int64_t y = 0; y < 300; ++y) std::memset(mask.row<uint8_t>(y), 255, 5000);
  Image seed(kGray8, mask.rect());
  seed.fill_zero();
  seed.ptr<uint8_t>(4999, 299)[0] = 91;
  expect_same(seed, mask, {ReconstructMethod::kDilation, 8}, "single seed, two tiles");
  const int64_t W = 1003, H = 997;
  const Image maze = test::serpentine_maze(W, H);
  Image mseed(kGray8, maze.rect());
  mseed.fill_zero();
  mseed.ptr<uint8_t>(1, 1)[0] = 150;
  for (int conn : {4, 8})
    expect_same(mseed, maze, {ReconstructMethod::kDilation, conn}, "maze " + std::to_string(conn));
  // The corridor crosses the borders of 256-pixel GPU tiles back and forth.
  expect_same(mseed, maze, {ReconstructMethod::kDilation, 8}, "maze, GPU tiles of 256", 256);
}

// 255 - v for every pixel.
Image complement(const Image& a) {
  Image b = copy_of(a);
  for (int64_t y = a.rect().y; y < a.rect().y1(); ++y)
    for (int64_t x = a.rect().x; x < a.rect().x1(); ++x) b.ptr<uint8_t>(x, y)[0] = 255 - a.ptr<uint8_t>(x, y)[0];
  return b;
}

// Random masks near the percolation threshold (clusters that branch through
// many megapixels and tiles, every word layout of odd sizes) with sparse
// seeds, both connectivities, small and large GPU tiles; for erosion, their
// complements (the background floods in from the seeds' zeros).
void random_binary_cases(std::mt19937_64& rng, ReconstructMethod method) {
  const bool dil = method == ReconstructMethod::kDilation;
  for (int conn : {4, 8})
    for (const auto& [w, h] : {std::pair<int64_t, int64_t>{1000, 777}, {65, 33}, {2049, 31}, {1, 300}}) {
      // 8-connected clusters percolate above ~0.41 of the pixels, 4-connected above ~0.59.
      const unsigned percent = conn == 8 ? 42 : 60;
      Image mask(kGray8, Rect(0, 0, w, h)), seed(kGray8, Rect(0, 0, w, h));
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const bool on = rng() % 100 < percent;
          mask.ptr<uint8_t>(x, y)[0] = on ? 255 : 0;
          seed.ptr<uint8_t>(x, y)[0] = on && rng() % 300 == 0 ? 255 : 0;
        }
      if (!dil) mask = complement(mask), seed = complement(seed);
      const std::string what = std::string(dil ? "random " : "erosion ") + std::to_string(w) + "x" + std::to_string(h) +
                               " conn " + std::to_string(conn);
      for (int64_t tile : {int64_t{256}, kCudaTile}) expect_same(seed, mask, {method, conn}, what, tile, true);
    }
}

// Binary input takes the bit-plane kernel: random masks near the percolation
// threshold (clusters that branch through many megapixels and tiles, every
// word layout of odd sizes), sparse seeds, both connectivities, small GPU
// tiles; the serpentine corridors along rows and along columns (one row per
// step inside a megapixel); a seed on the last pixel.
TEST(CpuVsCuda, BinaryReconstruction) {
  TW_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  random_binary_cases(rng, ReconstructMethod::kDilation);
  for (bool columns : {false, true}) {
    const Image maze = binarised(test::serpentine_maze(1003, 997), columns);
    Image mseed(kGray8, maze.rect());
    mseed.fill_zero();
    mseed.ptr<uint8_t>(1, 1)[0] = 255;
    for (int conn : {4, 8})
      expect_same(mseed, maze, {ReconstructMethod::kDilation, conn},
                  std::string("binary maze along ") + (columns ? "columns" : "rows") + " conn " + std::to_string(conn),
                  256, true);
  }
  Image flat(kGray8, Rect(0, 0, 5000, 300)), last(kGray8, flat.rect());
  for (int64_t y = 0; y < 300; ++y) std::memset(flat.row<uint8_t>(y), 255, 5000);
  last.fill_zero();
  last.ptr<uint8_t>(4999, 299)[0] = 255;
  expect_same(last, flat, {ReconstructMethod::kDilation, 8}, "binary, single seed, two tiles", kCudaTile, true);
  // Not binary (a marker value of 91): the general kernel.
  last.ptr<uint8_t>(4999, 299)[0] = 91;
  expect_same(last, flat, {ReconstructMethod::kDilation, 8}, "gray seed", kCudaTile, false);
}

// Binary erosion (fill-holes of masks) takes the same kernel on the
// complements: the complements of the dilation cases above, across GPU
// tiles, and fill-holes' own marker (the image on its border, 255 inside)
// on random masks with holes of every size; a marker with a grey value
// falls back to the general kernel.
TEST(CpuVsCuda, BinaryErosion) {
  TW_REQUIRE_GPU();
  std::mt19937_64 rng(23);
  random_binary_cases(rng, ReconstructMethod::kErosion);
  for (bool columns : {false, true}) {
    const Image maze = complement(binarised(test::serpentine_maze(1003, 997), columns));
    Image mseed(kGray8, maze.rect());
    for (int64_t y = 0; y < maze.rect().h; ++y) std::memset(mseed.row<uint8_t>(y), 255, maze.rect().w);
    mseed.ptr<uint8_t>(1, 1)[0] = 0;
    for (int conn : {4, 8})
      expect_same(
          mseed, maze, {ReconstructMethod::kErosion, conn},
          std::string("binary erosion maze along ") + (columns ? "columns" : "rows") + " conn " + std::to_string(conn),
          256, true);
  }
  // Fill-holes: blobs (255) with holes, on a 0 background touching the border.
  for (int64_t tile : {int64_t{256}, kCudaTile}) {
    const int64_t w = 3001, h = 2003;
    Image img(kGray8, Rect(0, 0, w, h)), marker(kGray8, img.rect());
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) img.ptr<uint8_t>(x, y)[0] = rng() % 100 < 55 ? 255 : 0;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const bool edge = x == 0 || y == 0 || x == w - 1 || y == h - 1;
        marker.ptr<uint8_t>(x, y)[0] = edge ? img.ptr<uint8_t>(x, y)[0] : 255;
      }
    for (int conn : {4, 8})
      expect_same(marker, img, {ReconstructMethod::kErosion, conn}, "fill-holes tile " + std::to_string(tile), tile,
                  true);
  }
  Image flat(kGray8, Rect(0, 0, 5000, 300)), last(kGray8, flat.rect());
  flat.fill_zero();
  for (int64_t y = 0; y < 300; ++y) std::memset(last.row<uint8_t>(y), 255, 5000);
  last.ptr<uint8_t>(4999, 299)[0] = 0;
  expect_same(last, flat, {ReconstructMethod::kErosion, 8}, "binary erosion, single seed, two tiles", kCudaTile, true);
  last.ptr<uint8_t>(4999, 299)[0] = 91;
  expect_same(last, flat, {ReconstructMethod::kErosion, 8}, "grey erosion seed", kCudaTile, false);
}

// Where the bit-plane path cannot answer it declines: a binary marker above
// its mask gives the CPU's error (from the tiles), or is clipped with --clip
// (by the grey whole-image kernel); planes over the host budget go to the
// grey kernel too.
TEST(CpuVsCuda, BinaryWholeImageDeclines) {
  TW_REQUIRE_GPU();
  std::mt19937_64 rng(31);
  const int64_t w = 3001, h = 2003;
  Image mask(kGray8, Rect(0, 0, w, h)), seed(kGray8, mask.rect());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const bool on = rng() % 100 < 45;
      mask.ptr<uint8_t>(x, y)[0] = on ? 255 : 0;
      seed.ptr<uint8_t>(x, y)[0] = on && rng() % 200 == 0 ? 255 : 0;
    }
  // Out of order at one pixel.
  for (int64_t x = 0; x < w; ++x)
    if (!mask.ptr<uint8_t>(x, 1500)[0]) {
      seed.ptr<uint8_t>(x, 1500)[0] = 255;
      break;
    }
  auto job_for = [&](bool cuda, bool clip, size_t memory) {
    ReconstructJob job;
    job.params = {ReconstructMethod::kDilation, 8};
    job.clip = clip;
    job.memory = memory;
    job.scratch_near = "/tmp/tilewave-test";
    if (cuda) job.backend.kind = Backend::Kind::kCuda;
    return job;
  };
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  std::string cpu_error, gpu_error;
  try {
    reconstruct(s, m, job_for(false, false, size_t{1} << 30));
  } catch (const InputError& e) {
    cpu_error = e.what();
  }
  try {
    reconstruct(s, m, job_for(true, false, size_t{1} << 30));
  } catch (const InputError& e) {
    gpu_error = e.what();
  }
  EXPECT_NE(cpu_error, "");
  EXPECT_EQ(gpu_error, cpu_error);
  const ReconstructResult c = reconstruct(s, m, job_for(false, true, size_t{1} << 30));
  const ReconstructResult g = reconstruct(s, m, job_for(true, true, size_t{1} << 30));
  EXPECT_FALSE(g.gpu_binary) << "out of order: the grey kernel, which clips";
  EXPECT_TRUE(g.whole_image);
  EXPECT_EQ(test::diff_images(g.image->read(0, mask.rect()).view(), c.image->read(0, mask.rect()).view()), "");
  // In order, but the planes (2 x 1.5 MB) over half of a 2 MB budget.
  for (int64_t x = 0; x < w; ++x) seed.ptr<uint8_t>(x, 1500)[0] &= mask.ptr<uint8_t>(x, 1500)[0];
  MemorySource s2(copy_of(seed));
  const ReconstructResult small = reconstruct(s2, m, job_for(true, false, size_t{2} << 20));
  const ReconstructResult cpu = reconstruct(s2, m, job_for(false, false, size_t{1} << 30));
  EXPECT_FALSE(small.gpu_binary);
  EXPECT_EQ(test::diff_images(small.image->read(0, mask.rect()).view(), cpu.image->read(0, mask.rect()).view()), "");
  const ReconstructResult big = reconstruct(s2, m, job_for(true, false, size_t{1} << 30));
  EXPECT_EQ(big.store, nullptr);
  EXPECT_EQ(test::diff_images(big.image->read(0, mask.rect()).view(), cpu.image->read(0, mask.rect()).view()), "");
}

// The grey whole-image path with the marker made on the device from the mask
// (h-dome's mask - h, fill-holes' border), against the CPU given the same
// marker row by row; odd sizes down to one row and one column; a given marker
// out of order: the CPU's error, or clipped.
TEST(CpuVsCuda, GreyWholeImageMarkersMadeOnTheDevice) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {kGray8, kGray16})
    for (const auto& size : {std::pair<int64_t, int64_t>{1000, 777}, {65, 33}, {2049, 31}, {1, 300}, {300, 1}})
      for (int conn : {4, 8})
        for (bool dome : {true, false}) {
          const int64_t w = size.first, h = size.second;  // plain locals: lambdas below capture them
          const Image img = test::pattern_image(fmt, w, h, 3 + conn);
          const int64_t hh = fmt == kGray8 ? 40 : 9000, maxv = fmt == kGray8 ? 255 : 65535;
          auto job_for = [&](bool cuda, bool on_device) {
            ReconstructJob job;
            job.params = {dome ? ReconstructMethod::kDilation : ReconstructMethod::kErosion, conn};
            job.scratch_near = "/tmp/tilewave-test";
            job.result_on_device = on_device;
            job.marker_from_mask = [=](const ImageView& m, const ImageView& k) {
              for (int64_t y = m.rect.y; y < m.rect.y1(); ++y)
                for (int64_t x = m.rect.x; x < m.rect.x1(); ++x) {
                  const int64_t v = fmt == kGray8 ? m.ptr<uint8_t>(x, y)[0] : m.ptr<uint16_t>(x, y)[0];
                  const bool edge = x == 0 || y == 0 || x == w - 1 || y == h - 1;
                  const int64_t o = dome ? std::max<int64_t>(0, v - hh) : edge ? v : maxv;
                  if (fmt == kGray8)
                    k.ptr<uint8_t>(x, y)[0] = static_cast<uint8_t>(o);
                  else
                    k.ptr<uint16_t>(x, y)[0] = static_cast<uint16_t>(o);
                }
            };
            if (dome)
              job.marker_mask_minus = hh;
            else
              job.marker_is_mask_border = true;
            if (cuda) job.backend.kind = Backend::Kind::kCuda;
            return job;
          };
          MemorySource m(copy_of(img));
          const ReconstructResult c = reconstruct(m, job_for(false, false));
          const Image want = c.image->read(0, img.rect());
          const std::string what = fmt.str() + (dome ? " h-dome " : " fill-holes ") + std::to_string(w) + "x" +
                                   std::to_string(h) + " conn " + std::to_string(conn);
          for (bool on_device : {false, true}) {
            const ReconstructResult g = reconstruct(m, job_for(true, on_device));
            EXPECT_TRUE(g.whole_image) << what;
            EXPECT_FALSE(g.gpu_device_input) << what << ": a host image goes up";
            EXPECT_EQ(g.image->device_tiles() != nullptr, on_device) << what;
            EXPECT_EQ(test::diff_images(g.image->read(0, img.rect()).view(), want.view()), "") << what;
          }
        }
  // A grey marker above its mask at one pixel.
  Image mask = test::pattern_image(kGray8, 1000, 777, 5), seed = copy_of(mask);
  for (int64_t y = 0; y < 777; ++y)
    for (int64_t x = 0; x < 1000; ++x) seed.ptr<uint8_t>(x, y)[0] /= 2;
  mask.ptr<uint8_t>(500, 400)[0] = 10, seed.ptr<uint8_t>(500, 400)[0] = 11;
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  std::string errors[2];
  for (bool cuda : {false, true}) {
    ReconstructJob job;
    job.scratch_near = "/tmp/tilewave-test";
    if (cuda) job.backend.kind = Backend::Kind::kCuda;
    try {
      reconstruct(s, m, job);
    } catch (const InputError& e) {
      errors[cuda] = e.what();
    }
  }
  EXPECT_NE(errors[0], "");
  EXPECT_EQ(errors[1], errors[0]);
  ReconstructJob clip;
  clip.clip = true;
  clip.scratch_near = "/tmp/tilewave-test";
  const Image cpu_clip = reconstruct(s, m, clip).image->read(0, mask.rect());
  clip.backend.kind = Backend::Kind::kCuda;
  const ReconstructResult g = reconstruct(s, m, clip);
  EXPECT_TRUE(g.whole_image);
  EXPECT_EQ(test::diff_images(g.image->read(0, mask.rect()).view(), cpu_clip.view()), "");
}

}  // namespace
}  // namespace tw
