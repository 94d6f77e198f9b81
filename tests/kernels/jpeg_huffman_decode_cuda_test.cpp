// The GPU's entropy decoding of JPEG tiles (jpeg_huffman_decode_cuda.hpp),
// a band of tiles per launch, against libjpeg-turbo's own
// jpeg_read_coefficients: every tile the GPU decoded must be libjpeg's
// coefficients of a stream libjpeg takes without complaint, every tile of
// our own encoder must be decoded, and damaged tiles (bytes changed, cut,
// markers put in) may only be given up. Label `gpu`.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/error.hpp"
#include "io/codec/jpeg_codec.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

#if TW_HAVE_CUDA
#include "engine/cuda/resources.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode_cuda.hpp"
#endif

namespace tw {
namespace {

#if TW_HAVE_CUDA
TEST(JpegHuffmanDecodeCuda, BandsAreLibjpegsCoefficientsOrGivenUp) {
  TW_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  int decoded = 0, given_up = 0;
  for (int channels : {1, 3})
    for (ChromaSubsampling sub : {ChromaSubsampling::k420, ChromaSubsampling::k444})
      for (int64_t t : {16, 256, 512})
        for (int quality : {5, 90, 100}) {
          if (channels == 1 && sub == ChromaSubsampling::k444) continue;
          JpegEncoder enc(channels, quality, sub, t, t);
          const JpegCoefLayout layout = enc.coef_layout();
          const size_t cpt = layout.coefs_per_tile();
          const PixelFormat fmt{SampleType::kU8, channels};
          const int tiles = t == 512 ? 6 : 40;
          // Every third tile damaged (past its first 4 bytes); the others whole.
          std::vector<std::vector<uint8_t>> streams;
          for (int i = 0; i < tiles; ++i) {
            const uint64_t s = static_cast<uint64_t>(t * 131 + quality * 7 + i);
            const Image img = i % 2 ? test::random_image(fmt, t, t, s) : test::pattern_image(fmt, t, t, s);
            std::vector<uint8_t> st;
            enc.encode(img.view(), st);
            if (i % 3 == 2) {
              const size_t at = 4 + rng() % (st.size() - 4);
              if (rng() % 2)
                st[at] = static_cast<uint8_t>(rng());
              else
                st.resize(at);
            }
            streams.push_back(std::move(st));
          }
          // Headers on the CPU, as the pipeline's input reads them.
          JpegDecoder dec;
          std::vector<uint8_t> bytes;
          std::vector<JpegDecodeTile> rec(static_cast<size_t>(tiles));
          std::vector<JpegHuffDecTable> tables;
          for (int i = 0; i < tiles; ++i) {
            JpegScanHead head;
            bool ok = false;
            try {
              ok = dec.scan_head(streams[i].data(), streams[i].size(), enc.tables(), layout, head, "tile");
            } catch (const InputError&) {
            }
            rec[i] = {static_cast<uint32_t>(bytes.size()), static_cast<uint32_t>(streams[i].size()), head.scan_offset,
                      kJpegDecodeNoSet};
            bytes.insert(bytes.end(), streams[i].begin(), streams[i].end());
            if (!ok) continue;
            tables.resize(tables.size() + 2 * static_cast<size_t>(channels));
            JpegHuffDecTable* set = tables.data() + tables.size() - 2 * static_cast<size_t>(channels);
            bool usable = true;
            for (int c = 0; c < channels; ++c)
              usable = usable && jpeg_huff_dec_table(head.dc[c], true, set[2 * c]) &&
                       jpeg_huff_dec_table(head.ac[c], false, set[2 * c + 1]);
            if (usable) rec[i].set = static_cast<uint32_t>(tables.size() / (2 * channels) - 1);
          }
          cuda::DeviceBuffer<uint8_t> d_bytes(bytes.size());
          cuda::DeviceBuffer<uint8_t> d_rec(rec.size() * sizeof(JpegDecodeTile));
          cuda::DeviceBuffer<uint8_t> d_tables(std::max<size_t>(1, tables.size()) * sizeof(JpegHuffDecTable));
          cuda::DeviceBuffer<int16_t> d_coefs(cpt * static_cast<size_t>(tiles));
          cuda::DeviceBuffer<uint32_t> d_status(static_cast<size_t>(tiles));
          ASSERT_EQ(cudaMemcpy(d_bytes.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(d_rec.get(), rec.data(), d_rec.size(), cudaMemcpyHostToDevice), cudaSuccess);
          if (!tables.empty()) {
            ASSERT_EQ(cudaMemcpy(d_tables.get(), tables.data(), tables.size() * sizeof(JpegHuffDecTable),
                                 cudaMemcpyHostToDevice),
                      cudaSuccess);
          }
          JpegDecodeLaunch a;
          a.layout = layout;
          a.tiles = tiles;
          a.bytes = d_bytes.get();
          a.tile = reinterpret_cast<const JpegDecodeTile*>(d_rec.get());
          a.tables = reinterpret_cast<const JpegHuffDecTable*>(d_tables.get());
          a.coefs = d_coefs.get();
          a.status = d_status.get();
          jpeg_decode_cuda(a, nullptr);
          std::vector<int16_t> got(cpt * static_cast<size_t>(tiles));
          std::vector<uint32_t> status(static_cast<size_t>(tiles));
          ASSERT_EQ(cudaMemcpy(got.data(), d_coefs.get(), got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(status.data(), d_status.get(), status.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
          for (int i = 0; i < tiles; ++i) {
            const std::string what = std::to_string(channels) + " channels, tile " + std::to_string(t) + ", quality " +
                                     std::to_string(quality) + ", band tile " + std::to_string(i);
            if (rec[i].set == kJpegDecodeNoSet) {
              ASSERT_EQ(i % 3, 2) << what << ": whole, but its headers were refused";
              continue;
            }
            if (status[i] != kJpegDecodeOk) {
              ASSERT_EQ(i % 3, 2) << what << ": whole, but given up";
              ++given_up;
              continue;
            }
            std::vector<int16_t> want(cpt);
            std::vector<uint16_t> quant(layout.quant_per_tile());
            try {
              ASSERT_TRUE(dec.decode_coefficients(streams[i].data(), streams[i].size(), enc.tables(), layout,
                                                  want.data(), quant.data(), what));
            } catch (const InputError& e) {
              FAIL() << what << ": decoded a tile libjpeg refuses: " << e.what();
            }
            ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + static_cast<std::ptrdiff_t>(cpt * i)))
                << what;
            ++decoded;
          }
        }
  EXPECT_GT(decoded, 300);
  EXPECT_GT(given_up, 0);
}

#endif

}  // namespace
}  // namespace tw
