#include "jobs/pyramid/handoff_producer.hpp"

#include <chrono>
#include <cstdio>

#include "engine/cuda/device.hpp"
#include "engine/memory.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"

namespace tw {

HandoffProducer::HandoffProducer(const Backend& backend, size_t gpu_memory, PixelFormat fmt,
                                 std::vector<CascadeLevel> levels, int64_t band_rows, ImagePool& cpu_pool,
                                 ImagePool& gpu_pool, int warm_bands, int64_t join_row, int64_t jpeg_tile,
                                 std::optional<JpegCoefLayout> coefs, JpegEncodeSpecs encode)
    : backend_(backend), cpu_pool_(cpu_pool), gpu_pool_(gpu_pool), join_row_(join_row) {
  TW_ASSERT(backend.pending);
  cpu_ = make_cpu_producer(fmt, levels, band_rows, cpu_pool);
  std::promise<std::unique_ptr<LevelProducer>> made;
  ready_ = made.get_future();
  made_ = made_flag_.get_future().share();
  starting_ = std::async(std::launch::async, [this, gpu_memory, fmt, levels, band_rows, warm_bands, jpeg_tile, coefs,
                                              encode = std::move(encode), made = std::move(made)]() mutable {
    LevelProducer* raw = nullptr;
    size_t room = 0;
    try {
      TraceSpan span("gpu-start", 0);
      std::unique_ptr<LevelProducer> p;
      const auto devs = cuda_devices();
      if (backend_.device < static_cast<int>(devs.size())) {
        const size_t need = cuda_producer_bytes(fmt, levels, band_rows);
        const size_t budget = gpu_memory_budget(gpu_memory, devs[backend_.device].free_bytes);
        if (need > budget) {
          why_not_ =
              "the pyramid needs " + format_bytes(need) + " of device memory, the budget is " + format_bytes(budget);
        } else {
          room = budget - need;
          p = make_cuda_producer(backend_.device, fmt, levels, band_rows, gpu_pool_);
          // Lower levels written as JPEG come back as coefficients (the GPU
          // does the forward transform, the CPU the entropy coding), and
          // level-0 JPEG tiles may be finished on the GPU after the CPU's
          // entropy decoding.
          bool split_encode = false, split = false;
          enable_split_jpeg(*p->jpeg(), encode, coefs, warm_bands + 1, fmt, levels, band_rows, room, &split_encode,
                            &split);
          // Pinned buffers for the bands coming back, which the pipeline's
          // serial stage would otherwise wait to allocate (pinning costs
          // ~0.5 ms per MB).
          for (size_t k = 1; k < levels.size(); ++k)
            for (int i = 0; i < warm_bands; ++i) {
              if (split_encode && k < encode.size() && encode[k])
                gpu_pool_.add_idle(PixelFormat{SampleType::kU8, 1},
                                   Rect(0, 0, static_cast<int64_t>(coef_band_bytes(*encode[k], levels[k])), 1));
              else
                gpu_pool_.add_idle(fmt, Rect(levels[k].col0, 0, levels[k].col1 - levels[k].col0,
                                             std::min(band_rows, levels[k].height)));
            }
          // Level 0's coefficients, where the GPU transforms the bands it
          // takes (a computed level 0 written as JPEG): one per token and a
          // spare, as below.
          if (split_encode && !encode.empty() && encode[0])
            for (int i = 0; i <= warm_bands; ++i)
              gpu_pool_.add_idle(PixelFormat{SampleType::kU8, 1},
                                 Rect(0, 0, static_cast<int64_t>(coef_band_bytes(*encode[0], levels[0])), 1));
          // Level-0 bands after the hand-over (one per token and a spare):
          // JPEG tiles the GPU finishes decoding (their coefficients, pinned),
          // else pinned pixels. Either way the GPU reads them by DMA; from
          // plain memory the driver copies through its own staging buffer,
          // ~7 GB/s on the caller's thread: 4.5 ms per 45056-pixel RGB band,
          // a thread's worth of the pass.
          if (!split) {
            for (int i = 0; i <= warm_bands; ++i)
              gpu_pool_.add_idle(
                  fmt, Rect(levels[0].col0, 0, levels[0].col1 - levels[0].col0, std::min(band_rows, levels[0].height)));
          }
        }
      }
      raw = p.get();
      gpu_made_.store(raw, std::memory_order_release);
      made.set_value(std::move(p));
      made_flag_.set_value();
    } catch (...) {
      made.set_exception(std::current_exception());
      made_flag_.set_value();
      return;
    }
    // The JPEG decoder comes second: the cascade need not wait for it. It is
    // optional; without it the CPU decodes every band, as it would anyway.
    if (raw && jpeg_tile > 0 && !closing_ && cuda_jpeg_bytes(fmt, levels[0], band_rows, jpeg_tile) <= room) {
      try {
        TraceSpan span("gpu-jpeg-start", 0);
        raw->jpeg()->enable_jpeg(jpeg_tile);
      } catch (const std::exception& e) {
        warn(std::string("GPU JPEG decoding unavailable (") + e.what() + "); decoding on the CPU");
      }
    }
  });
}

HandoffProducer::~HandoffProducer() {
  closing_ = true;
  if (starting_.valid()) starting_.wait();
}

void HandoffProducer::take_over(int64_t row) {
  std::unique_ptr<LevelProducer> g;
  try {
    g = ready_.get();
  } catch (const std::exception& e) {
    if (!backend_.optional) throw;
    warn(std::string("the GPU could not start (") + e.what() + "); continuing on the CPU");
  }
  if (!g) {
    // "cuda" without a usable device is an error, as it is for every other
    // command; with a device but too little memory, the CPU goes on.
    if (!backend_.optional && why_not_.empty()) resolve_backend(backend_);
    if (!why_not_.empty()) warn("pyramid stays on the CPU: " + why_not_);
    gave_up_ = true;
    return;
  }
  // Tests join at a fixed row, with the JPEG decoder (if asked for) up.
  if (join_row_ >= 0) starting_.wait();
  TraceSpan span("handoff", row);
  g->adopt(cpu_->snapshot());
  cpu_.reset();
  // The CPU's idle lower-level bands: the GPU's pinned ones replace them.
  cpu_pool_.clear();
  gpu_ = std::move(g);
  gpu_live_.store(gpu_.get(), std::memory_order_release);
  gpu_from_row_ = row;
}

void HandoffProducer::push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) {
  const int64_t y = band0->rect().y;
  if (!gpu_ && !gave_up_) {
    if (join_row_ >= 0 ? y >= join_row_ : ready_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
      take_over(y);
  }
  if (gpu_) {
    gpu_->push(band0, out);
  } else {
    cpu_->push(band0, out);
  }
}

std::shared_ptr<JpegTicket> HandoffProducer::submit_jpeg(int64_t y, int64_t rows, const std::vector<JpegTile>& tiles) {
  // Only bands the GPU will push: it has the cascade already, and keeps it.
  LevelProducer* g = gpu_live_.load(std::memory_order_acquire);
  return g ? g->jpeg()->submit_jpeg(y, rows, tiles) : nullptr;
}

void HandoffProducer::push_submitted(const std::shared_ptr<JpegTicket>& ticket, std::vector<FinishedBand>& out) {
  if (!gpu_) take_over(ticket->y);
  TW_ASSERT(gpu_);
  gpu_->jpeg()->push_submitted(ticket, out);
}

std::shared_ptr<CoefBand> HandoffProducer::acquire_coefs(int64_t y, int64_t rows) {
  // Before the hand-over too: a band decoded this way is pushed to the GPU,
  // which then takes the cascade there (push_submitted).
  if (join_row_ >= 0 && y < join_row_) return nullptr;
  LevelProducer* g = gpu_made_.load(std::memory_order_acquire);
  return g ? g->jpeg()->acquire_coefs(y, rows) : nullptr;
}

std::shared_ptr<JpegTicket> HandoffProducer::submit_coefs(const std::shared_ptr<CoefBand>& band) {
  LevelProducer* g = gpu_made_.load(std::memory_order_acquire);
  TW_ASSERT(g);
  return g->jpeg()->submit_coefs(band);
}

void HandoffProducer::wait_made() const {
  made_.wait();
}

std::string HandoffProducer::jpeg_decoder() const {
  LevelProducer* g = gpu_live_.load(std::memory_order_acquire);
  return g ? g->jpeg()->jpeg_decoder() : "";
}

DeviceTimes HandoffProducer::device_times() const {
  return gpu_ ? gpu_->device_times() : DeviceTimes{};
}

}  // namespace tw
