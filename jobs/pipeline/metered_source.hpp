#pragma once
// A step's result as the pipeline's report sees it: reads counted (tile
// visits, pixels) and timed, with the time and the bytes that the step's
// inputs took on the same thread taken off, so each streamed step is
// charged for its own work only. Reads inside a read run on the reading
// thread (an op reads its input before it computes), which is what makes
// the subtraction right; work the op spreads over other threads is charged
// as the waiting thread's time.
#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/byte_counters.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct StepMeter {
  std::atomic<int64_t> visits{0}, pixels{0};
  std::atomic<uint64_t> busy_ns{0}, spilled{0}, uploaded{0}, downloaded{0};
  ByteCounts bytes() const { return {spilled.load(), uploaded.load(), downloaded.load()}; }
};

class MeteredSource final : public TileSource {
 public:
  MeteredSource(std::shared_ptr<const TileSource> in, std::shared_ptr<StepMeter> meter);
  const RawTiles* raw_tiles() const override { return in_->raw_tiles(); }
  // A GPU op reading this step's result takes it on the device: a visit of
  // its pixels, whose time and bytes the reading step is charged.
  const DeviceTiles* device_tiles() const override { return device_ ? device_.get() : nullptr; }
  // A reader taking the result as bits takes it whole: one visit of every
  // pixel, counted when it asks.
  const BitPlane* bit_plane() const override;
  void set_read_cache(size_t bytes) const override { in_->set_read_cache(bytes); }
  size_t read_cache_for_level0() const override { return in_->read_cache_for_level0(); }
  size_t decode_unit_bytes(int level) const override { return in_->decode_unit_bytes(level); }
  void set_decode_budget(size_t bytes) const override { in_->set_decode_budget(bytes); }
  const TileSource& inner() const { return *in_; }

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  std::shared_ptr<const TileSource> in_;
  std::shared_ptr<StepMeter> meter_;
  std::unique_ptr<DeviceTiles> device_;  // in_'s, counted; null where in_ has none
};

}  // namespace tw
