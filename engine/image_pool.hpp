#pragma once
// Recycles large buffers (bands of rows): a fresh multi-megabyte allocation
// costs page faults on every use, a recycled one does not.
#include <memory>
#include <mutex>
#include <vector>

#include "engine/image.hpp"

namespace tw {

class ImagePool {
 public:
  // Buffers come from alloc (plain memory by default; pinned for GPU feeds).
  explicit ImagePool(const HostAllocator* alloc = nullptr);
  // A buffer of fmt/rect, returned to the pool when the last reference goes.
  std::shared_ptr<Image> acquire(PixelFormat fmt, const Rect& rect);
  // Allocates a buffer now and keeps it idle (pinning costs ~0.5 ms per MB:
  // better on a background thread than on the path that needs the buffer).
  void add_idle(PixelFormat fmt, const Rect& rect);
  size_t idle_bytes() const;
  void clear();

 private:
  struct State {
    std::mutex mu;
    std::vector<Image> free;
    const HostAllocator* alloc = nullptr;
  };
  std::shared_ptr<State> state_;
};

}  // namespace tw
