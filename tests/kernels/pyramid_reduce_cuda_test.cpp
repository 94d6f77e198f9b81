// The REDUCE kernels themselves, launch by launch, against the 5x5 sum
// written from the definition: random levels, held column spans, carry and
// chunk rows, output windows and pitches, every 8- and 16-bit format. The
// fast kernel's blocks, the generic edge tiles it launches beside them and
// the all-generic fallback must each write exactly their outputs and leave
// every other byte of the output buffer alone. Label `gpu`.
#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <vector>

#include "engine/border.hpp"
#include "tests/support/gpu.hpp"

#if TW_HAVE_CUDA
#include "engine/cuda/resources.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce_cuda.hpp"
#endif

namespace tw {
namespace {

#if TW_HAVE_CUDA
struct Case {
  PixelFormat fmt;
  int64_t W, H;            // the input level
  int64_t xb, xe, yb, ye;  // output window
  int64_t in_x0, in_w;     // held columns
  int64_t split;           // first chunk row (rows before it are carry)
  int64_t r0, r1;          // held rows
  int64_t out_x0, out_y0, out_w, out_h;
  size_t in_pad, out_pad;  // extra bytes per row
};

int64_t reflect(int64_t i, int64_t n) {
  return border_index(i, n, BorderMode::kReflect101);
}

// The held inputs cover what the window needs after mirroring, plus random
// margins; the output buffer holds the window plus margins.
Case random_case(std::mt19937_64& rng, PixelFormat fmt, int64_t W, int64_t H) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Case c{};
  c.fmt = fmt, c.W = W, c.H = H;
  const int64_t ow = (W + 1) / 2, oh = (H + 1) / 2;
  c.xb = pick(0, ow - 1), c.xe = pick(c.xb + 1, ow);
  if (pick(0, 2) == 0) c.xb = 0, c.xe = ow;
  c.yb = pick(0, oh - 1), c.ye = pick(c.yb + 1, oh);
  int64_t lo = W, hi = -1, rlo = H, rhi = -1;
  for (int64_t x = c.xb; x < c.xe; ++x)
    for (int k = -2; k <= 2; ++k) lo = std::min(lo, reflect(2 * x + k, W)), hi = std::max(hi, reflect(2 * x + k, W));
  for (int64_t y = c.yb; y < c.ye; ++y)
    for (int k = -2; k <= 2; ++k)
      rlo = std::min(rlo, reflect(2 * y + k, H)), rhi = std::max(rhi, reflect(2 * y + k, H));
  c.in_x0 = pick(0, lo), c.in_w = pick(hi + 1, W) - c.in_x0;
  c.r0 = pick(0, rlo), c.r1 = pick(rhi + 1, H);
  c.split = pick(0, 1) ? c.r0 : pick(c.r0, c.r1 - 1);  // the chunk is never empty
  c.out_x0 = c.xb - pick(0, 9), c.out_y0 = c.yb - pick(0, 3);
  c.out_w = c.xe - c.out_x0 + pick(0, 9), c.out_h = c.ye - c.out_y0 + pick(0, 3);
  c.in_pad = size_t(pick(0, 3)) * 16;
  // Odd pitches and an odd output pointer (8-bit samples only) send the
  // launch to the generic kernel.
  c.out_pad = pick(0, 3) == 0 ? size_t(pick(1, 15)) : size_t(pick(0, 4)) * 16;
  if (fmt.type != SampleType::kU8) c.out_pad &= ~size_t{1};
  return c;
}

// Runs one launch; returns the first wrong byte, or "".
std::string run_case(const Case& c, const std::vector<uint8_t>& level) {
  const size_t bpp = c.fmt.bytes_per_pixel(), S = sample_bytes(c.fmt.type);
  const size_t in_row = size_t(c.W) * bpp;
  // Row pitches cover the held columns rounded up to 16 bytes (the fast
  // kernel reads whole 16-byte words).
  const size_t in_pitch = (size_t(c.in_w) * bpp + 15) / 16 * 16 + c.in_pad;
  auto upload_rows = [&](int64_t y0, int64_t n) {
    cuda::DeviceBuffer<uint8_t> d(std::max<size_t>(1, in_pitch * size_t(n)));
    std::vector<uint8_t> h(d.size(), 0x5a);
    for (int64_t r = 0; r < n; ++r)
      std::copy_n(&level[size_t(y0 + r) * in_row + size_t(c.in_x0) * bpp], size_t(c.in_w) * bpp,
                  &h[size_t(r) * in_pitch]);
    TW_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size(), cudaMemcpyHostToDevice));
    return d;
  };
  const cuda::DeviceBuffer<uint8_t> carry = upload_rows(c.r0, c.split - c.r0),
                                    chunk = upload_rows(c.split, c.r1 - c.split);
  const size_t out_pitch = size_t(c.out_w) * bpp + c.out_pad;
  cuda::DeviceBuffer<uint8_t> out(out_pitch * size_t(c.out_h) + 16);
  const uint8_t kSentinel = 0xa7;
  TW_CUDA_CHECK(cudaMemset(out.get(), kSentinel, out.size()));

  ReduceLaunch r;
  r.fmt = c.fmt;
  r.in_width = c.W, r.in_height = c.H, r.in_x0 = c.in_x0, r.in_w = c.in_w;
  if (c.split > c.r0) r.carry = DeviceRows{carry.get(), in_pitch, c.r0, c.split - c.r0};
  r.chunk = DeviceRows{chunk.get(), in_pitch, c.split, c.r1 - c.split};
  r.out = out.get() + (c.out_pad % 2);
  r.out_pitch = out_pitch, r.out_x0 = c.out_x0, r.out_y0 = c.out_y0;
  r.x_begin = c.xb, r.x_end = c.xe, r.y_begin = c.yb, r.y_end = c.ye;
  reduce_rows_cuda(r, nullptr);
  TW_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> got(out.size());
  TW_CUDA_CHECK(cudaMemcpy(got.data(), out.get(), got.size(), cudaMemcpyDeviceToHost));

  static const int w[5] = {1, 4, 6, 4, 1};
  auto sample = [&](int64_t x, int64_t y, int ch) -> uint64_t {
    const uint8_t* p = &level[size_t(y) * in_row + size_t(x) * bpp + ch * S];
    return S == 1 ? p[0] : uint64_t(p[0]) | uint64_t(p[1]) << 8;
  };
  std::vector<uint8_t> want(got.size(), kSentinel);
  for (int64_t y = c.yb; y < c.ye; ++y)
    for (int64_t x = c.xb; x < c.xe; ++x)
      for (int ch = 0; ch < c.fmt.channels; ++ch) {
        uint64_t s = 0;
        for (int m = 0; m < 5; ++m)
          for (int n = 0; n < 5; ++n)
            s += uint64_t(w[m] * w[n]) * sample(reflect(2 * x + n - 2, c.W), reflect(2 * y + m - 2, c.H), ch);
        const uint64_t v = (s + 128) >> 8;
        uint8_t* o = &want[c.out_pad % 2 + size_t(y - c.out_y0) * out_pitch + size_t(x - c.out_x0) * bpp + ch * S];
        o[0] = uint8_t(v);
        if (S == 2) o[1] = uint8_t(v >> 8);
      }
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      const size_t o = i - c.out_pad % 2;
      return "byte " + std::to_string(i) + " (output row " + std::to_string(int64_t(o / out_pitch) + c.out_y0) +
             ", byte " + std::to_string(o % out_pitch) + "): got " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
    }
  return "";
}

std::string describe(const Case& c) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return std::string(sample_name(c.fmt.type)) + "x" + s(c.fmt.channels) + " level " + s(c.W) + "x" + s(c.H) +
         " out x[" + s(c.xb) + "," + s(c.xe) + ") y[" + s(c.yb) + "," + s(c.ye) + ") held x[" + s(c.in_x0) + "+" +
         s(c.in_w) + "] rows[" + s(c.r0) + "|" + s(c.split) + "," + s(c.r1) + ") out origin " + s(c.out_x0) + "," +
         s(c.out_y0) + " pads " + s(int64_t(c.in_pad)) + "," + s(int64_t(c.out_pad));
}
#endif

TEST(ReduceCuda, RandomLaunchesMatchTheDefinition) {
  TW_REQUIRE_GPU();
#if TW_HAVE_CUDA
  std::mt19937_64 rng(20261123);
  // More than 4 channels (multiplex): reduce_any_channels, one channel per block.
  const PixelFormat fmts[] = {kGray8,
                              {SampleType::kU8, 2},
                              kRgb8,
                              {SampleType::kU8, 4},
                              kGray16,
                              {SampleType::kU16, 3},
                              {SampleType::kU8, 5},
                              {SampleType::kU8, 40},
                              {SampleType::kU16, 8},
                              {SampleType::kU16, 64}};
  // Narrow levels take the generic kernel alone; wide ones the fast blocks
  // with generic edge tiles (a fast RGB block spans 320 input columns).
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1},    {2, 3},     {5, 7},     {37, 41},   {333, 90},
                                               {700, 35}, {1283, 67}, {2049, 40}, {4001, 23}, {1500, 301}};
  int n = 0;
  for (const PixelFormat& fmt : fmts)
    for (auto [W, H] : sizes) {
      std::vector<uint8_t> level(size_t(W) * size_t(H) * fmt.bytes_per_pixel());
      for (auto& b : level) b = uint8_t(rng() >> 56);
      // Saturated patches: the largest sums (the packed 16-bit lanes must not carry).
      for (size_t i = 0; i < level.size() / 3; ++i) level[i] = 255;
      for (int t = 0; t < 6; ++t, ++n) {
        const Case c = random_case(rng, fmt, W, H);
        ASSERT_EQ(run_case(c, level), "") << describe(c);
      }
    }
  EXPECT_EQ(n, 6 * 10 * static_cast<int>(std::size(fmts)));
#endif
}

}  // namespace
}  // namespace tw
