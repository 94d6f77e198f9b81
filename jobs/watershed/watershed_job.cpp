#include "jobs/watershed/watershed_job.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>

#include "engine/map_source.hpp"
#include "engine/memory.hpp"
#include "engine/sample_dispatch.hpp"
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

// Altitude keys of one row; "" or the error for a NaN.
template <class T>
std::string keys_of(const uint8_t* row, WsInput* in, int64_t x0, int64_t y, int64_t n, const std::string& name) {
  const T* s = reinterpret_cast<const T*>(row);
  for (int64_t x = 0; x < n; ++x) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(s[x]))
        return "the image " + name + " has NaN at (" + std::to_string(x0 + x) + ", " + std::to_string(y) +
               "); watershed needs ordered altitudes (replace NaN first, e.g. filter convert)";
    }
    in[x].key = ws_key(s[x]);
  }
  return "";
}

template <class T>
void inside_of(const uint8_t* row, WsInput* in, int64_t n) {
  const T* s = reinterpret_cast<const T*>(row);
  for (int64_t x = 0; x < n; ++x) in[x].inside = s[x] != T(0);
}

class LabelSource : public OwningMapSource {
 public:
  LabelSource(std::shared_ptr<const TileSource> costs, const SourceInfo& like)
      : OwningMapSource({std::move(costs)}, PixelFormat{SampleType::kU32, 1}, rows, "watershed labels") {
    info_.mpp_x = like.mpp_x, info_.mpp_y = like.mpp_y;
  }

 private:
  static void rows(const std::vector<const uint8_t*>& in, uint8_t* out, int64_t, int64_t, int64_t n) {
    const auto* c = reinterpret_cast<const WsCost*>(in[0]);
    auto* o = reinterpret_cast<uint32_t*>(out);
    for (int64_t x = 0; x < n; ++x) o[x] = c[x].label;
  }
};

struct Loader {
  Loader(const TileSource& im, const TileSource& mk, const TileSource* ms, ScratchStore& js, ScratchStore& is, int conn)
      : image(im), markers(mk), mask(ms), j(js), i(is), connectivity(conn) {}
  const TileSource& image;
  const TileSource& markers;
  const TileSource* mask;
  ScratchStore& j;
  ScratchStore& i;
  int connectivity;
  bool flood = true;  // the CPU floods each tile from its seeds as it loads
  std::atomic<int64_t> seeds{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  tbb::enumerable_thread_specific<Image> halo;

  void fail(const std::string& e) {
    std::lock_guard<std::mutex> l(mu);
    if (error.empty()) error = e;
    failed = true;
  }

  // Reads tile (tx, ty) of every input into I, seeds J and floods the tile
  // from its own seeds (the halo neutral: the engine brings the
  // neighbours' floods in later).
  void load(int64_t tx, int64_t ty) {
    const Rect core = j.grid().tile_rect(tx, ty);
    const Image img = image.read(0, core);
    const Image mk = markers.read(0, core);
    Image ms;
    if (mask) ms = mask->read(0, core);
    ScratchStore::Pin ip = i.acquire(tx, ty, true);
    const ImageView iv = ip.image().view().sub(core);
    int64_t n_seeds = 0;
    for (int64_t y = core.y; y < core.y1(); ++y) {
      WsInput* in = iv.row<WsInput>(y);
      const std::string& name = image.info().path;
      const std::string e =
          img.fmt().type == SampleType::kU8    ? keys_of<uint8_t>(img.row_bytes(y), in, core.x, y, core.w, name)
          : img.fmt().type == SampleType::kU16 ? keys_of<uint16_t>(img.row_bytes(y), in, core.x, y, core.w, name)
                                               : keys_of<float>(img.row_bytes(y), in, core.x, y, core.w, name);
      if (!e.empty()) return fail(e);
      if (mask)
        with_sample_type(ms.fmt().type, [&](auto t) { inside_of<decltype(t)>(ms.row_bytes(y), in, core.w); });
      else
        for (int64_t x = 0; x < core.w; ++x) in[x].inside = 1;
      const uint32_t* m = mk.row<uint32_t>(y);
      for (int64_t x = 0; x < core.w; ++x) {
        // A marker outside the mask is dropped (as scikit-image does).
        in[x].seed = in[x].inside ? m[x] : 0;
        n_seeds += in[x].seed != 0;
      }
    }
    ip.mark_dirty();
    seeds += n_seeds;
    Image& h = halo.local();
    const Rect hr = core.grown(1);
    if (h.empty() || !h.can_hold(kWsFormat, hr))
      h = Image(kWsFormat, hr);
    else
      h.reshape(kWsFormat, hr);
    const ImageView hv = h.view();
    for (int64_t y = hr.y; y < hr.y1(); ++y)
      for (int64_t x = hr.x; x < hr.x1(); ++x) *hv.ptr<WsCost>(x, y) = kWsNeutral;
    if (flood && n_seeds) watershed_flood_tile(hv, iv, core, connectivity);
    ScratchStore::Pin jp = j.acquire(tx, ty, true);
    copy_overlap(hv.sub(core), jp.image().view());
    jp.mark_dirty();
  }
};

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
  const auto rule = cuda ? make_cuda_watershed_rule(job.backend.device, job.connectivity, &res.gpu)
                         : make_watershed_rule(job.connectivity);
  const int64_t tile = cuda ? gpu_tile(job, W, H) : job.tile;
  // The budget: half for the working costs, the rest for the inputs (both
  // spill to scratch files beyond it), but never fewer tiles than the
  // threads pin at once.
  const size_t tile_bytes = static_cast<size_t>(tile * tile) * kWsFormat.bytes_per_pixel();
  const size_t threads = cuda ? 2 : tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  const size_t floor = tile_bytes * (2 * threads + 2);
  auto j = std::make_shared<ScratchStore>(kWsFormat, W, H, tile, std::max(job.memory / 2, floor), job.scratch_near,
                                          "watershed costs");
  {
    ScratchStore i(kWsFormat, W, H, tile, std::max(job.memory * 3 / 8, floor), job.scratch_near, "watershed inputs");
    const TileGrid& g = j->grid();
    const auto t0 = std::chrono::steady_clock::now();
    {
      TraceSpan span("watershed-load", g.count());
      Loader ld(image, markers, mask, *j, i, job.connectivity);
      // The GPU's first visit of a tile floods it from scratch anyway; a
      // 4096^2 tile flooded on one CPU thread would take longer than that.
      ld.flood = !cuda;
      tbb::parallel_for(int64_t{0}, g.count(), [&](int64_t t) {
        if (!ld.failed) ld.load(t % g.cols(), t / g.cols());
      });
      if (ld.failed) throw InputError(ld.error);
      res.seed_pixels = ld.seeds.load();
    }
    res.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    WavefrontOptions wo;
    wo.connectivity = job.connectivity;
    if (cuda) wo.max_concurrency = 2;  // one tile on the device, one loading
    TraceSpan span("watershed-wavefront", g.count());
    res.wavefront = run_wavefront(*j, i, *rule, wo);
  }
  // The inputs' store is gone; hand its scattered tiles back (as the
  // reconstruction does) before the writer plans with the budget.
  release_free_heap();
  res.store = j->stats();
  res.labels = std::make_shared<LabelSource>(j, image.info());
  res.costs = std::move(j);
  return res;
}

}  // namespace tw
