#include "jobs/pyramid/pyramid_pass.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/jpeg_tables.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"
#include "jobs/pyramid/handoff_producer.hpp"
#include "jobs/pyramid/pad_tile.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

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

struct TileTask {
  int level = 0;
  int64_t tx = 0, ty = 0;
  std::shared_ptr<const Image> band;   // pixels to encode; null for raw tiles
  std::shared_ptr<const Image> coefs;  // or the JPEG coefficients of its band's tiles (the GPU's)
  const int16_t* coef = nullptr;       // this tile's, within coefs
  std::vector<uint8_t> bytes;          // encoded (or raw, passed through)
  // Where the GPU entropy-coded the band: this tile's FinishedBand::entropy_sizes.
  const uint32_t* entropy_size = nullptr;
  // Where it packed them too: this tile's FinishedBand::entropy_offsets (read
  // once the band is home; `coef` is then only the tile's unpacked place).
  const uint64_t* entropy_offset = nullptr;
};

struct Token {
  int64_t y = 0, h = 0;
  std::shared_ptr<Image> pixels;           // null when the GPU decodes level 0
  std::vector<std::vector<uint8_t>> jpeg;  // complete level-0 JPEG tiles for the GPU
  std::shared_ptr<JpegTicket> ticket;      // their decoding, handed to the GPU
  std::vector<TileTask> tasks;
  std::vector<FinishedBand> finished;                 // lower-level bands this band completed
  std::vector<std::shared_ptr<const Image>> capture;  // level-K bands for the next pass
};

// One pass: the stages of the pipeline as methods over the pass's state.
class Pass {
 public:
  Pass(const PassArgs& a, Counters& cnt, Progress& progress)
      : a_(a), g_(a.geom), c0_(g_.levels[0]), fmt_(a.src->info().fmt), T_(a.T), cnt_(cnt), progress_(progress) {}

  void run() {
    if (a_.share) next_y_ = a_.share->read0;
    plan_reading();
    make_producer();
    pipeline();
    finish();
  }

 private:
  // What level 0 comes as, decided once for the pass: decoded pixels from
  // the source, or its raw tiles (passed through), which the GPU's hardware
  // decoder, the split decode (entropy on the CPU, the rest on the GPU) or
  // the CPU decodes, band by band as each has room.
  void plan_reading() {
    raw_tiles_ = a_.passthrough ? a_.src->raw_tiles() : nullptr;
    raw0_ = raw_tiles_ ? raw_tiles_->raw_format(0) : nullptr;
    // Device decoding needs the band's tiles exactly (a single stripe: no
    // halo columns to decode on the host).
    const bool one_stripe = c0_.col0 == g_.emit[0].x0 && c0_.col1 == g_.emit[0].x1;
    const int threads =
        static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
    const bool want_gpu_jpeg = a_.gpu_jpeg == PyramidJobOptions::GpuJpeg::kOn ||
                               (a_.gpu_jpeg == PyramidJobOptions::GpuJpeg::kAuto && threads <= kGpuJpegMaxThreads);
    const bool whole_tiles = raw0_ && one_stripe && raw0_->tile_w == T_ && raw0_->tile_h == T_;
    const bool jpeg_fits = want_gpu_jpeg && whole_tiles && cuda_can_decode(*raw0_);
    gpu_jpeg_ =
        a_.backend.is_cuda() && !a_.backend.pending && jpeg_fits && cuda_jpeg_bytes(fmt_, c0_, T_, T_) <= a_.gpu_room;
    // With a hand-over the decoder joins after the cascade (when it fits the
    // device budget then).
    handoff_jpeg_ = a_.backend.pending && jpeg_fits;
    if (a_.backend.is_cuda() && whole_tiles) coef_layout_ = gpu_jpeg_coef_layout(*raw0_);
    // And the split JPEG encode of the lower levels: the GPU's bands come
    // back as coefficients, the CPU only entropy-codes them (the bytes are
    // the CPU encoder's). Not for bands kept for a further pass.
    if (a_.backend.is_cuda() && one_stripe && !a_.capture && !a_.share && fmt_.type == SampleType::kU8) {
      encode_specs_.resize(g_.levels.size());
      // Level 0 as well where the pass computes and writes it: the band is
      // uploaded for the cascade anyway, and the CPU's transform of it was
      // most of the level's encoding (a nuclei overlay: 31k tiles of 2 GP;
      // `pyramid --recompress`: 9 of its 17 thread-seconds on the H200).
      // With a hand-over, only the bands the GPU pushes come back so; the
      // CPU encodes those its cascade took (reduce_band).
      const bool level0 = !a_.passthrough && !a_.skip_level0;
      for (int k = level0 ? 0 : 1; k <= g_.K; ++k) {
        std::optional<JpegCoefSpec> sp =
            a_.sink->jpeg_coefs() ? a_.sink->jpeg_coefs()->jpeg_coef_spec(k + a_.level_offset) : std::nullopt;
        if (sp && sp->layout.tile == T_ && sp->layout.components == fmt_.channels)
          encode_specs_[static_cast<size_t>(k)] = sp;
      }
    }
  }

  // Level-0 bands and the bands coming back are pinned when the GPU reads or
  // writes them: the pool's allocator follows the producer's.
  void make_producer() {
    TraceSpan setup_span("producer-setup", 0);
    if (a_.backend.pending) {
      gpu_pool_ = std::make_unique<ImagePool>(gpu_host_allocator());
      auto h = std::make_unique<HandoffProducer>(a_.backend, a_.gpu_memory, fmt_, g_.levels, T_, *pool_, *gpu_pool_,
                                                 a_.tokens, a_.gpu_join_row, handoff_jpeg_ ? T_ : 0, coef_layout_,
                                                 encode_specs_);
      handoff_ = h.get();
      producer_ = std::move(h);
    } else if (a_.backend.is_cuda()) {
      pool_ = std::make_unique<ImagePool>(gpu_host_allocator());
      try {
        producer_ = make_cuda_producer(a_.backend.device, fmt_, g_.levels, T_, *pool_, gpu_jpeg_ ? T_ : 0);
      } catch (const CudaError& e) {
        if (!gpu_jpeg_) throw;
        // No usable nvJPEG after all: the CPU decodes, the GPU still reduces.
        warn(std::string("GPU JPEG decoding unavailable (") + e.what() + "); decoding on the CPU");
        gpu_jpeg_ = false;
        producer_ = make_cuda_producer(a_.backend.device, fmt_, g_.levels, T_, *pool_);
      }
      size_t room = a_.gpu_room - (gpu_jpeg_ ? std::min(a_.gpu_room, cuda_jpeg_bytes(fmt_, c0_, T_, T_)) : 0);
      bool split_encode = false;
      enable_split_jpeg(*producer_->jpeg(), encode_specs_, coef_layout_, a_.tokens + 1, fmt_, g_.levels, T_, room,
                        &split_encode, nullptr);
      enable_device_bands(split_encode, room);
    } else {
      producer_ = make_cpu_producer(fmt_, g_.levels, T_, *pool_);
    }
    if (a_.passthrough && raw0_ && raw0_->codec == Codec::kJpeg && cnt_.jpeg_decoder.empty())
      cnt_.jpeg_decoder = gpu_jpeg_ ? producer_->jpeg()->jpeg_decoder() + " + libjpeg-turbo" : "libjpeg-turbo";
  }

  // Level 0 computed by a GPU chain on the producer's device, and
  // transformed and coded there too: its bands go from the chain into the
  // cascade's device memory and never to the host (a nuclei overlay's 2 GP
  // went down after the overlay op and up again into the cascade, 12 GB
  // across PCIe and copies on the host's cores).
  void enable_device_bands(bool split_encode, size_t room) {
    const DeviceTiles* chain = a_.src->device_tiles();
    if (!split_encode || encode_specs_.empty() || !encode_specs_[0] || a_.passthrough || a_.skip_level0 || !chain ||
        chain->device() != producer_->jpeg()->device() || c0_.col1 - c0_.col0 != g_.levels[0].width)
      return;
    try {
      device_bands_ = producer_->jpeg()->enable_device_bands(a_.tokens, room);
    } catch (const CudaError& e) {
      warn(std::string("level 0 not kept on the GPU (") + e.what() + "); reading it through the host");
    }
  }

  // The band computed into the cascade's device memory, where it can be.
  bool computed_on_device(Token* t) {
    if (!device_bands_) return false;
    const Rect r(c0_.col0, t->y, c0_.col1 - c0_.col0, t->h);
    const int device = producer_->jpeg()->device();
    t->ticket = producer_->jpeg()->compute_on_device(t->y, t->h, [&](uint8_t* dst, size_t pitch) {
      compute_rect_into_device(*a_.src, r, DeviceImage{device, dst, pitch, fmt_, r.w, r.h}, a_.memory);
    });
    if (!t->ticket) return false;
    ++device_bands_done_;
    return true;
  }

  std::pair<int64_t, int64_t> tile_range(int k) const { return {g_.emit[k].x0 / T_, ceil_div(g_.emit[k].x1, T_)}; }

  // Level-0 bands: pinned once a GPU that joined the pass has the cascade
  // (the plain ones, idle from then on, are freed as they come back).
  ImagePool& band_pool() {
    if (!handoff_ || !handoff_->gpu_live()) return *pool_;
    pool_->clear();
    return *gpu_pool_;
  }

  void read_band(Token* t) {
    TraceSpan span("read", t->y / T_);
    cnt_.pixels += static_cast<uint64_t>((c0_.col1 - c0_.col0) * t->h);
    if (!a_.passthrough) {
      BusyTimer timer(cnt_.decode);
      if (computed_on_device(t)) return;
      t->pixels = band_pool().acquire(fmt_, Rect(c0_.col0, t->y, c0_.col1 - c0_.col0, t->h));
      a_.src->read(0, t->pixels->view());
      return;
    }
    read_raw_tiles(t);
    // The GPU's decoder takes a band when it has room for it (it keeps a
    // short queue); otherwise the reading thread decodes it itself, so CPU
    // threads and the JPEG engines share the work in proportion to speed.
    if (gpu_decodes(t) || gpu_finishes_decoding(t)) return;
    decode_on_cpu(t);
  }

  void read_raw_tiles(Token* t) {
    const std::pair<int64_t, int64_t> range = tile_range(0);
    const int64_t tx0 = range.first, tx1 = range.second, ty = t->y / T_;
    t->tasks.resize(static_cast<size_t>(tx1 - tx0));
    tbb::parallel_for(tx0, tx1, [&](int64_t tx) {
      TileTask& task = t->tasks[static_cast<size_t>(tx - tx0)];
      task.level = 0, task.tx = tx, task.ty = ty;
      BusyTimer timer(cnt_.read);
      task.bytes = raw_tiles_->read_raw_tile(0, tx, ty);
      cnt_.bytes_read += task.bytes.size();
    });
  }

  // nvJPEG, where the pass has it and it takes the band.
  bool gpu_decodes(Token* t) {
    if (!gpu_jpeg_ && !(handoff_jpeg_ && !handoff_->jpeg_decoder().empty())) return false;
    t->jpeg.resize(t->tasks.size());
    std::vector<JpegTile> tiles(t->tasks.size());
    for (size_t i = 0; i < t->tasks.size(); ++i) {
      merge_jpeg_tables(raw0_->jpeg_tables, t->tasks[i].bytes, t->jpeg[i]);
      tiles[i] = {t->tasks[i].tx * T_, t->jpeg[i].data(), t->jpeg[i].size()};
    }
    t->ticket = producer_->jpeg()->submit_jpeg(t->y, t->h, tiles);
    if (t->ticket) {
      ++gpu_decoded_;
      return true;
    }
    t->jpeg.clear();
    return false;
  }

  // The split decode: the CPU entropy-decodes into a band of coefficients
  // the GPU lends, the GPU does the rest.
  bool gpu_finishes_decoding(Token* t) {
    if (!coef_layout_ || coefs_off_) return false;
    // Tests that join the GPU at a given row want it from that row on.
    if (handoff_ && a_.gpu_join_row >= 0 && t->y >= a_.gpu_join_row) handoff_->wait_made();
    std::shared_ptr<CoefBand> cb = producer_->jpeg() ? producer_->jpeg()->acquire_coefs(t->y, t->h) : nullptr;
    if (!cb) return false;
    const size_t cpt = coef_layout_->coefs_per_tile(), qpt = coef_layout_->quant_per_tile();
    const int64_t ty = t->y / T_;
    std::atomic<bool> fits{true};
    tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
      BusyTimer timer(cnt_.decode);
      TraceSpan span("entropy-tile", ty);
      const TileTask& task = t->tasks[i];
      if (!raw_tiles_->decode_raw_tile_coefficients(0, task.tx, ty, task.bytes, *coef_layout_, cb->coefs + i * cpt,
                                                    cb->quant + i * qpt))
        fits = false;
    });
    // A tile laid out otherwise (another sampling, size, a writer that crops
    // edge tiles): the split decode is off for the rest of the pass, or every
    // band would repeat the wasted entropy decoding.
    if (!fits) {
      coefs_off_ = true;
      return false;
    }
    t->ticket = producer_->jpeg()->submit_coefs(cb);
    ++gpu_idct_;
    // Plain level-0 bands from before the hand-over are idle for good.
    if (handoff_) pool_->clear();
    return true;
  }

  void decode_on_cpu(Token* t) {
    t->pixels = band_pool().acquire(fmt_, Rect(c0_.col0, t->y, c0_.col1 - c0_.col0, t->h));
    const ImageView px = t->pixels->view();
    const int64_t ty = t->y / T_;
    tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
      BusyTimer timer(cnt_.decode);
      TraceSpan span("decode-tile", ty);
      const TileTask& task = t->tasks[i];
      const Rect r = Rect(task.tx * T_, t->y, T_, t->h).intersect(px.rect);
      raw_tiles_->decode_raw_tile(0, task.tx, ty, task.bytes, px.sub(r));
    });
    // Halo columns of neighbouring stripes are decoded but not passed on.
    BusyTimer timer(cnt_.decode);
    if (c0_.col0 < g_.emit[0].x0) a_.src->read(0, px.sub(Rect(c0_.col0, t->y, g_.emit[0].x0 - c0_.col0, t->h)));
    if (c0_.col1 > g_.emit[0].x1) a_.src->read(0, px.sub(Rect(g_.emit[0].x1, t->y, c0_.col1 - g_.emit[0].x1, t->h)));
  }

  void reduce_band(Token* t) {
    TraceSpan span("reduce", t->y / T_);
    BusyTimer timer(cnt_.reduce);
    const BandShare* share = a_.share;
    // Ghost rows of a share: reduced for the rows below, not written here.
    const bool own0 = !share || share->owns(0, t->y);
    if (!own0) t->tasks.clear();  // raw tiles read for pass-through
    if (t->ticket)
      producer_->jpeg()->push_submitted(t->ticket, t->finished);
    else
      producer_->push(t->pixels, t->finished);
    // Level 0's tiles: as the GPU's coefficients among the finished bands
    // where it transformed the band (a band its cascade took), else from
    // the pixels.
    const bool level0_back = std::any_of(t->finished.begin(), t->finished.end(),
                                         [](const FinishedBand& f) { return f.level == 0 && f.coefs; });
    if (!a_.skip_level0 && !a_.passthrough && own0 && !level0_back) {
      const auto [tx0, tx1] = tile_range(0);
      for (int64_t tx = tx0; tx < tx1; ++tx) t->tasks.push_back({0, tx, t->y / T_, t->pixels, {}, nullptr, {}});
    }
    for (const FinishedBand& f : t->finished) {
      if (share && (f.coefs || !f.band || !share->owns(f.level, f.band->rect().y))) continue;
      if (f.coefs) {
        const auto [tx0, tx1] = tile_range(f.level);
        const size_t cpt = encode_specs_[static_cast<size_t>(f.level)]->layout.coefs_per_tile();
        const auto* base = reinterpret_cast<const int16_t*>(f.coefs->data());
        for (int64_t tx = tx0; tx < tx1; ++tx) {
          TileTask task{f.level,
                        tx,
                        f.y / T_,
                        nullptr,
                        f.coefs,
                        base + static_cast<size_t>(tx - tx0) * cpt,
                        {},
                        f.entropy_sizes ? f.entropy_sizes + (tx - tx0) : nullptr,
                        f.entropy_offsets ? f.entropy_offsets + (tx - tx0) : nullptr};
          t->tasks.push_back(std::move(task));
        }
        continue;
      }
      if (!f.band) continue;
      const auto [tx0, tx1] = tile_range(f.level);
      for (int64_t tx = tx0; tx < tx1; ++tx)
        t->tasks.push_back({f.level, tx, f.band->rect().y / T_, f.band, {}, nullptr, {}});
      if ((a_.capture || share) && f.level == g_.K) t->capture.push_back(f.band);
    }
  }

  void encode_band(Token* t) {
    // Bands computed on the GPU may still be on their way back.
    {
      TraceSpan span("wait-gpu", t->y / T_);
      for (FinishedBand& f : t->finished)
        if (f.wait) f.wait();
    }
    TraceSpan span("encode", t->y / T_);
    BusyTimer timer(cnt_.encode);
    tbb::parallel_for(size_t{0}, t->tasks.size(), [&](size_t i) {
      TileTask& task = t->tasks[i];
      if (task.coef) {
        const auto* data = task.entropy_offset ? task.coefs->data() + *task.entropy_offset
                                               : reinterpret_cast<const uint8_t*>(task.coef);
        if (task.entropy_size && *task.entropy_size != kJpegTileAsCoefficients) {
          // The GPU's segment between the stream's head and EOI.
          const std::vector<uint8_t>& head = encode_specs_[static_cast<size_t>(task.level)]->head;
          const uint8_t* seg = data;
          task.bytes.reserve(head.size() + *task.entropy_size + 2);
          task.bytes.assign(head.begin(), head.end());
          task.bytes.insert(task.bytes.end(), seg, seg + *task.entropy_size);
          task.bytes.push_back(0xFF);
          task.bytes.push_back(0xD9);
          ++cnt_.gpu_entropy_coded;
        } else {
          TraceSpan span("entropy-encode-tile", task.level);
          a_.sink->jpeg_coefs()->encode_coefficients(task.level + a_.level_offset,
                                                     reinterpret_cast<const int16_t*>(data), task.bytes);
        }
        task.coefs.reset();
        task.coef = nullptr;
        ++cnt_.gpu_transformed;
        return;
      }
      if (!task.band) return;
      TraceSpan span("encode-tile", task.level);
      const CascadeLevel& L = g_.levels[task.level];
      const Rect tile(task.tx * T_, task.ty * T_, T_, T_);
      const ImageView bv = task.band->view();
      if (bv.rect.contains(tile)) {
        a_.sink->encode(task.level + a_.level_offset, bv.sub(tile), task.bytes);
      } else {
        Image& p = pad_.local();
        pad_tile(bv, tile, L.width, L.height, p);
        a_.sink->encode(task.level + a_.level_offset, p.view(), task.bytes);
      }
      task.band.reset();
    });
  }

  void write_band(Token* t) {
    TraceSpan span("write", t->y / T_);
    BusyTimer timer(cnt_.write);
    for (TileTask& task : t->tasks) {
      if (a_.share)
        a_.share->tile(t->y / T_, task.level, task.tx, task.ty, task.bytes);
      else
        a_.sink->write(task.level + a_.level_offset, task.tx, task.ty, task.bytes);
      ++(task.level == 0 && a_.passthrough ? cnt_.passed : cnt_.encoded);
      progress_.advance();
    }
    for (const auto& band : t->capture) {
      const Span e = g_.emit[g_.K];
      const ImageView rows = band->view().sub(Rect(e.x0, band->rect().y, e.x1 - e.x0, band->rect().h));
      if (a_.share)
        a_.share->rows_of_last_level(rows);
      else
        a_.capture->write(rows);
    }
    retire(t);
  }

  Token* next_token(tbb::flow_control& fc) {
    if (next_y_ >= (a_.share ? a_.share->read1 : c0_.height)) {
      fc.stop();
      return nullptr;
    }
    auto t = std::make_unique<Token>();
    t->y = next_y_;
    t->h = std::min(T_, c0_.height - next_y_);
    next_y_ += t->h;
    Token* raw = t.get();
    std::lock_guard<std::mutex> l(live_mu_);
    live_.insert(std::move(t));
    return raw;
  }

  void retire(Token* t) {
    std::lock_guard<std::mutex> l(live_mu_);
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (it->get() == t) {
        live_.erase(it);
        break;
      }
  }

  void pipeline() {
    auto stage = [this](void (Pass::*fn)(Token*)) {
      return [this, fn](Token* t) {
        (this->*fn)(t);
        return t;
      };
    };
    tbb::parallel_pipeline(
        static_cast<size_t>(a_.tokens),
        tbb::make_filter<void, Token*>(tbb::filter_mode::serial_in_order,
                                       [this](tbb::flow_control& fc) { return next_token(fc); }) &
            tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel, stage(&Pass::read_band)) &
            tbb::make_filter<Token*, Token*>(tbb::filter_mode::serial_in_order, stage(&Pass::reduce_band)) &
            tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel, stage(&Pass::encode_band)) &
            tbb::make_filter<Token*, void>(tbb::filter_mode::serial_in_order, [this](Token* t) { write_band(t); }));
  }

  void finish() {
    const DeviceTimes d = producer_->device_times();
    cnt_.device.upload += d.upload, cnt_.device.kernel += d.kernel, cnt_.device.download += d.download;
    cnt_.device.decode += d.decode;
    cnt_.gpu_bands += gpu_decoded_;
    cnt_.gpu_idct_bands += gpu_idct_;
    cnt_.device_bands += device_bands_done_;
    if (handoff_ && gpu_decoded_ > 0) cnt_.jpeg_decoder = handoff_->jpeg_decoder() + " + libjpeg-turbo";
    if (gpu_idct_ > 0 && cnt_.jpeg_decoder.find("GPU IDCT") == std::string::npos)
      cnt_.jpeg_decoder += " (entropy decoding) + GPU IDCT";
    if (handoff_ && handoff_->gpu_from_row() >= 0 && cnt_.gpu_from_row < 0)
      cnt_.gpu_from_row = handoff_->gpu_from_row();
    cnt_.device.bytes_up += d.bytes_up, cnt_.device.bytes_down += d.bytes_down;
    TraceSpan teardown("pass-teardown", 0);
    producer_.reset();
    pool_.reset();
    gpu_pool_.reset();
  }

  const PassArgs& a_;
  const PassGeom& g_;
  const CascadeLevel& c0_;
  const PixelFormat fmt_;
  const int64_t T_;
  Counters& cnt_;
  Progress& progress_;
  // Tokens in flight, freed here if the pipeline is cancelled: declared
  // before the producer, so they outlive it (its decoder may read them).
  std::mutex live_mu_;
  std::set<std::unique_ptr<Token>> live_;
  std::unique_ptr<ImagePool> pool_ = std::make_unique<ImagePool>();
  std::unique_ptr<ImagePool> gpu_pool_;  // pinned, for when the GPU joins a pass begun on the CPU
  std::unique_ptr<LevelProducer> producer_;
  HandoffProducer* handoff_ = nullptr;
  const RawTiles* raw_tiles_ = nullptr;
  const RawTileFormat* raw0_ = nullptr;
  bool gpu_jpeg_ = false, handoff_jpeg_ = false;
  std::optional<JpegCoefLayout> coef_layout_;
  JpegEncodeSpecs encode_specs_;
  // Edge tiles padded for the encoder, per thread; the pass's own, not a
  // static: exit() destroys statics while a job still runs (a daemon
  // thread of Python), and a never-destroyed one is a leak to LeakSanitizer.
  tbb::enumerable_thread_specific<Image> pad_;
  std::atomic<int64_t> gpu_decoded_{0}, gpu_idct_{0}, device_bands_done_{0};
  bool device_bands_ = false;  // level-0 bands computed into the cascade's device memory
  std::atomic<bool> coefs_off_{false};
  int64_t next_y_ = 0;
};

}  // namespace

void run_pass(const PassArgs& a, Counters& cnt, Progress& progress) {
  Pass(a, cnt, progress).run();
}

void counters_to_stats(const Counters& cnt, PyramidStats& stats) {
  stats.gpu_from_row = cnt.gpu_from_row;
  stats.read_s = cnt.read * 1e-9;
  stats.decode_s = cnt.decode * 1e-9 + cnt.device.decode;
  stats.reduce_s = cnt.reduce * 1e-9;
  stats.encode_s = cnt.encode * 1e-9;
  stats.write_s = cnt.write * 1e-9;
  stats.upload_s = cnt.device.upload;
  stats.kernel_s = cnt.device.kernel;
  stats.download_s = cnt.device.download;
  stats.bytes_read = cnt.bytes_read;
  stats.bytes_uploaded = cnt.device.bytes_up;
  stats.bytes_downloaded = cnt.device.bytes_down;
  stats.jpeg_decoder = cnt.jpeg_decoder;
  stats.gpu_decoded_bands = cnt.gpu_bands;
  stats.gpu_idct_bands = cnt.gpu_idct_bands;
  stats.gpu_device_bands = cnt.device_bands;
  stats.gpu_fdct_tiles = cnt.gpu_transformed;
  stats.gpu_entropy_tiles = cnt.gpu_entropy_coded;
  stats.tiles_encoded = cnt.encoded;
  stats.tiles_passed_through = cnt.passed;
  stats.pixels_in = cnt.pixels;
}

}  // namespace tw
