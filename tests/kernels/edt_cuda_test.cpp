// CpuVsCuda for the distance transform: the GPU's distances equal the CPU
// backend's bit for bit (both are exact integer algorithms with the same
// final square root), on odd sizes, sparse and dense background, the seed's
// patterns, the empty cases, bands of rows on the device, rows too wide for
// shared memory, and results spilled to the host's scratch files. Skipped
// without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/bit_plane.hpp"
#include "engine/memory_source.hpp"
#include "jobs/edt/edt_cuda_job.hpp"
#include "jobs/reconstruct/binary_whole.hpp"
#include "kernels/reconstruct/bit_planes.hpp"
#include "tests/support/edt_patterns.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

MemorySource source_of(const Image& in) {
  Image c(in.fmt(), in.rect());
  copy_overlap(in.view(), c.view());
  return MemorySource(std::move(c));
}

Image on_cpu(const Image& in) {
  const MemorySource src = source_of(in);
  return euclidean_distance(src, {}, size_t{1} << 30, "/tmp/tilewave-test")->read(0, in.rect());
}

Image on_gpu(const Image& in, size_t gpu_memory = 0, size_t memory = size_t{1} << 30, EdtStats* st = nullptr) {
  const MemorySource src = source_of(in);
  EdtCudaJob job;
  job.gpu_memory = gpu_memory;
  job.memory = memory;
  job.scratch_near = "/tmp/tilewave-test";
  return euclidean_distance_cuda(src, job, st)->read(0, in.rect());
}

// Bitwise, so +inf and every rounding must agree.
std::string first_difference(const Image& a, const Image& b) {
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x)
      if (std::memcmp(a.ptr<float>(x, y), b.ptr<float>(x, y), 4) != 0)
        return "(" + std::to_string(x) + ", " + std::to_string(y) + "): " + std::to_string(a.ptr<float>(x, y)[0]) +
               " vs " + std::to_string(b.ptr<float>(x, y)[0]);
  return "";
}

Image pattern(const std::string& name, int64_t n) {
  Image img(kGray8, Rect(0, 0, n, n));
  test::draw_edt_pattern(name, n, [&](int64_t x, int64_t y, bool bg) { img.ptr<uint8_t>(x, y)[0] = bg ? 0 : 255; });
  return img;
}

Image random_image(int64_t w, int64_t h, int one_in, uint64_t seed) {
  Image in(kGray8, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) in.ptr<uint8_t>(x, y)[0] = rng() % one_in == 0 ? 0 : 200;
  return in;
}

TEST(CpuVsCuda, EdtOddSizesAndDensities) {
  TW_REQUIRE_GPU();
  for (auto [w, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {1, 300}, {300, 1}, {23, 17}, {257, 129}, {1000, 777}, {4099, 33}})
    for (int one_in : {2, 50, 5000}) {
      const Image in = random_image(w, h, one_in, static_cast<uint64_t>(w * 31 + h + one_in));
      EXPECT_EQ(first_difference(on_gpu(in), on_cpu(in)), "") << w << "x" << h << ", 1 in " << one_in;
    }
}

TEST(CpuVsCuda, EdtEmptyCases) {
  TW_REQUIRE_GPU();
  Image all(kGray8, Rect(0, 0, 300, 200)), none(kGray8, Rect(0, 0, 300, 200));
  for (int64_t y = 0; y < 200; ++y) std::memset(all.row<uint8_t>(y), 9, 300);
  none.fill_zero();
  EXPECT_EQ(first_difference(on_gpu(all), on_cpu(all)), "");  // +inf everywhere
  EXPECT_TRUE(std::isinf(on_gpu(all).ptr<float>(150, 100)[0]));
  EXPECT_EQ(first_difference(on_gpu(none), on_cpu(none)), "");
  Image one(kGray8, Rect(0, 0, 3000, 2000));
  for (int64_t y = 0; y < 2000; ++y) std::memset(one.row<uint8_t>(y), 200, 3000);
  one.ptr<uint8_t>(2999, 0)[0] = 0;  // a single background pixel in a corner: distances up to 3600
  EXPECT_EQ(first_difference(on_gpu(one), on_cpu(one)), "");
}

TEST(CpuVsCuda, EdtSeedPatterns) {
  TW_REQUIRE_GPU();
  for (const char* name : test::kEdtPatterns) {
    const Image in = pattern(name, 1500);
    EXPECT_EQ(first_difference(on_gpu(in), on_cpu(in)), "") << name;
  }
}

// A device budget of a few MB cuts the image into bands whose column passes
// carry across; a host budget of 1 MB spills the distances below each pixel
// and the result to scratch files.
TEST(CpuVsCuda, EdtBandsAndSpills) {
  TW_REQUIRE_GPU();
  const Image in = random_image(1000, 3000, 20000, 7);
  EdtStats st;
  const Image got = on_gpu(in, size_t{3} << 20, size_t{1} << 20, &st);
  EXPECT_GT(st.gpu_bands, 2);
  EXPECT_EQ(first_difference(got, on_cpu(in)), "");
  const Image big = pattern("big_circle", 2048);
  EXPECT_EQ(first_difference(on_gpu(big, size_t{4} << 20), on_cpu(big)), "");
}

// Rows too wide for shared memory run the row pass in device scratch.
TEST(CpuVsCuda, EdtWideRows) {
  TW_REQUIRE_GPU();
  const Image in = random_image(40000, 24, 3000, 11);
  EXPECT_EQ(first_difference(on_gpu(in), on_cpu(in)), "");
}

// A binary image held as bits (a whole-image GPU fill-holes' result) goes up
// as its bits and is expanded on the device: the distances equal the CPU's
// from the bytes it reads as, for both polarities (set bits reading 255, or
// 0 as fill-holes' do), thresholds either side of the two values, widths
// around word edges, and bands of rows.
TEST(CpuVsCuda, EdtOfABitPlane) {
  TW_REQUIRE_GPU();
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {31, 5}, {33, 17}, {64, 64}, {1000, 777}, {4099, 33}})
    for (bool zeros : {false, true})
      for (double threshold : {0.0, 254.0, 255.0}) {
        SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + (zeros ? ", zeros" : "") + ", threshold " +
                     std::to_string(threshold));
        Image bytes = random_image(w, h, 7, static_cast<uint64_t>(w + 3 * h));
        const int64_t pitch = bit_plane_pitch(w);
        std::vector<uint32_t> plane(static_cast<size_t>(pitch * (h + 2)), 0);
        for (int64_t y = 0; y < h; ++y) {
          uint8_t* row = bytes.row<uint8_t>(y);
          for (int64_t x = 0; x < w; ++x) row[x] = row[x] ? 255 : 0;
          pack_row_bits(row, w, plane.data() + (y + 1) * pitch + 1, pitch - 1, zeros);
        }
        const auto src = make_bit_plane_source(std::move(plane), w, h, zeros, SourceInfo{});
        ASSERT_NE(src->bit_plane(), nullptr);
        const Image back = src->read(0, bytes.rect());
        for (int64_t y = 0; y < h; ++y)
          ASSERT_EQ(std::memcmp(back.row<uint8_t>(y), bytes.row<uint8_t>(y), static_cast<size_t>(w)), 0) << "row " << y;
        EdtCudaJob job;
        job.params.threshold = threshold;
        job.scratch_near = "/tmp/tilewave-test";
        EdtStats st;
        const Image got = euclidean_distance_cuda(*src, job, &st)->read(0, bytes.rect());
        EXPECT_TRUE(st.bits_input);
        EXPECT_EQ(st.foreground + st.background, static_cast<uint64_t>(w * h));
        const MemorySource ref_src = source_of(bytes);
        EdtStats ref_st;
        const Image want = euclidean_distance(ref_src, job.params, size_t{1} << 30, "/tmp/tilewave-test", &ref_st)
                               ->read(0, bytes.rect());
        EXPECT_EQ(first_difference(got, want), "");
        EXPECT_EQ(st.foreground, ref_st.foreground);
      }
  // Bands: a device budget of a few MB.
  Image tall = random_image(1000, 3000, 20000, 9);
  const int64_t pitch = bit_plane_pitch(1000);
  std::vector<uint32_t> plane(static_cast<size_t>(pitch * 3002), 0);
  for (int64_t y = 0; y < 3000; ++y) {
    uint8_t* row = tall.row<uint8_t>(y);
    for (int64_t x = 0; x < 1000; ++x) row[x] = row[x] ? 255 : 0;
    pack_row_bits(row, 1000, plane.data() + (y + 1) * pitch + 1, pitch - 1, true);
  }
  const auto src = make_bit_plane_source(std::move(plane), 1000, 3000, true, SourceInfo{});
  EdtCudaJob job;
  job.gpu_memory = size_t{3} << 20;
  job.scratch_near = "/tmp/tilewave-test";
  EdtStats st;
  const Image got = euclidean_distance_cuda(*src, job, &st)->read(0, tall.rect());
  EXPECT_GT(st.gpu_bands, 2);
  EXPECT_TRUE(st.bits_input);
  EXPECT_EQ(first_difference(got, on_cpu(tall)), "");  // bits of the zeros, read back as tall's bytes
}

}  // namespace
}  // namespace tw
