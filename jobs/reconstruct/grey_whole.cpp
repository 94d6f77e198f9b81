#include "jobs/reconstruct/grey_whole.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>

#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/error.hpp"
#include "engine/trace.hpp"

namespace tw {
namespace {

// Brings the result down into a tile store of `tile` tiles (spilling beyond
// half the budget, as the tile path's store does): a row of tiles at a time
// through pinned memory, its tiles filled on all threads while the next row
// comes down.
std::shared_ptr<ScratchStore> download_to_store(const DeviceImage& img, const ReconstructJob& job) {
  const int64_t tile = job.tile;
  const size_t threads =
      static_cast<size_t>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  const size_t tile_bytes = static_cast<size_t>(tile * tile) * img.fmt.bytes_per_pixel();
  auto store = std::make_shared<ScratchStore>(img.fmt, img.width, img.height, tile,
                                              std::max(job.memory / 2, tile_bytes * (2 * threads + 2)),
                                              job.scratch_near, "reconstruction");
  const TileGrid& g = store->grid();
  for_each_band_from_device(img, tile, [&](const ImageView& band) {
    const int64_t ty = band.rect.y / tile;
    tbb::parallel_for(int64_t{0}, g.cols(), [&](int64_t tx) {
      ScratchStore::Pin p = store->acquire(tx, ty, true);
      copy_overlap(band, p.image().view());
      p.mark_dirty();
    });
  });
  return store;
}

}  // namespace

std::optional<ReconstructResult> reconstruct_grey_whole(const TileSource& marker, const TileSource& mask,
                                                        const ReconstructJob& job) {
  const PixelFormat fmt = mask.info().fmt;
  if (!job.backend.is_cuda() || !job.whole_image_on_device || (fmt != kGray8 && fmt != kGray16) ||
      marker.info().fmt != fmt || (job.ranks && job.ranks->size() > 1))
    return std::nullopt;
  // A marker made from the mask must be one the device can make too.
  const bool given = !job.marker_from_mask;
  if (!given && !job.marker_is_mask_border && job.marker_mask_minus <= 0) return std::nullopt;
  const int64_t W = mask.level(0).width, H = mask.level(0).height;
  if (marker.level(0).width != W || marker.level(0).height != H) return std::nullopt;
  const std::vector<CudaDeviceInfo> devs = cuda_devices();
  const int dev = job.backend.device;
  if (dev < 0 || static_cast<size_t>(dev) >= devs.size()) return std::nullopt;
  // The mask, the marker (or the result, where the marker is made on the
  // device) and the words, within half the device budget.
  const size_t image_bytes = static_cast<size_t>(W) * static_cast<size_t>(H) * fmt.bytes_per_pixel();
  const size_t need = 2 * image_bytes + grey_whole_image_device_bytes(W, H);
  if (need > gpu_memory_budget(job.gpu_memory, devs[static_cast<size_t>(dev)].free_bytes) / 2) return std::nullopt;

  const auto t0 = std::chrono::steady_clock::now();
  ReconstructResult res;
  DeviceImage out;
  std::shared_ptr<uint8_t> out_mem;
  try {
    TraceSpan span("reconstruct-grey-whole", H);
    DeviceImage img;
    img.device = dev, img.pitch = static_cast<size_t>(W) * fmt.bytes_per_pixel(), img.fmt = fmt;
    img.width = W, img.height = H;
    std::shared_ptr<uint8_t> mask_mem = allocate_device_bytes(dev, image_bytes);
    out_mem = allocate_device_bytes(dev, image_bytes);
    DeviceImage m = img;
    m.data = mask_mem.get();
    out = img;
    out.data = out_mem.get();
    res.gpu_device_input = compute_into_device(mask, m, job.memory);
    if (given) res.gpu_device_input = compute_into_device(marker, out, job.memory) && res.gpu_device_input;
    GreyWholeImage a;
    a.fmt = fmt, a.params = job.params, a.width = W, a.height = H, a.pitch = img.pitch;
    a.mask = m.data, a.marker = given ? out.data : nullptr, a.out = out.data;
    a.mask_minus = given ? 0 : job.marker_mask_minus;
    a.mask_border = !given && job.marker_is_mask_border;
    a.clip = job.clip;
    a.dome = job.dome;
    if (!reconstruct_grey_on_device(dev, a, &res.gpu)) return std::nullopt;  // out of order: the tiles report it
  } catch (const CudaError&) {
    return std::nullopt;  // the device is fuller than its budget says: the tile path
  }
  res.whole_image = true;
  res.dome = job.dome;
  res.on_gpu = true;
  res.wavefront.tiles = 1;
  res.wavefront.tile_visits = 1;
  res.image = make_device_image_source(out, out_mem, "reconstruction (device)");
  if (!job.result_on_device) {
    TraceSpan span("reconstruct-grey-download", H);
    const auto d0 = std::chrono::steady_clock::now();
    res.store = download_to_store(out, job);
    res.store_stats = res.store->stats();
    res.image = res.store;
    res.gpu.transfer_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();
  }
  res.wavefront.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace tw
