#include "jobs/reconstruct/binary_whole.hpp"

#include <tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "engine/bit_plane.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/error.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/trace.hpp"
#include "kernels/reconstruct/bit_planes.hpp"
#include "kernels/reconstruct/planes_cpu.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {
namespace {

// The result: a bit plane, read as 0 and 255.
class BitPlaneSource final : public TileSource {
 public:
  BitPlaneSource(std::vector<uint32_t> plane, int64_t pitch, int64_t w, int64_t h, bool zeros, const SourceInfo& like)
      : plane_(std::move(plane)) {
    bits_.words = plane_.data(), bits_.pitch = pitch, bits_.width = w, bits_.height = h;
    // A set bit is a pixel that turned on: 255 by dilation, 0 by erosion
    // (the planes held the complements).
    bits_.on = zeros ? 0 : 255, bits_.off = zeros ? 255 : 0;
    info_.path = "reconstruction (bit plane)";
    info_.format = "computed";
    info_.fmt = kGray8;
    info_.mpp_x = like.mpp_x, info_.mpp_y = like.mpp_y;
    LevelInfo li;
    li.width = w, li.height = h;
    li.compression = "none (computed)";
    info_.levels.push_back(li);
  }
  const BitPlane* bit_plane() const override { return &bits_; }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const Rect& r = dst.rect;
    for (int64_t y = r.y; y < r.y1(); ++y)
      unpack_row_bits(plane_.data() + (y + 1) * bits_.pitch, r.x, r.w, dst.ptr<uint8_t>(r.x, y), bits_.on, bits_.off);
  }

 private:
  std::vector<uint32_t> plane_;
  BitPlane bits_;  // over plane_
};

// A whole-image solve's result: one tile, one visit, read from its plane.
void finish_whole(ReconstructResult& res, std::vector<uint32_t> plane, int64_t w, int64_t h, bool zeros,
                  const SourceInfo& like, std::chrono::steady_clock::time_point t0, bool gpu) {
  res.gpu_binary = gpu;
  res.on_gpu = gpu;
  res.whole_image = true;
  res.wavefront.tiles = 1;
  res.wavefront.tile_visits = 1;
  res.wavefront.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.held_bytes = plane.size() * sizeof(uint32_t);
  res.image = make_bit_plane_source(std::move(plane), w, h, zeros, like);
}

// Fill-holes of a mask that a GPU chain computes on the job's device (a
// threshold, an invert): the chain writes the whole image into device
// memory, where it is packed and solved; only the result's bit plane comes
// down. Nothing where that does not apply, or where the image turns out
// not to be binary (the host path then reads it again, and gives its
// answer).
std::optional<ReconstructResult> fill_holes_of_device_chain(const TileSource& mask, const ReconstructJob& job,
                                                            size_t device_budget) {
  const int dev = job.backend.device;
  const DeviceTiles* chain = mask.device_tiles();
  if (!job.marker_is_mask_border || job.params.method != ReconstructMethod::kErosion || !chain ||
      chain->device() != dev)
    return std::nullopt;
  const int64_t W = mask.level(0).width, H = mask.level(0).height;
  const size_t bytes = static_cast<size_t>(W) * static_cast<size_t>(H);
  const size_t plane_bytes = static_cast<size_t>(bit_plane_pitch(W)) * static_cast<size_t>(H + 2) * sizeof(uint32_t);
  if (bytes + 2 * plane_bytes > device_budget / 2) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  ReconstructResult res;
  std::vector<uint32_t> result(plane_bytes / sizeof(uint32_t));
  {
    TraceSpan span("reconstruct-device-chain", H);
    std::shared_ptr<uint8_t> image;
    try {
      image = allocate_device_bytes(dev, bytes);
    } catch (const CudaError&) {
      return std::nullopt;  // the device is fuller than its budget says: the host path
    }
    DeviceImage img;
    img.device = dev, img.data = image.get(), img.pitch = static_cast<size_t>(W), img.fmt = kGray8;
    img.width = W, img.height = H;
    if (!compute_into_device(mask, img, job.memory)) return std::nullopt;
    if (!fill_holes_binary_on_device(dev, job.params.connectivity, image.get(), img.pitch, W, H, result.data(),
                                     &res.gpu))
      return std::nullopt;
  }
  res.gpu_device_input = true;
  finish_whole(res, std::move(result), W, H, true, mask.info(), t0, true);
  return res;
}

}  // namespace

std::shared_ptr<const TileSource> make_bit_plane_source(std::vector<uint32_t> plane, int64_t w, int64_t h, bool zeros,
                                                        const SourceInfo& like) {
  const int64_t pitch = bit_plane_pitch(w);
  if (plane.size() != static_cast<size_t>(pitch) * static_cast<size_t>(h + 2))
    throw InternalError("a bit plane of " + std::to_string(plane.size()) + " words for " + std::to_string(w) + "x" +
                        std::to_string(h));
  return std::make_shared<BitPlaneSource>(std::move(plane), pitch, w, h, zeros, like);
}

std::optional<ReconstructResult> reconstruct_binary_whole(const TileSource& marker, const TileSource& mask,
                                                          const ReconstructJob& job) {
  if (!job.whole_image_on_device || mask.info().fmt != kGray8 || marker.info().fmt != kGray8 ||
      (job.ranks && job.ranks->size() > 1))
    return std::nullopt;
  const bool cuda = job.backend.is_cuda();
  const LevelInfo& l0 = mask.level(0);
  const int64_t W = l0.width, H = l0.height;
  if (marker.level(0).width != W || marker.level(0).height != H) return std::nullopt;
  const int64_t pitch = bit_plane_pitch(W);
  const size_t words = static_cast<size_t>(pitch) * static_cast<size_t>(H + 2);
  const size_t plane_bytes = words * sizeof(uint32_t);
  // Two planes on the host (the marker's becomes the result) within half the
  // budget; on the device, the same two within half its budget.
  if (2 * plane_bytes > job.memory / 2) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  const bool zeros = job.params.method == ReconstructMethod::kErosion;
  const int dev = job.backend.device;
  if (cuda) {
    const std::vector<CudaDeviceInfo> devs = cuda_devices();
    if (dev < 0 || static_cast<size_t>(dev) >= devs.size()) return std::nullopt;
    const size_t device_budget = gpu_memory_budget(job.gpu_memory, devs[static_cast<size_t>(dev)].free_bytes);
    if (2 * plane_bytes > device_budget / 2) return std::nullopt;
    if (std::optional<ReconstructResult> res = fill_holes_of_device_chain(mask, job, device_budget)) return res;
  }
  std::vector<uint32_t> on(words, 0), allowed(words, 0);
  // Bands of rows on all threads: read, marker taken, checked, packed. Any
  // sample other than 0 and 255, or a marker out of order (which the tile
  // path reports, or clips), stops it.
  constexpr int64_t kBand = 64;
  std::atomic<bool> refused{false};
  {
    TraceSpan span("reconstruct-load-bits", H);
    tbb::parallel_for(int64_t{0}, (H + kBand - 1) / kBand, [&](int64_t b) {
      if (refused.load(std::memory_order_relaxed)) return;
      const Rect r(0, b * kBand, W, std::min(kBand, H - b * kBand));
      Image mk(kGray8, r), mm(kGray8, r);
      mask.read(0, mm.view());
      if (job.marker_from_mask)
        job.marker_from_mask(mm.view(), mk.view());
      else
        marker.read(0, mk.view());
      for (int64_t y = r.y; y < r.y1(); ++y) {
        const uint8_t* a = mk.row<uint8_t>(y);
        const uint8_t* m = mm.row<uint8_t>(y);
        if (!bytes_binary(a, W) || !bytes_binary(m, W)) return refused.store(true);
        uint32_t* o = on.data() + (y + 1) * pitch;
        uint32_t* al = allowed.data() + (y + 1) * pitch;
        pack_row_bits(a, W, o + 1, pitch - 1, zeros);
        pack_row_bits(m, W, al + 1, pitch - 1, zeros);
        // Dilation: a marker pixel on where the mask is off; erosion, the
        // same on the complements (marker 0 where the mask is 255).
        uint32_t bad = 0;
        for (int64_t k = 1; k < pitch; ++k) bad |= o[k] & ~al[k];
        if (bad) return refused.store(true);
      }
    });
  }
  if (refused) return std::nullopt;
  ReconstructResult res;
  if (cuda) {
    TraceSpan span("reconstruct-gpu-whole", H);
    reconstruct_binary_planes(dev, job.params.connectivity, on.data(), allowed.data(), W, H, &res.gpu);
  } else {
    TraceSpan span("reconstruct-cpu-whole", H);
    // Long vertical corridors (a serpentine) take a round per turn: the tile
    // wavefront's queue solves those.
    if (!reconstruct_binary_planes_cpu(job.params.connectivity, on.data(), allowed.data(), W, H)) return std::nullopt;
  }
  allowed = std::vector<uint32_t>();
  finish_whole(res, std::move(on), W, H, zeros, mask.info(), t0, cuda);
  return res;
}

}  // namespace tw
