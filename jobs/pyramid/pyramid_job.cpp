#include "engine/warnings.hpp"
#include "jobs/pyramid/pyramid_job.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "engine/jpeg_tables.hpp"
#include "engine/memory.hpp"
#include "engine/progress.hpp"
#include "engine/cuda/device.hpp"
#include "jobs/pyramid/cascade.hpp"
#include "jobs/pyramid/handoff_producer.hpp"
#include "jobs/pyramid/level_producer.hpp"
#include "engine/raw_raster.hpp"
#include "engine/trace.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
using Sizes = std::vector<std::pair<int64_t, int64_t>>;

// Up to this many CPU threads, --gpu-jpeg auto lets the GPU decode a share
// of level 0: libjpeg-turbo decodes ~0.19 GP/s per core on 256-px tiles, the
// H100's hardware decoder ~1.6 GP/s.
constexpr int kGpuJpegMaxThreads = 8;

struct BusyTimer {
  explicit BusyTimer(std::atomic<int64_t>& acc) : acc_(acc), t0_(Clock::now()) {}
  ~BusyTimer() { acc_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count(); }
  std::atomic<int64_t>& acc_;
  Clock::time_point t0_;
};

struct Span {
  int64_t x0 = 0, x1 = 0;
};

// The columns one pass over a vertical stripe of level 0 computes and emits
// at each level 0..K. Emitted spans are tile-aligned; computed spans add the
// halo the 5-tap REDUCE needs from the neighbouring stripes.
struct PassGeom {
  int K = 0;
  std::vector<CascadeLevel> levels;
  std::vector<Span> emit;
};

PassGeom stripe_geometry(const Sizes& sizes, int K, int64_t X0, int64_t X1) {
  PassGeom g;
  g.K = K;
  g.levels.resize(static_cast<size_t>(K) + 1);
  g.emit.resize(static_cast<size_t>(K) + 1);
  const bool last = X1 >= sizes[0].first;
  for (int k = 0; k <= K; ++k) {
    const int64_t w = sizes[k].first;
    g.levels[k].width = w;
    g.levels[k].height = sizes[k].second;
    g.emit[k] = {std::min(X0 >> k, w), last ? w : std::min(X1 >> k, w)};
  }
  g.levels[K].col0 = g.emit[K].x0;
  g.levels[K].col1 = g.emit[K].x1;
  for (int k = K; k >= 1; --k) {
    const CascadeLevel& c = g.levels[k];
    const int64_t lo = std::max<int64_t>(0, 2 * c.col0 - 2);
    const int64_t hi = std::min(sizes[k - 1].first, 2 * (c.col1 - 1) + 3);
    g.levels[k - 1].col0 = std::min(lo, g.emit[k - 1].x0);
    g.levels[k - 1].col1 = std::max(hi, g.emit[k - 1].x1);
  }
  return g;
}

size_t row_bytes(PixelFormat fmt, int64_t w) {
  return ((static_cast<size_t>(w) * fmt.bytes_per_pixel()) + 63) & ~size_t{63};
}

struct Budget {
  size_t cascade = 0, per_token = 0, fixed = 0;
  size_t device = 0;  // the CUDA cascade's device memory (0 on the CPU)
  int64_t tokens(size_t memory) const {
    if (memory <= cascade + fixed) return 0;
    return static_cast<int64_t>((memory - cascade - fixed) / per_token);
  }
};

Budget budget_for(const PassGeom& g, PixelFormat fmt, int64_t T, int threads, double ratio, bool cuda) {
  Budget b;
  // On the GPU the cascade lives in device memory; the host holds the bands
  // coming back (counted per token).
  b.cascade = cuda ? 0 : PyramidCascade::state_bytes(fmt, g.levels, T);
  b.device = cuda ? cuda_producer_bytes(fmt, g.levels, T) : 0;
  const size_t band0 = row_bytes(fmt, g.levels[0].col1 - g.levels[0].col0) * static_cast<size_t>(T);
  // A token holds its level-0 band, the lower-level bands it completed (at
  // most one of each level: < band0 together), their compressed tiles, and
  // the raw tiles of a passed-through band.
  b.per_token = static_cast<size_t>(band0 * (2.0 + 3.0 * std::min(ratio, 1.0)));
  // Per thread: a padded tile copy and the codec's buffers; plus the
  // writer's offset tables and small odds and ends.
  const size_t tile = static_cast<size_t>(T * T) * fmt.bytes_per_pixel();
  b.fixed = static_cast<size_t>(threads) * 4 * tile + (size_t{512} << 10);
  return b;
}

struct Plan {
  int K = 0;        // levels 0..K come from each stripe
  int64_t S = 0;    // stripe width at level 0
  int tokens = 1;
  size_t bytes = 0;
  size_t device_bytes = 0;
};

// Budgets: host memory, and device memory when gpu_memory > 0.
Plan choose_plan(const Sizes& sizes, PixelFormat fmt, int64_t T, size_t memory, size_t gpu_memory, int threads,
                 double ratio) {
  const bool cuda = gpu_memory > 0;
  const int L = static_cast<int>(sizes.size());
  const int64_t W0 = sizes[0].first;
  // Enough bands in flight that every thread has tiles to decode and encode
  // (a band of many tiles keeps many threads busy on its own), plus three
  // for the serial stages; more only costs memory (pinned, for the GPU).
  const int64_t tiles_per_band = std::max<int64_t>(1, ceil_div(W0, T));
  const int max_tokens =
      static_cast<int>(std::min<int64_t>(2 * threads + 2, ceil_div(2 * threads, tiles_per_band) + 3));
  auto fit = [&](int K, int64_t S, Plan& p) {
    // The widest stripe: an interior one when there are three or more.
    const int64_t X0 = W0 > 2 * S ? S : 0;
    const PassGeom g = stripe_geometry(sizes, K, X0, std::min(X0 + S, W0));
    const Budget b = budget_for(g, fmt, T, threads, ratio, cuda);
    const int64_t n = b.tokens(memory);
    if (n < 1 || (cuda && b.device > gpu_memory)) return false;
    p.K = K, p.S = S;
    p.tokens = static_cast<int>(std::min<int64_t>(n, max_tokens));
    p.bytes = b.cascade + b.fixed + b.per_token * static_cast<size_t>(p.tokens);
    p.device_bytes = b.device;
    return true;
  };
  Plan p;
  if (fit(L - 1, W0, p)) return p;
  int j = 1;
  while ((T << (j + 1)) < W0) ++j;
  for (; j >= 1; --j)
    if (fit(std::min(j, L - 1), T << j, p)) return p;
  const Budget b =
      budget_for(stripe_geometry(sizes, std::min(1, L - 1), 0, std::min(2 * T, W0)), fmt, T, threads, ratio, cuda);
  if (cuda && b.device > gpu_memory)
    throw InputError("--gpu-memory " + format_bytes(gpu_memory) + " is too small for " + std::to_string(T) +
                     "-pixel tiles: this pyramid needs at least " + format_bytes(b.device) + " of device memory");
  throw InputError("--memory " + format_bytes(memory) + " is too small for " + std::to_string(T) +
                   "-pixel tiles: this pyramid needs at least " + format_bytes(b.cascade + b.fixed + b.per_token) +
                   " (use a larger --memory or a smaller --tile)");
}

struct TileTask {
  int level = 0;
  int64_t tx = 0, ty = 0;
  std::shared_ptr<const Image> band;   // pixels to encode; null for raw tiles
  std::shared_ptr<const Image> coefs;  // or the JPEG coefficients of its band's tiles (the GPU's)
  const int16_t* coef = nullptr;       // this tile's, within coefs
  std::vector<uint8_t> bytes;          // encoded (or raw, passed through)
};

struct Token {
  int64_t y = 0, h = 0;
  std::shared_ptr<Image> pixels;                 // null when the GPU decodes level 0
  std::vector<std::vector<uint8_t>> jpeg;        // complete level-0 JPEG tiles for the GPU
  std::shared_ptr<JpegTicket> ticket;            // their decoding, handed to the GPU
  std::vector<TileTask> tasks;
  std::vector<FinishedBand> finished;                 // lower-level bands this band completed
  std::vector<std::shared_ptr<const Image>> capture;  // level-K bands for the next pass
};

struct Counters {
  std::string jpeg_decoder;
  int64_t gpu_bands = 0;  // level-0 bands decoded on the GPU
  int64_t gpu_idct_bands = 0;  // ... finished on the GPU after the CPU's entropy decoding
  int64_t gpu_from_row = -1;  // with a pending backend: where the GPU took the cascade over
  // Nanoseconds; host stages summed over threads.
  std::atomic<int64_t> read{0}, decode{0}, reduce{0}, encode{0}, write{0};
  std::atomic<int64_t> encoded{0}, passed{0}, gpu_transformed{0};
  std::atomic<uint64_t> pixels{0}, bytes_read{0};
  DeviceTimes device;
};

struct PassArgs {
  const TileSource* src;
  PyramidSink* sink;
  PassGeom geom;
  int64_t T;
  int tokens;
  bool passthrough;
  bool skip_level0;
  int level_offset;
  RawRasterFile* capture;
  Backend backend;
  PyramidJobOptions::GpuJpeg gpu_jpeg;
  size_t gpu_room;  // device budget left beside the cascade
  size_t gpu_memory;  // --gpu-memory (0: a share of the free memory)
  int64_t gpu_join_row;
};

// Copies the tile's pixels (clipped to the level) into a tile-sized buffer,
// repeating the last column and row into the padding: flat padding costs
// the encoders least and no reader ever shows it.
void pad_tile(const ImageView& band, const Rect& tile, int64_t level_w, int64_t level_h, Image& out) {
  const Rect valid = tile.intersect(Rect(0, 0, level_w, level_h)).intersect(band.rect);
  TW_ASSERT(!valid.empty());
  if (out.empty() || !out.can_hold(band.fmt, tile)) out = Image(band.fmt, tile);
  else out.reshape(band.fmt, tile);
  const size_t bpp = band.fmt.bytes_per_pixel();
  for (int64_t y = tile.y; y < tile.y1(); ++y) {
    const int64_t sy = std::min(y, valid.y1() - 1);
    uint8_t* o = out.row_bytes(y);
    std::memcpy(o, band.ptr_bytes(valid.x, sy), static_cast<size_t>(valid.w) * bpp);
    for (int64_t x = valid.w; x < tile.w; ++x) std::memcpy(o + x * bpp, o + (valid.w - 1) * bpp, bpp);
  }
}

void run_pass(const PassArgs& a, Counters& cnt, Progress& progress) {
  const PassGeom& g = a.geom;
  const CascadeLevel& c0 = g.levels[0];
  const PixelFormat fmt = a.src->info().fmt;
  const int64_t T = a.T;
  // Tokens in flight, freed here if the pipeline is cancelled: declared
  // first, so they outlive the producer (whose decoder may read them).
  std::mutex live_mu;
  std::set<std::unique_ptr<Token>> live;
  auto retire = [&](Token* t) {
    std::lock_guard<std::mutex> l(live_mu);
    for (auto it = live.begin(); it != live.end(); ++it)
      if (it->get() == t) {
        live.erase(it);
        break;
      }
  };
  // Level-0 bands and the bands coming back are pinned when the GPU reads or
  // writes them: the pool's allocator follows the producer's.
  std::unique_ptr<ImagePool> pool = std::make_unique<ImagePool>();
  std::unique_ptr<ImagePool> gpu_pool;  // pinned, for when the GPU joins a pass begun on the CPU
  std::unique_ptr<LevelProducer> producer;
  HandoffProducer* handoff = nullptr;
  // Passed-through JPEG tiles can be decoded on the GPU, straight into the
  // device band (a single stripe: no halo columns to decode on the host).
  const RawTiles* raw_tiles = a.passthrough ? a.src->raw_tiles() : nullptr;
  const RawTileFormat* raw0 = raw_tiles ? raw_tiles->raw_format(0) : nullptr;
  const bool one_stripe = c0.col0 == g.emit[0].x0 && c0.col1 == g.emit[0].x1;
  const int threads = static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  const bool want_gpu_jpeg = a.gpu_jpeg == PyramidJobOptions::GpuJpeg::kOn ||
                             (a.gpu_jpeg == PyramidJobOptions::GpuJpeg::kAuto && threads <= kGpuJpegMaxThreads);
  const bool jpeg_fits = want_gpu_jpeg && raw0 && one_stripe && raw0->tile_w == T && raw0->tile_h == T &&
                         cuda_can_decode(*raw0);
  bool gpu_jpeg = a.backend.is_cuda() && !a.backend.pending && jpeg_fits && cuda_jpeg_bytes(fmt, c0, T, T) <= a.gpu_room;
  // With a hand-over the decoder joins after the cascade (when it fits the
  // device budget then).
  const bool handoff_jpeg = a.backend.pending && jpeg_fits;
  // The split JPEG decode (entropy on the CPU, the rest on the GPU) for the
  // bands nvJPEG does not take, wherever the GPU has the cascade.
  std::optional<JpegCoefLayout> coef_layout;
  if (a.backend.is_cuda() && raw0 && one_stripe && raw0->tile_w == T && raw0->tile_h == T)
    coef_layout = gpu_jpeg_coef_layout(*raw0);
  // And the split JPEG encode of the lower levels: the GPU's bands come back
  // as coefficients, the CPU only entropy-codes them (the bytes are the
  // CPU encoder's). Not for bands kept for a further pass.
  JpegEncodeSpecs encode_specs;
  if (a.backend.is_cuda() && one_stripe && !a.capture && fmt.type == SampleType::kU8) {
    encode_specs.resize(g.levels.size());
    for (int k = 1; k <= g.K; ++k) {
      std::optional<JpegCoefSpec> sp =
          a.sink->jpeg_coefs() ? a.sink->jpeg_coefs()->jpeg_coef_spec(k + a.level_offset) : std::nullopt;
      if (sp && sp->layout.tile == T && sp->layout.components == fmt.channels) encode_specs[static_cast<size_t>(k)] = sp;
    }
  }
  {
    TraceSpan setup_span("producer-setup", 0);
    if (a.backend.pending) {
      gpu_pool = std::make_unique<ImagePool>(gpu_host_allocator());
      auto h = std::make_unique<HandoffProducer>(a.backend, a.gpu_memory, fmt, g.levels, T, *pool, *gpu_pool,
                                                 a.tokens, a.gpu_join_row, handoff_jpeg ? T : 0, coef_layout,
                                                 encode_specs);
      handoff = h.get();
      producer = std::move(h);
    } else if (a.backend.is_cuda()) {
      pool = std::make_unique<ImagePool>(gpu_host_allocator());
      try {
        producer = make_cuda_producer(a.backend.device, fmt, g.levels, T, *pool, gpu_jpeg ? T : 0);
      } catch (const CudaError& e) {
        if (!gpu_jpeg) throw;
        // No usable nvJPEG after all: the CPU decodes, the GPU still reduces.
        warn(std::string("GPU JPEG decoding unavailable (") + e.what() + "); decoding on the CPU");
        gpu_jpeg = false;
        producer = make_cuda_producer(a.backend.device, fmt, g.levels, T, *pool);
      }
      size_t room = a.gpu_room - (gpu_jpeg ? std::min(a.gpu_room, cuda_jpeg_bytes(fmt, c0, T, T)) : 0);
      const size_t enc_need = cuda_encode_bytes(encode_specs, g.levels);
      if (enc_need > 0 && enc_need <= room) {
        try {
          producer->jpeg()->enable_jpeg_encode(encode_specs);
          room -= enc_need;
        } catch (const CudaError& e) {
          warn(std::string("GPU JPEG transform unavailable (") + e.what() + "); encoding on the CPU");
        }
      }
      if (coef_layout && cuda_coef_bytes(fmt, c0, T, *coef_layout, a.tokens + 1) <= room) {
        try {
          producer->jpeg()->enable_coefs(*coef_layout, a.tokens + 1);
        } catch (const CudaError& e) {
          warn(std::string("GPU IDCT unavailable (") + e.what() + "); decoding on the CPU");
        }
      }
    } else {
      producer = make_cpu_producer(fmt, g.levels, T, *pool);
    }
  }
  if (a.passthrough && raw0 && raw0->codec == Codec::kJpeg && cnt.jpeg_decoder.empty())
    cnt.jpeg_decoder = gpu_jpeg ? producer->jpeg()->jpeg_decoder() + " + libjpeg-turbo" : "libjpeg-turbo";
  // The GPU's decoder takes a band when it has room for it (it keeps a short
  // queue); otherwise the reading thread decodes it itself, so CPU threads
  // and the JPEG engines share the work in proportion to their speed.
  std::atomic<int64_t> gpu_decoded{0}, gpu_idct{0};
  // A band whose tiles were not all laid out as the level says (a writer
  // that crops edge tiles, say) turns the split decode off for the pass:
  // every band would repeat the wasted entropy decoding.
  std::atomic<bool> coefs_off{false};
  int64_t next_y = 0;

  auto tile_range = [&](int k) {
    return std::make_pair(g.emit[k].x0 / T, ceil_div(g.emit[k].x1, T));
  };

  // Level-0 bands: pinned once a GPU that joined the pass has the cascade
  // (the plain ones, idle from then on, are freed as they come back).
  auto band_pool = [&]() -> ImagePool& {
    if (!handoff || !handoff->gpu_live()) return *pool;
    pool->clear();
    return *gpu_pool;
  };

  auto read_band = [&](Token* t) {
    TraceSpan span("read", t->y / T);
    cnt.pixels += static_cast<uint64_t>((c0.col1 - c0.col0) * t->h);
    if (!a.passthrough) {
      t->pixels = band_pool().acquire(fmt, Rect(c0.col0, t->y, c0.col1 - c0.col0, t->h));
      BusyTimer timer(cnt.decode);
      a.src->read(0, t->pixels->view());
      return;
    }
    // Not a structured binding: the lambda below uses tx0, and C++17 lets
    // no lambda capture one (clang rejects it; the fuzz build uses clang).
    const std::pair<int64_t, int64_t> range = tile_range(0);
    const int64_t tx0 = range.first, tx1 = range.second;
    const int64_t ty = t->y / T;
    t->tasks.resize(static_cast<size_t>(tx1 - tx0));
    tbb::parallel_for(tx0, tx1, [&](int64_t tx) {
      TileTask& task = t->tasks[static_cast<size_t>(tx - tx0)];
      task.level = 0, task.tx = tx, task.ty = ty;
      BusyTimer timer(cnt.read);
      task.bytes = raw_tiles->read_raw_tile(0, tx, ty);
      cnt.bytes_read += task.bytes.size();
    });
    if (gpu_jpeg || (handoff_jpeg && !handoff->jpeg_decoder().empty())) {
      t->jpeg.resize(t->tasks.size());
      std::vector<JpegTile> tiles(t->tasks.size());
      for (size_t i = 0; i < t->tasks.size(); ++i) {
        merge_jpeg_tables(raw0->jpeg_tables, t->tasks[i].bytes, t->jpeg[i]);
        tiles[i] = {t->tasks[i].tx * T, t->jpeg[i].data(), t->jpeg[i].size()};
      }
      t->ticket = producer->jpeg()->submit_jpeg(t->y, t->h, tiles);
      if (t->ticket) {
        ++gpu_decoded;
        return;
      }
      t->jpeg.clear();
    }
    if (coef_layout && !coefs_off) {
      // Tests that join the GPU at a given row want it from that row on.
      if (handoff && a.gpu_join_row >= 0 && t->y >= a.gpu_join_row) handoff->wait_made();
      if (std::shared_ptr<CoefBand> cb = producer->jpeg() ? producer->jpeg()->acquire_coefs(t->y, t->h) : nullptr) {
        const size_t cpt = coef_layout->coefs_per_tile(), qpt = coef_layout->quant_per_tile();
        std::atomic<bool> fits{true};
        tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
          BusyTimer timer(cnt.decode);
          TraceSpan span("entropy-tile", t->y / T);
          const TileTask& task = t->tasks[i];
          if (!raw_tiles->decode_raw_tile_coefficients(0, task.tx, ty, task.bytes, *coef_layout, cb->coefs + i * cpt,
                                                   cb->quant + i * qpt))
            fits = false;
        });
        // A tile laid out otherwise (another sampling, size...): the whole
        // band decodes on the CPU instead.
        if (!fits) coefs_off = true;
        if (fits) {
          t->ticket = producer->jpeg()->submit_coefs(cb);
          ++gpu_idct;
          // Plain level-0 bands from before the hand-over are idle for good.
          if (handoff) pool->clear();
          return;
        }
      }
    }
    t->pixels = band_pool().acquire(fmt, Rect(c0.col0, t->y, c0.col1 - c0.col0, t->h));
    const ImageView px = t->pixels->view();
    tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
      BusyTimer timer(cnt.decode);
      TraceSpan span("decode-tile", t->y / T);
      const TileTask& task = t->tasks[i];
      const Rect r = Rect(task.tx * T, t->y, T, t->h).intersect(px.rect);
      raw_tiles->decode_raw_tile(0, task.tx, ty, task.bytes, px.sub(r));
    });
    // Halo columns of neighbouring stripes are decoded but not passed on.
    BusyTimer timer(cnt.decode);
    if (c0.col0 < g.emit[0].x0) a.src->read(0, px.sub(Rect(c0.col0, t->y, g.emit[0].x0 - c0.col0, t->h)));
    if (c0.col1 > g.emit[0].x1) a.src->read(0, px.sub(Rect(g.emit[0].x1, t->y, c0.col1 - g.emit[0].x1, t->h)));
  };

  auto reduce_band = [&](Token* t) {
    TraceSpan span("reduce", t->y / T);
    BusyTimer timer(cnt.reduce);
    if (!a.skip_level0 && !a.passthrough) {
      const auto [tx0, tx1] = tile_range(0);
      for (int64_t tx = tx0; tx < tx1; ++tx) t->tasks.push_back({0, tx, t->y / T, t->pixels, {}});
    }
    if (t->ticket) producer->jpeg()->push_submitted(t->ticket, t->finished);
    else producer->push(t->pixels, t->finished);
    for (const FinishedBand& f : t->finished) {
      if (f.coefs) {
        const auto [tx0, tx1] = tile_range(f.level);
        const size_t cpt = encode_specs[static_cast<size_t>(f.level)]->layout.coefs_per_tile();
        const auto* base = reinterpret_cast<const int16_t*>(f.coefs->data());
        for (int64_t tx = tx0; tx < tx1; ++tx) {
          TileTask task{f.level, tx, f.y / T, nullptr, f.coefs, base + static_cast<size_t>(tx - tx0) * cpt, {}};
          t->tasks.push_back(std::move(task));
        }
        continue;
      }
      if (!f.band) continue;
      const auto [tx0, tx1] = tile_range(f.level);
      for (int64_t tx = tx0; tx < tx1; ++tx) t->tasks.push_back({f.level, tx, f.band->rect().y / T, f.band, {}});
      if (a.capture && f.level == g.K) t->capture.push_back(f.band);
    }
  };

  auto encode_band = [&](Token* t) {
    // Bands computed on the GPU may still be on their way back.
    {
      TraceSpan span("wait-gpu", t->y / T);
      for (FinishedBand& f : t->finished)
        if (f.wait) f.wait();
    }
    TraceSpan span("encode", t->y / T);
    BusyTimer timer(cnt.encode);
    static tbb::enumerable_thread_specific<Image> pad;
    tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
      TileTask& task = t->tasks[i];
      if (task.coef) {
        TraceSpan span("entropy-encode-tile", task.level);
        a.sink->jpeg_coefs()->encode_coefficients(task.level + a.level_offset, task.coef, task.bytes);
        task.coefs.reset();
        task.coef = nullptr;
        ++cnt.gpu_transformed;
        return;
      }
      if (!task.band) return;
      TraceSpan span("encode-tile", task.level);
      const CascadeLevel& L = g.levels[task.level];
      const Rect tile(task.tx * T, task.ty * T, T, T);
      const ImageView bv = task.band->view();
      if (bv.rect.contains(tile)) {
        a.sink->encode(task.level + a.level_offset, bv.sub(tile), task.bytes);
      } else {
        Image& p = pad.local();
        pad_tile(bv, tile, L.width, L.height, p);
        a.sink->encode(task.level + a.level_offset, p.view(), task.bytes);
      }
      task.band.reset();
    });
  };

  auto write_band = [&](Token* t) {
    TraceSpan span("write", t->y / T);
    BusyTimer timer(cnt.write);
    for (TileTask& task : t->tasks) {
      a.sink->write(task.level + a.level_offset, task.tx, task.ty, task.bytes);
      ++(task.level == 0 && a.passthrough ? cnt.passed : cnt.encoded);
      progress.advance();
    }
    for (const auto& band : t->capture) {
      const Span e = g.emit[g.K];
      a.capture->write(band->view().sub(Rect(e.x0, band->rect().y, e.x1 - e.x0, band->rect().h)));
    }
    retire(t);
  };

  tbb::parallel_pipeline(
      static_cast<size_t>(a.tokens),
      tbb::make_filter<void, Token*>(tbb::filter_mode::serial_in_order,
                                     [&](tbb::flow_control& fc) -> Token* {
                                       if (next_y >= c0.height) {
                                         fc.stop();
                                         return nullptr;
                                       }
                                       auto t = std::make_unique<Token>();
                                       t->y = next_y;
                                       t->h = std::min(T, c0.height - next_y);
                                       next_y += t->h;
                                       Token* raw = t.get();
                                       std::lock_guard<std::mutex> l(live_mu);
                                       live.insert(std::move(t));
                                       return raw;
                                     }) &
          tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel, [&](Token* t) {
            read_band(t);
            return t;
          }) &
          tbb::make_filter<Token*, Token*>(tbb::filter_mode::serial_in_order, [&](Token* t) {
            reduce_band(t);
            return t;
          }) &
          tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel, [&](Token* t) {
            encode_band(t);
            return t;
          }) &
          tbb::make_filter<Token*, void>(tbb::filter_mode::serial_in_order, [&](Token* t) { write_band(t); }));
  const DeviceTimes d = producer->device_times();
  cnt.device.upload += d.upload, cnt.device.kernel += d.kernel, cnt.device.download += d.download;
  cnt.device.decode += d.decode;
  cnt.gpu_bands += gpu_decoded;
  cnt.gpu_idct_bands += gpu_idct;
  if (handoff && gpu_decoded > 0) cnt.jpeg_decoder = handoff->jpeg_decoder() + " + libjpeg-turbo";
  if (gpu_idct > 0 && cnt.jpeg_decoder.find("GPU IDCT") == std::string::npos)
    cnt.jpeg_decoder += " (entropy decoding) + GPU IDCT";
  if (handoff && handoff->gpu_from_row() >= 0 && cnt.gpu_from_row < 0) cnt.gpu_from_row = handoff->gpu_from_row();
  cnt.device.bytes_up += d.bytes_up, cnt.device.bytes_down += d.bytes_down;
  TraceSpan teardown("pass-teardown", 0);
  producer.reset();
  pool.reset();
  gpu_pool.reset();
}

size_t gpu_budget(const PyramidJobOptions& opt) {
  // A pass that starts on the CPU is planned as a CPU pass.
  if (!opt.backend.is_cuda() || opt.backend.pending) return 0;
  const auto devs = cuda_devices();
  TW_ASSERT(opt.backend.device < static_cast<int>(devs.size()));
  return gpu_memory_budget(opt.gpu_memory, devs[opt.backend.device].free_bytes);
}

std::string scratch_near(const PyramidJobOptions& opt) {
  if (!opt.scratch_near.empty()) return opt.scratch_near;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/tilewave";
}

int64_t tiles_in(const Sizes& sizes, int64_t T, size_t from) {
  int64_t n = 0;
  for (size_t k = from; k < sizes.size(); ++k) n += ceil_div(sizes[k].first, T) * ceil_div(sizes[k].second, T);
  return n;
}

void run_levels(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt, const Sizes& sizes,
                int level_offset, bool skip_level0, bool passthrough, Counters& cnt, Progress& progress,
                PyramidStats& stats, bool top) {
  const int L = static_cast<int>(sizes.size());
  const int all_threads = static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  // A budget too small for every thread's tile buffers gets a pass on fewer
  // threads (an arena of that many) rather than an error: 16 threads need
  // 4.5 MiB for 256-pixel tiles before any band.
  int threads = all_threads;
  Plan plan;
  for (;;) {
    try {
      plan = choose_plan(sizes, src.info().fmt, opt.tile, opt.memory, gpu_budget(opt), threads,
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
    next = std::make_unique<RawRasterFile>(scratch_near(opt), src.info().fmt, sizes[plan.K].first,
                                           sizes[plan.K].second);
  auto passes = [&] {
    for (int64_t s = 0; s < stripes; ++s) {
      PassArgs a{&src, &sink, stripe_geometry(sizes, plan.K, s * plan.S, std::min((s + 1) * plan.S, W0)),
                 opt.tile,    plan.tokens,  passthrough, skip_level0, level_offset, next.get(),
                 opt.backend, opt.gpu_jpeg, gpu_budget(opt) > plan.device_bytes ? gpu_budget(opt) - plan.device_bytes : 0,
                 opt.gpu_memory, opt.gpu_join_row};
      run_pass(a, cnt, progress);
    }
  };
  if (threads < all_threads) tbb::task_arena(threads).execute(passes);
  else passes();
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
  const int threads = static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
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
    throw InputError("--tile " + std::to_string(opt.tile) + " is invalid: tiles must be multiples of 16, from 16 to 16384");
  const Sizes sizes = plan_pyramid_levels(src, opt.min_size);
  if (opt.passthrough) {
    const RawTileFormat* rf = src.raw_tiles() ? src.raw_tiles()->raw_format(0) : nullptr;
    TW_ASSERT(rf && rf->tile_w == opt.tile && rf->tile_h == opt.tile);
  }
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
  stats.gpu_from_row = cnt.gpu_from_row;
  stats.read_s = cnt.read * 1e-9;
  stats.decode_s = cnt.decode * 1e-9;
  stats.reduce_s = cnt.reduce * 1e-9;
  stats.encode_s = cnt.encode * 1e-9;
  stats.write_s = cnt.write * 1e-9;
  stats.upload_s = cnt.device.upload;
  stats.kernel_s = cnt.device.kernel;
  stats.download_s = cnt.device.download;
  stats.bytes_read = cnt.bytes_read;
  stats.bytes_uploaded = cnt.device.bytes_up;
  stats.bytes_downloaded = cnt.device.bytes_down;
  stats.decode_s += cnt.device.decode;
  stats.jpeg_decoder = cnt.jpeg_decoder;
  stats.gpu_decoded_bands = cnt.gpu_bands;
  stats.gpu_idct_bands = cnt.gpu_idct_bands;
  stats.gpu_fdct_tiles = cnt.gpu_transformed;
  stats.tiles_encoded = cnt.encoded;
  stats.tiles_passed_through = cnt.passed;
  stats.pixels_in = cnt.pixels;
  return stats;
}

}  // namespace tw
