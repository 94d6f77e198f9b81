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
#include "io/codec/jpeg_transform/jpeg_segments_cuda.hpp"
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

// The band through jpeg_huffman_cuda on the device: its tiles' rooms (each a
// segment or its coefficients), then a uint32 size per tile.
cuda::DeviceBuffer<uint8_t> code_on_gpu(const JpegCoefSpec& spec, const std::vector<int16_t>& coefs, int tiles) {
  const size_t coef_bytes = coefs.size() * sizeof(int16_t);
  cuda::DeviceBuffer<uint8_t> d_coefs(coef_bytes + static_cast<size_t>(tiles) * 4);
  cuda::DeviceBuffer<uint8_t> d_scratch(jpeg_huffman_scratch_bytes(spec.layout, tiles));
  cuda::DeviceBuffer<uint8_t> d_codes(spec.huff.size() * sizeof(JpegHuffCodes));
  TW_CUDA_CHECK(cudaMemcpy(d_coefs.get(), coefs.data(), coef_bytes, cudaMemcpyHostToDevice));
  TW_CUDA_CHECK(cudaMemcpy(d_codes.get(), spec.huff.data(), d_codes.size(), cudaMemcpyHostToDevice));
  JpegHuffLaunch a;
  a.layout = spec.layout;
  a.tiles = tiles;
  a.coefs = reinterpret_cast<int16_t*>(d_coefs.get());
  a.sizes = reinterpret_cast<uint32_t*>(d_coefs.get() + coef_bytes);
  a.codes = reinterpret_cast<const JpegHuffCodes*>(d_codes.get());
  a.scratch = d_scratch.get();
  jpeg_huffman_cuda(a, nullptr);
  TW_CUDA_CHECK(cudaDeviceSynchronize());
  return d_coefs;
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
          const cuda::DeviceBuffer<uint8_t> d_coefs = code_on_gpu(spec, coefs, tiles);
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

// The packed way home (jpeg_segments_cuda.hpp): the GPU writes each tile's
// segment, or all its coefficients where it left them, one after another into
// pinned host memory, each on a 16-byte boundary, with the sizes and where
// each tile went; the bytes are the tile's room's, and nothing past the
// packed end is written. Pageable memory is not reachable from kernels:
// mapped_for_device says so, and the producer then copies the rooms whole.
TEST(JpegHuffmanCuda, SegmentsComeHomePackedWithTheirPlaces) {
  TW_REQUIRE_GPU();
  for (int channels : {1, 3})
    for (int64_t t : {16, 256})
      for (int quality : {50, 100}) {
        JpegEncoder enc(channels, quality, ChromaSubsampling::k420, t, t);
        const JpegCoefSpec spec{enc.coef_layout(), enc.quant_tables(), enc.huffman_codes(), enc.stream_head()};
        // 16: more tiles than a block's threads (the sums go round); 256:
        // over 8 MB, the pinned allocator's registered huge pages.
        const int tiles = t == 16 ? 700 : 50;
        const std::vector<int16_t> coefs = band_of(spec, channels, tiles, static_cast<uint64_t>(t * 3 + quality));
        const size_t room = spec.layout.coefs_per_tile() * sizeof(int16_t), rooms = room * static_cast<size_t>(tiles);
        const cuda::DeviceBuffer<uint8_t> d = code_on_gpu(spec, coefs, tiles);
        std::vector<uint8_t> rooms_back(d.size());
        ASSERT_EQ(cudaMemcpy(rooms_back.data(), d.get(), d.size(), cudaMemcpyDeviceToHost), cudaSuccess);

        const size_t bytes = rooms + static_cast<size_t>(tiles) * 12;
        const HostAllocator& pinned = cuda::pinned_allocator();
        auto* host = static_cast<uint8_t*>(pinned.allocate(bytes));
        std::memset(host, 0xA5, bytes);
        uint8_t* mapped = cuda::mapped_for_device(host + 64);  // an address inside the allocation
        ASSERT_NE(mapped, nullptr);
        JpegSegmentsLaunch g;
        g.rooms = d.get();
        g.room = room;
        g.sizes = reinterpret_cast<const uint32_t*>(d.get() + rooms);
        g.tiles = tiles;
        g.out = mapped;
        g.out_offsets = reinterpret_cast<uint64_t*>(mapped - 64 + rooms);
        g.out_sizes = reinterpret_cast<uint32_t*>(mapped - 64 + rooms + static_cast<size_t>(tiles) * 8);
        jpeg_gather_segments_cuda(g, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

        const uint8_t* out = host + 64;
        const auto* offsets = reinterpret_cast<const uint64_t*>(host + rooms);
        const auto* sizes = reinterpret_cast<const uint32_t*>(host + rooms + static_cast<size_t>(tiles) * 8);
        uint64_t end = 0;
        for (int i = 0; i < tiles; ++i) {
          const std::string what = std::to_string(channels) + " channels, tile " + std::to_string(t) + ", quality " +
                                   std::to_string(quality) + ", band tile " + std::to_string(i);
          uint32_t size;
          std::memcpy(&size, rooms_back.data() + rooms + static_cast<size_t>(i) * 4, 4);
          ASSERT_EQ(sizes[i], size) << what;
          ASSERT_EQ(offsets[i], end) << what;
          ASSERT_EQ(offsets[i] % kJpegSegmentAlign, 0u) << what;
          const size_t n = size == kJpegTileAsCoefficients ? room : size;
          ASSERT_EQ(std::memcmp(out + offsets[i], rooms_back.data() + room * static_cast<size_t>(i), n), 0) << what;
          end = offsets[i] + (n + kJpegSegmentAlign - 1) / kJpegSegmentAlign * kJpegSegmentAlign;
        }
        ASSERT_LE(end + 64, rooms);  // segments pack: these bands have a few small ones at least
        for (size_t k = 64 + end; k < rooms; ++k) ASSERT_EQ(host[k], 0xA5) << "written past the packed end at " << k;
        pinned.deallocate(host, bytes);
      }
  std::vector<uint8_t> pageable(4096);
  EXPECT_EQ(cuda::mapped_for_device(pageable.data()), nullptr);
}
#endif

}  // namespace
}  // namespace tw
