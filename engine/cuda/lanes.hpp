#pragma once
// A small pool of "lanes" — a stream with its own pinned and device buffers —
// so that several threads reading tiles of a GPU op at once each copy and
// compute on their own stream: one tile's copies overlap another's kernels.
// Buffers grow to the largest request and are kept.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/cuda/resources.hpp"

namespace tw::cuda {

struct Lane {
  Stream stream;
  PinnedBuffer<uint8_t> host_in, host_out;
  DeviceBuffer<uint8_t> dev_in, dev_out, dev_mid;
  // Grows the buffers to at least these byte counts.
  void reserve(size_t in_bytes, size_t out_bytes, size_t mid_bytes = 0);
};

class LanePool {
 public:
  LanePool(int device, int lanes);
  class Lease {
   public:
    Lease(LanePool* pool, Lane* lane) : pool_(pool), lane_(lane) {}
    ~Lease() { pool_->release(lane_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lane* operator->() const { return lane_; }
    Lane& operator*() const { return *lane_; }

   private:
    LanePool* pool_;
    Lane* lane_;
  };
  Lease acquire();  // waits for a free lane
  int device() const { return device_; }
  int size() const { return static_cast<int>(lanes_.size()); }

 private:
  void release(Lane* l);
  int device_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<Lane*> free_;
  std::mutex m_;
  std::condition_variable cv_;
};

// The process's pool for `device` (created on first use, kept for the life
// of the process): ops created one after another — a batch of images —
// reuse its streams and buffers instead of allocating pinned and device
// memory for every image (cudaMallocHost costs milliseconds).
LanePool& shared_lanes(int device);

}  // namespace tw::cuda
