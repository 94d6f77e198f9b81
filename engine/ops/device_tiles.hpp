#pragma once
// GPU residency of chained ops: a source computed on a GPU can give a region
// of its result in device memory, so the op that reads it runs on the same
// tile without the round trip through the host (a chain of N ops costs one
// upload and one download per tile, not N of each).
//
// A read of the chain's last op runs in two phases: stage() walks down the
// chain on the host and reads, from the first op's host input, the region
// the whole chain needs (every op's halo summed) — before any stream or
// buffer is taken, since that input may itself be a GPU op drawing on the
// same pool; then compute() runs every op of the chain on one stream, each
// op's input made by the op below it in device memory.
#include <cstdint>
#include <deque>

#include "engine/error.hpp"
#include "engine/geometry.hpp"
#include "engine/image.hpp"
#include "engine/tile_source.hpp"

namespace tw {

// What stage() read on the host for one read of a chain: an image for each
// start of the chain that reads the host (a linear chain has one; a
// two-input op's, one per input chain), taken by compute() in the order
// stage() added them (both walk the inputs depth first, in order). A start
// already in device memory adds nothing.
class StagedInputs {
 public:
  Image& add() { return images_.emplace_back(); }  // a deque: earlier references stay valid
  const Image& next() {
    if (next_ >= images_.size()) throw InternalError("a device chain took more staged inputs than it staged");
    return images_[next_++];
  }
  size_t taken() const { return next_; }
  size_t left() const { return images_.size() - next_; }
  // Whether nothing staged holds pixels (the chain reads device memory only).
  bool empty() const {
    for (const Image& i : images_)
      if (!i.empty()) return false;
    return true;
  }

 private:
  std::deque<Image> images_;
  size_t next_ = 0;
};

struct DeviceChain;  // engine/ops/op_cuda.cuh: the stream, staging and scratch of one read

class DeviceTiles {
 public:
  virtual ~DeviceTiles() = default;
  virtual int device() const = 0;
  // Reads into `host` what the chain's first op needs, from its host input,
  // to compute `r` (inside the level) at the top.
  virtual void stage(const Rect& r, StagedInputs& host) const = 0;
  // Computes `r` into device memory at dst (rows `pitch` bytes apart), on
  // the chain's stream; `host` is what stage() read.
  virtual void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& chain) const = 0;
};

// Whether `s` is made in the memory of GPU `device` (a GPU chain's top, a
// result left there, a JPEG input decoded the split way): a GPU op on that
// device takes it there instead of from the host.
inline bool made_on_device(const TileSource& s, int device) {
  const DeviceTiles* d = s.device_tiles();
  return d && d->device() == device;
}

}  // namespace tw
