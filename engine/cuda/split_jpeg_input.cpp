#include "engine/cuda/split_jpeg_input.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "engine/byte_counters.hpp"
#include "engine/byte_lru.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/device_jpeg_coefs.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/memory.hpp"
#include "engine/ops/device_chain.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/read_pieces.hpp"
#include "io/codec/jpeg_transform/jpeg_idct_cuda.hpp"

namespace tw {
namespace {

class SplitJpegInput final : public TileSource, public DeviceTiles {
 public:
  // Level 0 decoded into device memory at once where it fits
  // `device_budget` (engine/cuda/device_jpeg_coefs.hpp); else a read's
  // tiles entropy-decoded on the CPU as it stages them.
  SplitJpegInput(std::shared_ptr<const TileSource> src, const JpegCoefLayout& layout, int device, size_t device_budget,
                 size_t host_budget)
      : src_(std::move(src)), layout_(layout), device_(device) {
    info_ = src_->info();
    resident_ = decode_jpeg_level0_on_device(*src_, layout_, device_, device_budget, host_budget);
    if (resident_) tiles_ = resident_->cpu_tiles;
  }

  Image read_associated(const std::string& name) const override { return src_->read_associated(name); }
  // Half for the input's decoded pixels (its readers on the host), half for
  // the coefficients the GPU chains stage: two chains reading the input
  // (nuclei: gray and hematoxylin) and the halos of neighbouring pieces
  // would otherwise entropy-decode every tile again. (With level 0 on the
  // device neither is filled: only reads of lower levels use the first.)
  void set_read_cache(size_t bytes) const override {
    src_->set_read_cache(bytes / 2);
    coefs_.set_capacity(bytes / 2);
  }
  // As much as the decoded level 0 (half for it, half for the coefficients),
  // not the twice that would hold both whole (4:2:0's 16-bit coefficients
  // are 3 bytes a pixel, as RGB): against the same base on the H200, the
  // 2-GP slide's nuclei gained 0.7-1.3 s of wall with 6 GB so cached and
  // 0.1-0.6 s with 12 GB (freeing the larger cache at exit ate the gain).
  size_t read_cache_for_level0() const override { return src_->read_cache_for_level0(); }
  size_t decode_unit_bytes(int level) const override { return src_->decode_unit_bytes(level); }
  void set_decode_budget(size_t bytes) const override { src_->set_decode_budget(bytes); }
  const RawTiles* raw_tiles() const override { return src_->raw_tiles(); }
  const DeviceTiles* device_tiles() const override { return this; }
  int device() const override { return device_; }

  // The coefficients of the tiles `r` touches, all tiles' coefficients then
  // all their quantisation tables, as one row of 16-bit words; or, where a
  // tile is not laid out as the level's first (a writer that crops edge
  // tiles), `r`'s pixels decoded on the CPU (8-bit, so compute() tells them
  // apart), and the split decode stays off from then on.
  void stage(const Rect& r, StagedInputs& staged) const override {
    Image& host = staged.add();
    if (resident_) return;  // nothing to send: the coefficients are there
    if (!off_.load(std::memory_order_relaxed)) {
      const Span t = span(r);
      const size_t cpt = layout_.coefs_per_tile(), qpt = layout_.quant_per_tile();
      const size_t n = static_cast<size_t>(t.nx * t.ny);
      host = Image(PixelFormat{SampleType::kU16, 1}, Rect(0, 0, static_cast<int64_t>(n * (cpt + qpt)), 1));
      auto* coefs = reinterpret_cast<int16_t*>(host.row<uint16_t>(0));
      uint16_t* quant = host.row<uint16_t>(0) + n * cpt;
      const RawTiles& raw = *src_->raw_tiles();
      bool fits = true;
      for (int64_t k = 0; k < t.nx * t.ny && fits; ++k) {
        const int64_t tx = t.tx0 + k % t.nx, ty = t.ty0 + k / t.nx;
        int16_t* c = coefs + static_cast<size_t>(k) * cpt;
        uint16_t* q = quant + static_cast<size_t>(k) * qpt;
        const uint64_t key = (static_cast<uint64_t>(ty) << 32) | static_cast<uint64_t>(tx);
        if (const auto hit = coefs_.get(key)) {
          std::memcpy(c, hit->data(), cpt * sizeof(int16_t));
          std::memcpy(q, hit->data() + cpt, qpt * sizeof(uint16_t));
          continue;
        }
        fits = raw.decode_raw_tile_coefficients(0, tx, ty, raw.read_raw_tile(0, tx, ty), layout_, c, q);
        if (!fits) break;
        tiles_.fetch_add(1, std::memory_order_relaxed);
        if (coefs_.enabled()) {
          auto kept = std::make_shared<std::vector<uint16_t>>(cpt + qpt);
          std::memcpy(kept->data(), c, cpt * sizeof(int16_t));
          std::memcpy(kept->data() + cpt, q, qpt * sizeof(uint16_t));
          coefs_.put(key, std::move(kept), (cpt + qpt) * sizeof(uint16_t));
        }
      }
      if (fits) return;
      off_.store(true, std::memory_order_relaxed);
    }
    host = src_->read(0, r);
  }

  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& c) const override {
    const cudaStream_t s = c.stream;
    const Image& host = c.host->next();
    if (resident_) {
      const Span t = span(r);
      const size_t first = static_cast<size_t>(t.ty0 * resident_->across + t.tx0);
      const size_t row = static_cast<size_t>(resident_->across);
      finish(r, t, resident_->coefs + first * layout_.coefs_per_tile(),
             resident_->quant + first * layout_.quant_per_tile(), row, dst, pitch, c);
      return;
    }
    const size_t bytes = host.size_bytes();
    c.lane->reserve(bytes, 0);
    std::memcpy(c.lane->host_in.get(), host.view().row_bytes(0), bytes);
    uint8_t* up = c.scratch.alloc(bytes);
    TW_CUDA_CHECK(cudaMemcpyAsync(up, c.lane->host_in.get(), bytes, cudaMemcpyHostToDevice, s));
    count_uploaded(bytes);
    const size_t bpp = info_.fmt.bytes_per_pixel();
    if (host.fmt().type != SampleType::kU16) {  // pixels decoded on the CPU
      TW_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch, up, host.view().stride, static_cast<size_t>(r.w) * bpp,
                                      static_cast<size_t>(r.h), cudaMemcpyDeviceToDevice, s));
      return;
    }
    const Span t = span(r);
    const size_t n = static_cast<size_t>(t.nx * t.ny);
    const auto* coefs = reinterpret_cast<const int16_t*>(up);
    const auto* quant = reinterpret_cast<const uint16_t*>(up) + n * layout_.coefs_per_tile();
    finish(r, t, coefs, quant, static_cast<size_t>(t.nx), dst, pitch, c);
  }

 protected:
  // With level 0's coefficients on the device, its host reads are the
  // GPU's too (the IDCT, upsampling and colour conversion the chains run:
  // the CPU decoder's pixels), copied down, rather than libjpeg decoding
  // the tiles on the host again: the nuclei's features read the objects'
  // pixels of the whole slide so.
  void read_inside(int level, const ImageView& dst) const override {
    if (level != 0 || !resident_) return src_->read(level, dst);
    // In pieces of the GPU ops' piece bytes (a lane's pinned buffers count
    // against --memory), each one lane's round trip, as a GPU op reads.
    for_each_read_piece(
        dst, info_.fmt.bytes_per_pixel(), 0,
        [&](const ImageView& piece) { read_chain_piece(*this, cuda::shared_lanes(device_), piece); },
        gpu_read_piece_bytes());
  }

 private:
  struct Span {
    int64_t tx0, ty0, nx, ny;
  };

  // The IDCT, upsampling and colour conversion of the tiles of span t, whose
  // coefficients and quantisation tables are on the device in rows of
  // `row` tiles (t's first at coefs and quant), then r's pixels into dst.
  void finish(const Rect& r, const Span& t, const int16_t* coefs, const uint16_t* quant, size_t row, uint8_t* dst,
              size_t pitch, DeviceChain& c) const {
    const cudaStream_t s = c.stream;
    const int64_t T = layout_.tile;
    const size_t bpp = info_.fmt.bytes_per_pixel();
    const size_t cpt = layout_.coefs_per_tile(), qpt = layout_.quant_per_tile();
    const size_t row_pitch = static_cast<size_t>(t.nx * T) * bpp;
    uint8_t* px = c.scratch.alloc(row_pitch * static_cast<size_t>(t.ny * T));
    uint8_t* planes = c.scratch.alloc(static_cast<size_t>(t.nx) * jpeg_idct_plane_bytes(layout_));
    for (int64_t y = 0; y < t.ny; ++y) {  // one row of tiles side by side per launch
      JpegIdctLaunch k;
      k.layout = layout_;
      k.tiles = static_cast<int>(t.nx);
      k.coefs = coefs + static_cast<size_t>(y) * row * cpt;
      k.quant = quant + static_cast<size_t>(y) * row * qpt;
      k.planes = planes;
      k.out = px + static_cast<size_t>(y * T) * row_pitch;
      k.out_pitch = row_pitch;
      k.out_w = t.nx * T;
      k.rows = T;
      jpeg_idct_cuda(k, s);
    }
    const uint8_t* from =
        px + static_cast<size_t>(r.y - t.ty0 * T) * row_pitch + static_cast<size_t>(r.x - t.tx0 * T) * bpp;
    TW_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch, from, row_pitch, static_cast<size_t>(r.w) * bpp,
                                    static_cast<size_t>(r.h), cudaMemcpyDeviceToDevice, s));
  }
  // The tiles `r` (inside level 0) touches.
  Span span(const Rect& r) const {
    const int64_t T = layout_.tile;
    const int64_t tx0 = r.x / T, ty0 = r.y / T;
    return {tx0, ty0, (r.x1() - 1) / T - tx0 + 1, (r.y1() - 1) / T - ty0 + 1};
  }

  std::shared_ptr<const TileSource> src_;
  JpegCoefLayout layout_;
  int device_;
  mutable std::atomic<bool> off_{false};
  std::optional<DeviceJpegCoefs> resident_;  // level 0's coefficients on the device
  mutable std::atomic<int64_t> tiles_{0};    // entropy-decoded on the CPU (not taken from coefs_)
  // Recently staged tiles' coefficients then quantisation tables, by
  // (ty, tx); bounded by set_read_cache.
  mutable ByteLru<std::vector<uint16_t>> coefs_;

 public:
  int64_t tiles() const { return tiles_.load(); }
  int64_t gpu_tiles() const { return resident_ ? resident_->gpu_tiles : 0; }
};

}  // namespace

int64_t split_jpeg_tiles(const TileSource& src) {
  const auto* s = dynamic_cast<const SplitJpegInput*>(&src);
  return s ? s->tiles() : -1;
}

int64_t split_jpeg_gpu_decoded_tiles(const TileSource& src) {
  const auto* s = dynamic_cast<const SplitJpegInput*>(&src);
  return s ? s->gpu_tiles() : -1;
}

std::shared_ptr<const TileSource> make_split_jpeg_input(std::shared_ptr<const TileSource> src, int device,
                                                        size_t device_budget, size_t host_budget) {
  const RawTiles* raw = src ? src->raw_tiles() : nullptr;
  const RawTileFormat* f = raw ? raw->raw_format(0) : nullptr;
  if (!f) return src;
  const std::optional<JpegCoefLayout> layout = gpu_jpeg_coef_layout(*f);
  const PixelFormat fmt = src->info().fmt;
  if (!layout || fmt.type != SampleType::kU8 || fmt.channels != layout->components) return src;
  return std::make_shared<SplitJpegInput>(std::move(src), *layout, device, device_budget, host_budget);
}

}  // namespace tw
