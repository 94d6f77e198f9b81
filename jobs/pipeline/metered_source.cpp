#include "jobs/pipeline/metered_source.hpp"

#include <chrono>

namespace tw {
namespace {

// What metered reads nested in the current one (on this thread) took.
struct Nested {
  uint64_t ns = 0;
  ByteCounts bytes;
};
thread_local Nested t_nested;

class MeteredDeviceTiles final : public DeviceTiles {
 public:
  MeteredDeviceTiles(const DeviceTiles& in, StepMeter& meter) : in_(in), meter_(meter) {}
  int device() const override { return in_.device(); }
  void stage(const Rect& r, StagedInputs& host) const override { in_.stage(r, host); }
  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& chain) const override {
    meter_.visits.fetch_add(1, std::memory_order_relaxed);
    meter_.pixels.fetch_add(r.area(), std::memory_order_relaxed);
    in_.compute(r, dst, pitch, chain);
  }

 private:
  const DeviceTiles& in_;
  StepMeter& meter_;
};

}  // namespace

MeteredSource::MeteredSource(std::shared_ptr<const TileSource> in, std::shared_ptr<StepMeter> meter)
    : in_(std::move(in)), meter_(std::move(meter)) {
  info_ = in_->info();
  if (const DeviceTiles* d = in_->device_tiles()) device_ = std::make_unique<MeteredDeviceTiles>(*d, *meter_);
}

const BitPlane* MeteredSource::bit_plane() const {
  const BitPlane* b = in_->bit_plane();
  if (b) {
    meter_->visits.fetch_add(1, std::memory_order_relaxed);
    meter_->pixels.fetch_add(level(0).width * level(0).height, std::memory_order_relaxed);
  }
  return b;
}

void MeteredSource::read_inside(int level, const ImageView& dst) const {
  const Nested saved = t_nested;
  t_nested = {};
  const ByteCounts b0 = thread_byte_counts();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    in_->read(level, dst);
  } catch (...) {
    t_nested = saved;
    throw;
  }
  const uint64_t el = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  const ByteCounts db = thread_byte_counts() - b0;
  const ByteCounts own = db - t_nested.bytes;
  meter_->visits.fetch_add(1, std::memory_order_relaxed);
  meter_->pixels.fetch_add(dst.rect.area(), std::memory_order_relaxed);
  meter_->busy_ns.fetch_add(el > t_nested.ns ? el - t_nested.ns : 0, std::memory_order_relaxed);
  meter_->spilled.fetch_add(own.spilled, std::memory_order_relaxed);
  meter_->uploaded.fetch_add(own.uploaded, std::memory_order_relaxed);
  meter_->downloaded.fetch_add(own.downloaded, std::memory_order_relaxed);
  t_nested = saved;
  t_nested.ns += el;
  t_nested.bytes += db;
}

}  // namespace tw
