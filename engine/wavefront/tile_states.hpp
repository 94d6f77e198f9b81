#pragma once
// Where each tile of a wavefront stands (both engines: wavefront.cpp,
// ranked_wavefront.cpp): idle, queued, or running, and running with its halo
// changed meanwhile, which makes it run again instead of queueing it twice.
#include <atomic>
#include <cstdint>
#include <vector>

namespace tw {

class TileStates {
 public:
  explicit TileStates(int64_t tiles) : s_(static_cast<size_t>(tiles)) {}

  // Tile t is among the tiles a run starts with.
  void set_queued(int64_t t) { s_[static_cast<size_t>(t)].store(kQueued); }

  // A tile's inputs changed: whether the caller must queue it (it was idle).
  // A running tile is marked to run again; a queued one is left as it is.
  bool wake(int64_t t) {
    auto& s = s_[static_cast<size_t>(t)];
    for (;;) {
      uint8_t cur = s.load();
      if (cur == kQueued || cur == kRunningDirty) return false;
      const uint8_t next = cur == kIdle ? kQueued : kRunningDirty;
      if (s.compare_exchange_weak(cur, next)) return next == kQueued;
    }
  }

  // Runs step() for queued tile t, again while wake() marked it meanwhile.
  template <class F>
  void run(int64_t t, F&& step) {
    auto& s = s_[static_cast<size_t>(t)];
    s.store(kRunning);
    for (;;) {
      step();
      uint8_t cur = kRunning;
      if (s.compare_exchange_strong(cur, kIdle)) return;
      s.store(kRunning);  // was kRunningDirty: its halo changed meanwhile
    }
  }

 private:
  enum : uint8_t { kIdle = 0, kQueued = 1, kRunning = 2, kRunningDirty = 3 };
  std::vector<std::atomic<uint8_t>> s_;
};

}  // namespace tw
