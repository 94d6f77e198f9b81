// The overlay on a GPU (kernels/overlay/overlay_cuda.hpp): a two-input step
// of a GPU chain. A read stages the image's chain (or its host read) and the
// labels' host read with a one-pixel halo (0 outside the image, as on the
// CPU), then one kernel writes each RGB pixel: the outline colour where the
// label is non-zero and a 4-neighbour's differs, else the image's pixel.
#include <cuda_runtime.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "engine/byte_counters.hpp"
#include "engine/ops/op_cuda.cuh"
#include "engine/sample_dispatch.hpp"
#include "kernels/overlay/overlay.hpp"
#include "kernels/overlay/overlay_cuda.hpp"

namespace tw {
namespace {

using ops::cuda_detail::blocks;
using ops::cuda_detail::read_chain_piece;
using ops::cuda_detail::upload_staged;

struct Rgb {
  uint8_t c[3];
};

// img: w x h, `ch` channels, packed; lab: (w + 2) x (h + 2), packed, the
// piece's pixel (x, y) at (x + 1, y + 1); dst: RGB rows `pitch` bytes apart.
template <class L>
__global__ void overlay_kernel(const uint8_t* img, int ch, const L* lab, uint8_t* dst, size_t pitch, int w, int h,
                               Rgb color) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int64_t lw = int64_t{w} + 2;
  const L* mid = lab + (int64_t{y} + 1) * lw + x + 1;
  const L v = *mid;
  const bool edge = v != 0 && (mid[-1] != v || mid[1] != v || mid[-lw] != v || mid[lw] != v);
  const uint8_t* in = img + (int64_t{y} * w + x) * ch;
  uint8_t* out = dst + static_cast<size_t>(y) * pitch + 3 * static_cast<size_t>(x);
  for (int c = 0; c < 3; ++c) out[c] = edge ? color.c[c] : in[ch == 3 ? c : 0];
}

class OverlayCudaSource final : public TileSource, public DeviceTiles {
 public:
  OverlayCudaSource(std::shared_ptr<const TileSource> image, std::shared_ptr<const TileSource> labels,
                    std::array<uint8_t, 3> color, int device)
      : image_(std::move(image)), labels_(std::move(labels)), pool_(cuda::shared_lanes(device)) {
    info_ = overlay_info(*image_);
    for (int c = 0; c < 3; ++c) color_.c[c] = color[static_cast<size_t>(c)];
  }

  const DeviceTiles* device_tiles() const override { return this; }
  int device() const override { return pool_.device(); }

  void stage(const Rect& r, StagedInputs& host) const override {
    if (image_on_device())
      image_->device_tiles()->stage(r, host);
    else
      host.add() = image_->read(0, r);
    host.add() = labels_->read(0, r.grown(1), outside_labels());
  }

  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& c) const override {
    const PixelFormat fi = image_->info().fmt, fl = labels_->info().fmt;
    const uint8_t* img;
    if (image_on_device()) {
      const size_t row = static_cast<size_t>(r.w) * fi.bytes_per_pixel();
      uint8_t* buf = c.scratch.alloc(row * static_cast<size_t>(r.h));
      image_->device_tiles()->compute(r, buf, row, c);
      img = buf;
    } else {
      img = upload_staged(c, fi, r);
    }
    // The labels go up through the lane's pinned buffer, which the image's
    // upload (or its chain's: a split JPEG's coefficients) used: those
    // copies finish first.
    if (c.host->taken() > 0) TW_CUDA_CHECK(cudaStreamSynchronize(c.stream));
    const uint8_t* lab = upload_staged(c, fl, r.grown(1));
    const dim3 block(32, 8), grid(static_cast<unsigned>(blocks(r.w, 32)), static_cast<unsigned>(blocks(r.h, 8)));
    with_sample_type(fl.type, [&](auto t) {
      using L = decltype(t);
      overlay_kernel<L><<<grid, block, 0, c.stream>>>(img, fi.channels, reinterpret_cast<const L*>(lab), dst, pitch,
                                                      static_cast<int>(r.w), static_cast<int>(r.h), color_);
    });
    TW_CUDA_CHECK(cudaGetLastError());
  }

 protected:
  // The pieces of a read as many at a time as the device has lanes: a
  // writer's band across a slide is several pieces, each staged (the
  // slide's entropy decoding, the labels' copy) and sent through a lane,
  // and one after another they left the lanes idle while the next staged.
  // At most the band's own inputs are held at once, as on the CPU.
  void read_inside(int, const ImageView& whole) const override {
    const size_t bpp = image_->info().fmt.bytes_per_pixel() + labels_->info().fmt.bytes_per_pixel() + 3;
    std::vector<ImageView> pieces;
    for_each_read_piece(
        whole, bpp, 1, [&](const ImageView& piece) { pieces.push_back(piece); }, gpu_read_piece_bytes());
    const size_t at_once = static_cast<size_t>(std::max(1, pool_.size()));
    std::mutex mu;
    ByteCounts moved;
    for (size_t g = 0; g < pieces.size(); g += at_once)
      tbb::parallel_for(g, std::min(pieces.size(), g + at_once), [&](size_t i) {
        const ByteCounts before = thread_byte_counts();
        read_chain_piece(*this, pool_, pieces[i]);
        const ByteCounts piece = take_thread_counts_since(before);
        std::lock_guard<std::mutex> l(mu);
        moved += piece;
      });
    add_thread_counts(moved);  // the step's report counts the pieces' bytes
  }

 private:
  bool image_on_device() const { return made_on_device(*image_, pool_.device()); }

  std::shared_ptr<const TileSource> image_, labels_;
  Rgb color_{};
  cuda::LanePool& pool_;
};

}  // namespace

std::shared_ptr<const TileSource> make_overlay_cuda(std::shared_ptr<const TileSource> image,
                                                    std::shared_ptr<const TileSource> labels,
                                                    std::array<uint8_t, 3> color, int device) {
  return std::make_shared<OverlayCudaSource>(std::move(image), std::move(labels), color, device);
}

}  // namespace tw
