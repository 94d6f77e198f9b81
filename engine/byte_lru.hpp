#pragma once
// A small thread-safe LRU of shared values bounded by their bytes, keyed by
// a 64-bit number: decoded chunks a reader will want again (a TIFF's tiles
// under halo reads, a JPEG input's coefficients read by two GPU chains).
// A capacity of 0 turns it off.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace tw {

template <class V>
class ByteLru {
 public:
  using Value = std::shared_ptr<const V>;

  void set_capacity(size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    cap_ = bytes;
    evict();
  }
  bool enabled() const { return cap_.load(std::memory_order_relaxed) > 0; }
  Value get(uint64_t key) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return std::get<1>(*it->second);
  }
  // `bytes`: what the value holds. One larger than the whole capacity, or
  // a key already held, is not taken.
  void put(uint64_t key, Value v, size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    const size_t cap = cap_.load(std::memory_order_relaxed);
    if (!cap || bytes > cap || map_.count(key)) return;
    size_ += bytes;
    lru_.emplace_front(key, std::move(v), bytes);
    map_[key] = lru_.begin();
    evict();
  }
  // Whether `bytes` more would fit without evicting anything.
  bool has_room(size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    return size_ + bytes <= cap_.load(std::memory_order_relaxed);
  }
  // put(), but only into free room: evicts nothing.
  void put_if_room(uint64_t key, Value v, size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    if (size_ + bytes > cap_.load(std::memory_order_relaxed) || map_.count(key)) return;
    size_ += bytes;
    lru_.emplace_front(key, std::move(v), bytes);
    map_[key] = lru_.begin();
  }

 private:
  using Entry = std::tuple<uint64_t, Value, size_t>;
  void evict() {
    while (size_ > cap_.load(std::memory_order_relaxed) && !lru_.empty()) {
      size_ -= std::get<2>(lru_.back());
      map_.erase(std::get<0>(lru_.back()));
      lru_.pop_back();
    }
  }
  std::mutex mu_;
  std::atomic<size_t> cap_{0};  // read without the lock by enabled()
  size_t size_ = 0;
  std::list<Entry> lru_;
  std::unordered_map<uint64_t, typename std::list<Entry>::iterator> map_;
};

}  // namespace tw
