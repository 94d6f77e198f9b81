#pragma once
// A byte-bounded LRU cache shared by the server's threads, for encoded tiles
// and for the pixel blocks of levels made on the fly. get_or_make computes a
// missing entry once: threads asking for it meanwhile wait for that result
// instead of computing it again (a viewer asks for the same tiles from many
// connections at once, and a level made from the one above is asked for
// block by block by every tile of the level below).
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace tw::serve {

template <class V>
class LruCache {
 public:
  using Ptr = std::shared_ptr<const V>;
  // cost(v): the bytes an entry holds. capacity 0 keeps nothing (every call
  // computes, concurrent ones still share one computation).
  LruCache(size_t capacity, std::function<size_t(const V&)> cost) : capacity_(capacity), cost_(std::move(cost)) {}

  Ptr get_or_make(const std::string& key, const std::function<Ptr()>& make) {
    std::shared_future<Ptr> pending;
    std::promise<Ptr> mine;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        ++hits_;
        return it->second->second;
      }
      if (auto it = pending_.find(key); it != pending_.end()) {
        pending = it->second;
      } else {
        ++misses_;
        pending_.emplace(key, mine.get_future().share());
      }
    }
    if (pending.valid()) return pending.get();  // rethrows the maker's error
    Ptr v;
    try {
      v = make();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      mine.set_exception(std::current_exception());
      pending_.erase(key);
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    mine.set_value(v);
    pending_.erase(key);
    insert(key, v);
    return v;
  }

  size_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }
  size_t hits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return hits_;
  }
  size_t misses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return misses_;
  }

 private:
  using Entry = std::pair<std::string, Ptr>;

  // mutex_ held.
  void insert(const std::string& key, const Ptr& v) {
    const size_t c = cost_(*v) + key.size() + kEntryOverhead;
    if (c > capacity_) return;  // would evict everything for one entry
    order_.emplace_front(key, v);
    index_[key] = order_.begin();
    bytes_ += c;
    while (bytes_ > capacity_) {
      const Entry& last = order_.back();
      bytes_ -= cost_(*last.second) + last.first.size() + kEntryOverhead;
      index_.erase(last.first);
      order_.pop_back();
    }
  }

  // The list node, the index's node and the shared_ptr's control block.
  static constexpr size_t kEntryOverhead = 128;

  size_t capacity_;
  std::function<size_t(const V&)> cost_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  std::unordered_map<std::string, std::shared_future<Ptr>> pending_;
  size_t bytes_ = 0, hits_ = 0, misses_ = 0;
};

}  // namespace tw::serve
