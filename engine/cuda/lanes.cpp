#include "engine/cuda/lanes.hpp"

#include <map>

namespace tw::cuda {

void Lane::reserve(size_t in_bytes, size_t out_bytes, size_t mid_bytes) {
  if (host_in.size() < in_bytes) host_in = PinnedBuffer<uint8_t>(in_bytes), dev_in = DeviceBuffer<uint8_t>(in_bytes);
  if (host_out.size() < out_bytes)
    host_out = PinnedBuffer<uint8_t>(out_bytes), dev_out = DeviceBuffer<uint8_t>(out_bytes);
  if (dev_mid.size() < mid_bytes) dev_mid = DeviceBuffer<uint8_t>(mid_bytes);
}

LanePool::LanePool(int device, int lanes) : device_(device) {
  DeviceScope scope(device);
  for (int i = 0; i < lanes; ++i) {
    lanes_.push_back(std::make_unique<Lane>());
    free_.push_back(lanes_.back().get());
  }
}

LanePool::Lease LanePool::acquire() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  Lane* l = free_.back();
  free_.pop_back();
  return Lease(this, l);
}

void LanePool::release(Lane* l) {
  {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(l);
  }
  cv_.notify_one();
}

LanePool& shared_lanes(int device) {
  static std::mutex mu;
  // Never destroyed: freeing CUDA memory after the runtime has shut down at
  // exit would fail.
  static auto* pools = new std::map<int, std::unique_ptr<LanePool>>();
  std::lock_guard<std::mutex> l(mu);
  auto& p = (*pools)[device];
  if (!p) p = std::make_unique<LanePool>(device, 4);
  return *p;
}

}  // namespace tw::cuda
