// The GPU's entropy coding of JPEG tiles (jpeg_huffman_cuda.hpp), a band of
// tiles per launch, against libjpeg-turbo's own encoder on the same
// coefficients: every tile the GPU coded must be JpegCoefSpec::head, its
// segment and EOI byte for byte; every tile it left (a value beyond
// baseline's range, or a segment larger than the tile's coefficients:
// noise at quality 100) must still hold its coefficients. Label `gpu`.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io/codec/jpeg_codec.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

#if TW_HAVE_CUDA
#include "engine/cuda/resources.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_cuda.hpp"
#endif

namespace tw {
namespace {

#if TW_HAVE_CUDA
// A band of `tiles` tiles: images of several kinds through the CPU's
// transform, tile 1 with a value libjpeg refuses in baseline, and random
// coefficient blocks.
std::vector<int16_t> band_of(const JpegCoefSpec& spec, int channels, int tiles, uint64_t seed) {
  const JpegCoefLayout& l = spec.layout;
  const PixelFormat fmt{SampleType::kU8, channels};
  std::vector<int16_t> c(l.coefs_per_tile() * static_cast<size_t>(tiles), 0);
  std::mt19937_64 rng(seed);
  for (int t = 0; t < tiles; ++t) {
    int16_t* tile = c.data() + l.coefs_per_tile() * static_cast<size_t>(t);
    const int kind = t % 5;
    if (kind == 1) {
      tile[64 + 9] = 1500;  // 11 bits: no baseline AC code
    } else if (kind == 4) {
      for (size_t i = 0; i < l.coefs_per_tile(); ++i)
        if (rng() % 3 == 0) tile[i] = static_cast<int16_t>(static_cast<int>(rng() % 61) - 30);
    } else {
      const uint64_t s = seed * 7 + static_cast<uint64_t>(t);
      const Image img = kind == 0   ? test::random_image(fmt, l.tile, l.tile, s)
                        : kind == 2 ? test::pattern_image(fmt, l.tile, l.tile, s)
                                    : Image(fmt, Rect(0, 0, l.tile, l.tile));
      jpeg_forward_tile(img.view(), l, spec.quant.data(), tile);
    }
  }
  return c;
}

TEST(JpegHuffmanCuda, BandsAreLibjpegsBytesOrLeftAsCoefficients) {
  TW_REQUIRE_GPU();
  int coded = 0, left = 0;
  for (int channels : {1, 3})
    for (ChromaSubsampling sub : {ChromaSubsampling::k420, ChromaSubsampling::k444})
      for (int64_t t : {16, 256, 512})
        for (int quality : {5, 90, 100}) {
          if (channels == 1 && sub == ChromaSubsampling::k444) continue;
          JpegEncoder enc(channels, quality, sub, t, t);
          const JpegCoefSpec spec{enc.coef_layout(), enc.quant_tables(), enc.huffman_codes(), enc.stream_head()};
          const int tiles = t == 512 ? 6 : 11;
          const std::vector<int16_t> coefs = band_of(spec, channels, tiles, static_cast<uint64_t>(t + quality));
          const size_t coef_bytes = coefs.size() * sizeof(int16_t);
          cuda::DeviceBuffer<uint8_t> d_coefs(coef_bytes + static_cast<size_t>(tiles) * 4);
          cuda::DeviceBuffer<uint8_t> d_scratch(jpeg_huffman_scratch_bytes(spec.layout, tiles));
          cuda::DeviceBuffer<uint8_t> d_codes(spec.huff.size() * sizeof(JpegHuffCodes));
          ASSERT_EQ(cudaMemcpy(d_coefs.get(), coefs.data(), coef_bytes, cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(d_codes.get(), spec.huff.data(), d_codes.size(), cudaMemcpyHostToDevice), cudaSuccess);
          JpegHuffLaunch a;
          a.layout = spec.layout;
          a.tiles = tiles;
          a.coefs = reinterpret_cast<int16_t*>(d_coefs.get());
          a.sizes = reinterpret_cast<uint32_t*>(d_coefs.get() + coef_bytes);
          a.codes = reinterpret_cast<const JpegHuffCodes*>(d_codes.get());
          a.scratch = d_scratch.get();
          jpeg_huffman_cuda(a, nullptr);
          std::vector<uint8_t> back(d_coefs.size());
          ASSERT_EQ(cudaMemcpy(back.data(), d_coefs.get(), back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          const size_t cap = spec.layout.coefs_per_tile() * sizeof(int16_t);
          for (int i = 0; i < tiles; ++i) {
            const std::string what = std::to_string(channels) + " channels, tile " + std::to_string(t) + ", quality " +
                                     std::to_string(quality) + ", band tile " + std::to_string(i);
            uint32_t size;
            std::memcpy(&size, back.data() + coef_bytes + static_cast<size_t>(i) * 4, 4);
            const uint8_t* slot = back.data() + cap * static_cast<size_t>(i);
            const int16_t* own = coefs.data() + spec.layout.coefs_per_tile() * static_cast<size_t>(i);
            std::vector<uint8_t> want;
            if (size == kJpegTileAsCoefficients) {
              ASSERT_EQ(std::memcmp(slot, own, cap), 0) << what << ": left, but not as its coefficients";
              // Left only where it must be: refused, or a segment too large.
              if (jpeg_entropy_code_tile(spec, own, want)) {
                EXPECT_GT(want.size() - spec.head.size() - 2, cap) << what;
              }
              ++left;
              continue;
            }
            ASSERT_NE(i % 5, 1) << what << ": a value beyond baseline was coded";
            enc.encode_coefficients(own, want);
            std::vector<uint8_t> got(spec.head);
            ASSERT_LE(size, cap) << what;
            got.insert(got.end(), slot, slot + size);
            got.push_back(0xFF);
            got.push_back(0xD9);
            ASSERT_EQ(got, want) << what;
            ++coded;
          }
        }
  EXPECT_GT(coded, 200);
  EXPECT_GT(left, 0);
}
#endif

}  // namespace
}  // namespace tw
