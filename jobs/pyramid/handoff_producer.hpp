#pragma once
// A pyramid pass that does not wait for CUDA to start. CUDA's start-up (the
// driver, a context, pinned buffers: 0.2-0.4 s on an H100 host) used to
// come before the first band; here the CPU cascade takes the first bands
// while a background thread brings the device up, and at the first band
// after the device is ready the cascade's state moves to the GPU, which
// carries on from there. Every pixel is the same either way (the two
// cascades compute the same REDUCE, bit for bit).
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "jobs/pyramid/level_producer.hpp"

namespace tw {

class HandoffProducer : public LevelProducer, public JpegCoding {
 public:
  // backend: pending (parse_backend_deferred). cpu_pool: plain memory, for
  // level-0 bands until the hand-over and the CPU's lower bands; gpu_pool:
  // pinned, for level-0 bands once the GPU has the cascade (gpu_live()) and
  // the bands it sends back, warm_bands of each level (and one more of level
  // 0) allocated in advance by the thread that starts CUDA: pinning them
  // during the pass (~0.5 ms per MB) held the driver's lock against the
  // pass's copies and stalled it for ~0.1 s.
  // join_row >= 0 (tests): hand over exactly at the first band from that
  // row, waiting for the GPU (and its JPEG decoder) there if need be. jpeg_tile > 0: once the GPU
  // has the cascade, its JPEG decoder (nvJPEG, started after the cascade's
  // producer: it takes ~0.4 s more) may take level-0 bands too.
  HandoffProducer(const Backend& backend, size_t gpu_memory, PixelFormat fmt, std::vector<CascadeLevel> levels,
                  int64_t band_rows, ImagePool& cpu_pool, ImagePool& gpu_pool, int warm_bands, int64_t join_row = -1,
                  int64_t jpeg_tile = 0, std::optional<JpegCoefLayout> coefs = {}, JpegEncodeSpecs encode = {});
  ~HandoffProducer() override;

  void push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) override;
  // Null until the GPU has the cascade and its coefficient slots (made
  // with `coefs`, in place of pinned level-0 bands).
  std::shared_ptr<CoefBand> acquire_coefs(int64_t y, int64_t rows) override;
  std::shared_ptr<JpegTicket> submit_coefs(const std::shared_ptr<CoefBand>& band) override;
  // Blocks until the thread starting CUDA has made the GPU's producer or
  // failed to (tests: a pass that must use the GPU from a given row).
  void wait_made() const;
  // Declined (null) until the GPU has the cascade and its decoder is up.
  std::shared_ptr<JpegTicket> submit_jpeg(int64_t y, int64_t rows, const std::vector<JpegTile>& tiles) override;
  void push_submitted(const std::shared_ptr<JpegTicket>& ticket, std::vector<FinishedBand>& out) override;
  std::string jpeg_decoder() const override;
  DeviceTimes device_times() const override;
  JpegCoding* jpeg() override { return this; }

  // Whether the GPU has the cascade: level-0 bands read from now on are
  // pushed to it (any thread may ask).
  bool gpu_live() const { return gpu_live_.load(std::memory_order_acquire) != nullptr; }
  // The level-0 row from which the GPU made the pyramid; -1: it never did.
  int64_t gpu_from_row() const { return gpu_from_row_; }

 private:
  void take_over(int64_t row);

  Backend backend_;
  ImagePool& cpu_pool_;
  ImagePool& gpu_pool_;
  std::unique_ptr<LevelProducer> cpu_, gpu_;
  std::atomic<LevelProducer*> gpu_live_{nullptr};  // gpu_, for the pipeline's other threads
  std::atomic<LevelProducer*> gpu_made_{nullptr};  // the GPU's producer as soon as it exists
  std::promise<void> made_flag_;                   // set when the starting thread has made it (or failed)
  std::shared_future<void> made_;
  std::future<std::unique_ptr<LevelProducer>> ready_;  // the GPU's producer, once made
  std::future<void> starting_;                         // the thread that starts CUDA (and nvJPEG)
  std::atomic<bool> closing_{false};                   // the pass is over: no decoder wanted
  std::string why_not_;  // set by the starting thread when the GPU cannot take the cascade
  int64_t join_row_;
  bool gave_up_ = false;
  int64_t gpu_from_row_ = -1;
};

}  // namespace tw
