#include "jobs/reconstruct/reconstruct_job.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <limits>
#include <mutex>

#include "engine/memory.hpp"
#include "engine/ops/clones.hpp"
#include "engine/trace.hpp"
#include "jobs/reconstruct/binary_whole.hpp"
#include "jobs/reconstruct/grey_whole.hpp"
#include "kernels/reconstruct/bit_planes.hpp"

namespace tw {
namespace {

// Whether any marker sample is above its mask sample (dilation; below for
// erosion). Plain functions per type: templates get no clones.
// (An OR of saturating differences: GCC leaves an OR of comparisons scalar.)
template <class T>
bool out_of_order_loop(const T* __restrict a, const T* __restrict b, int64_t n, bool dilation) {
  T acc = 0;
  if (dilation)
    for (int64_t x = 0; x < n; ++x) acc |= static_cast<T>(a[x] > b[x] ? a[x] - b[x] : 0);
  else
    for (int64_t x = 0; x < n; ++x) acc |= static_cast<T>(b[x] > a[x] ? b[x] - a[x] : 0);
  return acc != 0;
}
TW_CLONES bool out_of_order(const uint8_t* __restrict a, const uint8_t* __restrict b, int64_t n, bool dilation) {
  return out_of_order_loop(a, b, n, dilation);
}
TW_CLONES bool out_of_order(const uint16_t* __restrict a, const uint16_t* __restrict b, int64_t n, bool dilation) {
  return out_of_order_loop(a, b, n, dilation);
}

// Copies marker/mask tile (tx, ty) into the stores, enforcing marker <= mask
// (dilation) or >= (erosion), and clears *binary if it finds a sample other
// than 0 and 255 (8-bit; binary == nullptr: not asked). Returns an error
// message, or "".
template <class T>
std::string load_tile(const TileSource& marker, const TileSource& mask, ScratchStore& j, ScratchStore& i, int64_t tx,
                      int64_t ty, const ReconstructJob& job, std::atomic<bool>* binary) {
  const Rect t = j.grid().tile_rect(tx, ty);
  ScratchStore::Pin jp = j.acquire(tx, ty, true), ip = i.acquire(tx, ty, true);  // every row is loaded below
  // Rows r of the tile: read, marker taken, order checked.
  auto load_rows = [&](const Rect& r) -> std::string {
    mask.read(0, ip.image().view().sub(r));
    if (job.marker_from_mask)
      job.marker_from_mask(ip.image().view().sub(r), jp.image().view().sub(r));
    else
      marker.read(0, jp.image().view().sub(r));
    const bool dil = job.params.method == ReconstructMethod::kDilation;
    for (int64_t y = r.y; y < r.y1(); ++y) {
      T* a = jp.image().row<T>(y) + (r.x - jp.image().rect().x);
      const T* b = ip.image().row<T>(y) + (r.x - ip.image().rect().x);
      if (!out_of_order(a, b, r.w, dil)) continue;  // the common case, checked a vector at a time
      for (int64_t x = 0; x < r.w; ++x) {
        const bool bad = dil ? a[x] > b[x] : a[x] < b[x];
        if (!bad) continue;
        if (!job.clip)
          return "the marker is " + std::string(dil ? "above" : "below") + " the mask at (" + std::to_string(r.x + x) +
                 ", " + std::to_string(y) + "): " + std::to_string(a[x]) + " vs " + std::to_string(b[x]) +
                 "; reconstruction by " + (dil ? "dilation needs marker <= mask" : "erosion needs marker >= mask") +
                 " (as scikit-image requires); --clip clips the marker to the mask";
        a[x] = b[x];
      }
    }
    if constexpr (sizeof(T) == 1) {
      for (int64_t y = r.y; y < r.y1() && binary && binary->load(std::memory_order_relaxed); ++y)
        if (!bytes_binary(jp.image().row<uint8_t>(y) + (r.x - jp.image().rect().x), r.w) ||
            !bytes_binary(ip.image().row<uint8_t>(y) + (r.x - ip.image().rect().x), r.w))
          binary->store(false, std::memory_order_relaxed);
    }
    return "";
  };
  // A GPU tile (4096 or 8192 rows) is loaded in bands on all threads: whole,
  // it kept one thread busy for 0.3 s of an 8192^2 Canny while 15 waited.
  constexpr int64_t kBand = 256;
  const int64_t bands = (t.h + kBand - 1) / kBand;
  std::vector<std::string> errors(static_cast<size_t>(bands));
  tbb::parallel_for(int64_t{0}, bands, [&](int64_t k) {
    errors[static_cast<size_t>(k)] = load_rows(Rect(t.x, t.y + k * kBand, t.w, std::min(kBand, t.h - k * kBand)));
  });
  for (const std::string& e : errors)
    if (!e.empty()) return e;
  jp.mark_dirty();
  ip.mark_dirty();
  return "";
}

// Stores hold at least 2 * threads + 2 tiles each (below); with CUDA two
// tiles are in work.
constexpr size_t kCudaStoreTiles = 6;

int64_t gpu_tile(const ReconstructJob& job, PixelFormat fmt, int64_t width, int64_t height) {
  if (job.gpu_tile > 0) return job.gpu_tile;
  // No larger than the image needs: a 3848 x 2568 image is one 4096 tile,
  // not a mostly empty 8192 one that costs 4x the memory and copies.
  const int64_t side = std::max(width, height);
  int64_t fit = kCudaTileMax;
  while (fit / 2 >= side && fit / 2 >= job.tile && fit > 256) fit /= 2;
  // The largest that keeps both stores within the budget: a small --memory
  // gets small GPU tiles rather than tiles that overrun it.
  for (int64_t t = fit; t > job.tile; t /= 2)
    if (2 * kCudaStoreTiles * static_cast<size_t>(t * t) * fmt.bytes_per_pixel() <= job.memory) return t;
  return job.tile;
}

}  // namespace

namespace {
ReconstructResult reconstruct_impl(const TileSource& marker, const TileSource& mask, const ReconstructJob& job);
}  // namespace

ReconstructResult reconstruct(const TileSource& mask, const ReconstructJob& job) {
  if (!job.marker_from_mask) throw InternalError("reconstruct(mask, job) needs job.marker_from_mask");
  return reconstruct(mask, mask, job);
}

ReconstructResult reconstruct(const TileSource& marker, const TileSource& mask, const ReconstructJob& job) {
  ReconstructResult r = reconstruct_impl(marker, mask, job);
  // The mask's store is gone: its tiles, freed in LRU order between long-lived
  // small allocations, stay in glibc's heaps unless handed back (peak RSS was
  // 1.7 GB for --memory 1G on a 32768^2 h-dome).
  release_free_heap();
  return r;
}

namespace {
ReconstructResult reconstruct_impl(const TileSource& marker, const TileSource& mask, const ReconstructJob& job) {
  job.params.validate();
  const PixelFormat fmt = mask.info().fmt;
  if (marker.info().fmt != fmt)
    throw InputError("the marker (" + marker.info().fmt.str() + ") and the mask (" + fmt.str() +
                     ") must have the same pixel type");
  if (std::optional<ReconstructResult> whole = reconstruct_binary_whole(marker, mask, job)) return std::move(*whole);
  if (std::optional<ReconstructResult> whole = reconstruct_grey_whole(marker, mask, job)) return std::move(*whole);
  ReconstructResult res;
  const bool cuda = job.backend.is_cuda();
  res.on_gpu = cuda;
  auto rule = cuda ? make_cuda_reconstruct_rule(job.backend.device, fmt, job.params, &res.gpu)
                   : make_reconstruct_rule(fmt, job.params);
  const LevelInfo& l0 = mask.level(0);
  const int64_t tile = cuda ? gpu_tile(job, fmt, l0.width, l0.height) : job.tile;
  const LevelInfo& m0 = marker.level(0);
  if (m0.width != l0.width || m0.height != l0.height)
    throw InputError("the marker is " + std::to_string(m0.width) + "x" + std::to_string(m0.height) +
                     " but the mask is " + std::to_string(l0.width) + "x" + std::to_string(l0.height));
  if (tile < 16 || tile > 16384) throw InputError("--tile must be between 16 and 16384");
  // The budget: half for the working values, the rest for the mask (both
  // spill to scratch files beyond it), but never fewer tiles than the threads
  // pin at once.
  const size_t tile_bytes = static_cast<size_t>(tile * tile) * fmt.bytes_per_pixel();
  // With CUDA one tile is on the device at a time; two in work keep it fed.
  const size_t threads = cuda ? 2 : tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  const size_t floor = tile_bytes * (2 * threads + 2);
  auto j = std::make_shared<ScratchStore>(fmt, l0.width, l0.height, tile, std::max(job.memory / 2, floor),
                                          job.scratch_near, "reconstruction");
  ScratchStore i(fmt, l0.width, l0.height, tile, std::max(job.memory * 3 / 8, floor), job.scratch_near, "mask");
  const TileGrid& g = j->grid();
  std::mutex err_mu;
  std::string error;
  // On the GPU a binary image takes the bit-plane kernel (by erosion, on the
  // complements: fill-holes of a mask).
  const bool dil = job.params.method == ReconstructMethod::kDilation;
  std::atomic<bool> binary{cuda && fmt == kGray8};
  std::atomic<bool>* check = binary ? &binary : nullptr;
  {
    TraceSpan span("reconstruct-load", g.count());
    tbb::parallel_for(int64_t{0}, g.count(), [&](int64_t t) {
      const std::string e = fmt.type == SampleType::kU8
                                ? load_tile<uint8_t>(marker, mask, *j, i, t % g.cols(), t / g.cols(), job, check)
                                : load_tile<uint16_t>(marker, mask, *j, i, t % g.cols(), t / g.cols(), job, check);
      if (!e.empty()) {
        std::lock_guard<std::mutex> l(err_mu);
        if (error.empty()) error = e;
      }
    });
  }
  if (!error.empty()) throw InputError(error);
  if (binary) {
    rule = make_cuda_binary_reconstruct_rule(job.backend.device, job.params.connectivity, &res.gpu, dil);
    res.gpu_binary = true;
  }
  WavefrontOptions wo;
  wo.connectivity = job.params.connectivity;
  if (cuda) wo.max_concurrency = 2;
  wo.ranks = job.ranks;
  TraceSpan run_span("reconstruct-wavefront", g.count());
  res.wavefront = run_wavefront(*j, i, *rule, wo);
  res.store_stats = j->stats();
  res.image = j;
  res.store = std::move(j);
  return res;
}
}  // namespace

ReconstructJob reconstruct_job(const ExecContext& ctx, ReconstructParams params, bool clip) {
  ReconstructJob job;
  job.params = params;
  job.clip = clip;
  job.tile = ctx.tile;
  job.memory = ctx.memory;
  job.gpu_memory = ctx.gpu_memory;
  job.scratch_near = ctx.scratch_near;
  job.backend = ctx.backend;
  job.ranks = ctx.ranks;
  job.result_on_device = ctx.result_to_device;
  return job;
}

}  // namespace tw
