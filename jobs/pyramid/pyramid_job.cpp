#include "jobs/pyramid/pyramid_job.hpp"

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "engine/cuda/device.hpp"
#include "engine/memory.hpp"
#include "engine/progress.hpp"
#include "engine/raw_raster.hpp"
#include "jobs/pyramid/banded_pyramid.hpp"
#include "jobs/pyramid/pass_plan.hpp"
#include "jobs/pyramid/pyramid_pass.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

std::string scratch_near(const PyramidJobOptions& opt) {
  if (!opt.scratch_near.empty()) return opt.scratch_near;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/tilewave";
}

void run_levels(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt, const Sizes& sizes,
                int level_offset, bool skip_level0, bool passthrough, Counters& cnt, Progress& progress,
                PyramidStats& stats, bool top) {
  const int L = static_cast<int>(sizes.size());
  const int all_threads =
      static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  // A budget too small for every thread's tile buffers gets a pass on fewer
  // threads (an arena of that many) rather than an error: 16 threads need
  // 4.5 MiB for 256-pixel tiles before any band.
  int threads = all_threads;
  Plan plan;
  for (;;) {
    try {
      plan = choose_plan(sizes, src.info().fmt, opt.tile, opt.memory, pyramid_gpu_budget(opt), threads,
                         sink.compression_ratio_estimate());
      break;
    } catch (const InputError&) {
      if (threads == 1) throw;
      threads = std::max(1, threads / 2);
    }
  }
  const int64_t W0 = sizes[0].first;
  const int64_t stripes = ceil_div(W0, plan.S);
  if (top) {
    stats.tokens = plan.tokens;
    stats.stripes = static_cast<int>(stripes);
    stats.planned_bytes = plan.bytes;
    stats.planned_device_bytes = plan.device_bytes;
  }
  std::unique_ptr<RawRasterFile> next;
  if (plan.K < L - 1)
    next =
        std::make_unique<RawRasterFile>(scratch_near(opt), src.info().fmt, sizes[plan.K].first, sizes[plan.K].second);
  auto passes = [&] {
    for (int64_t s = 0; s < stripes; ++s) {
      PassArgs a{&src,
                 &sink,
                 stripe_geometry(sizes, plan.K, s * plan.S, std::min((s + 1) * plan.S, W0)),
                 opt.tile,
                 plan.tokens,
                 passthrough,
                 skip_level0,
                 level_offset,
                 next.get(),
                 opt.backend,
                 opt.gpu_jpeg,
                 pyramid_gpu_budget(opt) > plan.device_bytes ? pyramid_gpu_budget(opt) - plan.device_bytes : 0,
                 opt.gpu_memory,
                 opt.gpu_join_row};
      a.memory = opt.memory;
      run_pass(a, cnt, progress);
      // A stripe's bands are of its own width: freed into the heap, where
      // the next stripe's do not fit them, they grew the process stripe by
      // stripe (a 100000-pixel-wide slide under --memory 64M: 71 to 123 MB
      // of heap over 7 stripes). Given back between stripes when over budget.
      release_free_heap_now_and_then();
    }
  };
  if (threads < all_threads)
    tbb::task_arena(threads).execute(passes);
  else
    passes();
  if (next) {
    const Sizes rest(sizes.begin() + plan.K, sizes.end());
    run_levels(*next, sink, opt, rest, level_offset + plan.K, true, false, cnt, progress, stats, false);
  }
}

// Whether a pass with a pending CUDA backend can start on the CPU and let the
// GPU join (HandoffProducer): CUDA is still starting, the pass is a single
// one (no stripes), the cascade fits a modest device budget (the real one is
// unknown until CUDA is up), and the GPU's JPEG decoder is not required from
// the first band (--gpu-jpeg on).
bool can_start_on_cpu(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt, const Sizes& sizes) {
  if (cuda_devices_ready() && opt.gpu_join_row < 0) return false;
  // --gpu-jpeg on: the decoder from the first band, as asked (a decoder that
  // joins later may find the pass over); auto lets it join when it can.
  if (opt.passthrough && opt.gpu_jpeg == PyramidJobOptions::GpuJpeg::kOn && opt.gpu_join_row < 0) return false;
  const int threads = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  const PixelFormat fmt = src.info().fmt;
  Plan plan;
  try {
    plan = choose_plan(sizes, fmt, opt.tile, opt.memory, 0, threads, sink.compression_ratio_estimate());
  } catch (const InputError&) {
    return false;  // too tight for the CPU's cascade; the GPU's may fit
  }
  const int L = static_cast<int>(sizes.size());
  if (plan.K != L - 1 || plan.S < sizes[0].first) return false;
  const size_t device = cuda_producer_bytes(fmt, stripe_geometry(sizes, plan.K, 0, sizes[0].first).levels, opt.tile);
  return device <= (opt.gpu_memory ? opt.gpu_memory : size_t{256} << 20);
}

}  // namespace

size_t pyramid_gpu_budget(const PyramidJobOptions& opt) {
  // A pass that starts on the CPU is planned as a CPU pass.
  if (!opt.backend.is_cuda() || opt.backend.pending) return 0;
  const auto devs = cuda_devices();
  TW_ASSERT(opt.backend.device < static_cast<int>(devs.size()));
  return gpu_memory_budget(opt.gpu_memory, devs[opt.backend.device].free_bytes);
}

std::vector<std::pair<int64_t, int64_t>> plan_pyramid_levels(const TileSource& src, int64_t min_size) {
  if (min_size < 1) throw InputError("--min-size must be at least 1, not " + std::to_string(min_size));
  const LevelInfo& l0 = src.level(0);
  return pyramid_level_sizes(l0.width, l0.height, min_size);
}

PyramidStats run_pyramid(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt_in) {
  // The GPU cascade reduces 8- and 16-bit samples; floats stay on the CPU.
  PyramidJobOptions opt = opt_in;
  const SampleType st = src.info().fmt.type;
  if (opt.backend.is_cuda() && st != SampleType::kU8 && st != SampleType::kU16) {
    resolve_backend(opt.backend);  // "cuda" without a device is still an error
    opt.backend = Backend{};
  }
  if (opt.tile < 16 || opt.tile % 16 != 0 || opt.tile > 16384)
    throw InputError("--tile " + std::to_string(opt.tile) +
                     " is invalid: tiles must be multiples of 16, from 16 to 16384");
  const Sizes sizes = plan_pyramid_levels(src, opt.min_size);
  if (opt.passthrough) {
    const RawTileFormat* rf = src.raw_tiles() ? src.raw_tiles()->raw_format(0) : nullptr;
    TW_ASSERT(rf && rf->tile_w == opt.tile && rf->tile_h == opt.tile);
  }
  if (opt.ranks && opt.ranks->size() > 1) return run_pyramid_banded(src, sink, opt, *opt.ranks);
  if (opt.backend.pending && !can_start_on_cpu(src, sink, opt, sizes)) opt.backend = resolve_backend(opt.backend);
  PyramidStats stats;
  stats.level_sizes = sizes;
  Counters cnt;
  Progress progress(opt.progress_label, tiles_in(sizes, opt.tile, 0), static_cast<double>(opt.tile * opt.tile));
  const auto t0 = Clock::now();
  run_levels(src, sink, opt, sizes, 0, false, opt.passthrough, cnt, progress, stats, true);
  // A pass can end before CUDA is up; "cuda" without a usable device must
  // still fail, as it does when CUDA answers first.
  if (opt.backend.pending && cnt.gpu_from_row < 0) resolve_backend(opt.backend);
  progress.finish();
  stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  stats.backend = opt.backend.pending && cnt.gpu_from_row < 0 ? "cpu" : opt.backend.str();
  counters_to_stats(cnt, stats);
  return stats;
}

}  // namespace tw
