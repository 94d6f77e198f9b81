#include "jobs/watershed/watershed_job.hpp"

#include <algorithm>

#include "engine/memory.hpp"
#include "engine/trace.hpp"
#include "kernels/watershed/watershed.hpp"

namespace tw {
namespace {

std::string size_of(const TileSource& s) {
  return std::to_string(s.level(0).width) + "x" + std::to_string(s.level(0).height);
}

void check_inputs(const TileSource& image, const TileSource& markers, const TileSource* mask) {
  const PixelFormat f = image.info().fmt;
  if (f.channels != 1 || (f.type != SampleType::kU8 && f.type != SampleType::kU16 && f.type != SampleType::kF32))
    throw InputError("the image " + image.info().path + " is " + f.str() +
                     "; watershed floods one channel of u8, u16 or f32 (pick one: filter channel, filter gray)");
  if (markers.info().fmt != PixelFormat{SampleType::kU32, 1})
    throw InputError("the markers " + markers.info().path + " are " + markers.info().fmt.str() +
                     "; watershed needs u32 labels (0: no marker)");
  if (mask && mask->info().fmt.channels != 1)
    throw InputError("the mask " + mask->info().path + " is " + mask->info().fmt.str() +
                     "; it needs one channel (0: outside)");
  auto same = [&](const TileSource& s, const char* what) {
    if (s.level(0).width != image.level(0).width || s.level(0).height != image.level(0).height)
      throw InputError(std::string("the ") + what + " " + s.info().path + " are " + size_of(s) + " but the image " +
                       image.info().path + " is " + size_of(image));
  };
  same(markers, "markers");
  if (mask) same(*mask, "mask");
}

}  // namespace

WatershedJob watershed_job(const ExecContext& ctx, int connectivity) {
  WatershedJob job;
  job.connectivity = connectivity;
  job.tile = ctx.tile;
  job.memory = ctx.memory;
  job.scratch_near = ctx.scratch_near;
  job.backend = ctx.backend;
  return job;
}

namespace {

// Both stores hold at least 2 * threads + 2 tiles; with CUDA two tiles are
// in work (the reconstruction's rule: jobs/reconstruct).
constexpr size_t kCudaStoreTiles = 6;
constexpr int64_t kCudaTileMax = 4096;

int64_t gpu_tile(const WatershedJob& job, int64_t width, int64_t height) {
  if (job.gpu_tile > 0) return job.gpu_tile;
  const int64_t side = std::max(width, height);
  int64_t fit = kCudaTileMax;
  while (fit / 2 >= side && fit / 2 >= job.tile && fit > 256) fit /= 2;
  for (int64_t t = fit; t > job.tile; t /= 2)
    if (2 * kCudaStoreTiles * static_cast<size_t>(t * t) * kWsFormat.bytes_per_pixel() <= job.memory) return t;
  return job.tile;
}

}  // namespace

WatershedResult watershed(const TileSource& image, const TileSource& markers, const TileSource* mask,
                          const WatershedJob& job) {
  check_inputs(image, markers, mask);
  if (job.tile < 16 || job.tile > 16384) throw InputError("--tile must be between 16 and 16384");
  const int64_t W = image.level(0).width, H = image.level(0).height;
  const bool cuda = job.backend.is_cuda();
  WatershedResult res;
  if (job.connectivity != 4 && job.connectivity != 8) throw InputError("--connectivity must be 4 or 8");
  std::unique_ptr<TilePropagator> gpu;
  if (cuda) gpu = make_cuda_watershed_rule(job.backend.device, job.connectivity, &res.gpu);
  WsTilesOptions o;
  o.connectivity = job.connectivity;
  o.tile = cuda ? gpu_tile(job, W, H) : job.tile;
  o.memory = job.memory;
  o.scratch_near = job.scratch_near;
  o.gpu = gpu.get();
  WsTilesResult r;
  {
    TraceSpan span("watershed", (W + o.tile - 1) / o.tile * ((H + o.tile - 1) / o.tile));
    r = watershed_tiles(image, markers, mask, o);
  }
  // The packed inputs are gone; hand their scattered tiles back (as the
  // reconstruction does) before the writer plans with the budget.
  release_free_heap();
  res.tiles = r.stats;
  res.seed_pixels = r.stats.seed_pixels;
  res.load_seconds = r.stats.load_seconds;
  res.wavefront.tiles = r.stats.tiles;
  res.wavefront.tile_visits = r.stats.floods;
  res.wavefront.seconds = r.stats.wavefront_seconds;
  res.store = r.stats.store;
  res.labels = std::move(r.labels);
  res.costs = std::move(r.store);
  return res;
}

}  // namespace tw
