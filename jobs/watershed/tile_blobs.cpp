#include "jobs/watershed/tile_blobs.hpp"

#include "engine/error.hpp"
#include "engine/file_io.hpp"
#include "engine/memory.hpp"

namespace tw {

BlobStore::BlobStore(int64_t count, size_t budget, const std::string& near_path)
    : entries_(static_cast<size_t>(count)), budget_(budget), near_(near_path) {}

BlobStore::Pin& BlobStore::Pin::operator=(Pin&& o) noexcept {
  if (this != &o) {
    if (store_) store_->release(t_);
    store_ = o.store_, t_ = o.t_;
    o.store_ = nullptr;
  }
  return *this;
}

BlobStore::Pin::~Pin() {
  if (store_) store_->release(t_);
}

uint8_t* BlobStore::Pin::data() const {
  return store_->entries_[static_cast<size_t>(t_)].bytes.data();  // resident while pinned
}

void BlobStore::Pin::mark_dirty() {
  std::lock_guard<std::mutex> l(store_->mu_);
  store_->entries_[static_cast<size_t>(t_)].dirty = true;
}

// Blobs of every size come and go on every thread between the flood's
// longer-lived buffers: the freed ones stay in glibc's heaps, in pieces no
// new blob fits, and a nuclei run under --memory 300M held 59 MB of them
// (peak RSS 379 MB) at the watershed's end. Evictions hand them back while
// the process is over its target, as the scratch stores do.
void BlobStore::after_eviction(bool evicted) {
  if (evicted) release_free_heap_now_and_then();
}

BlobStore::Pin BlobStore::put(int64_t t, std::vector<uint8_t> bytes) {
  bool evicted = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    Entry& e = entries_[static_cast<size_t>(t)];
    TW_ASSERT(e.size == 0 && !bytes.empty());
    e.size = bytes.size();
    e.bytes = std::move(bytes);
    e.dirty = true;
    e.pins = 1;
    held_ += e.size;
    stats_.bytes += e.size;
    stats_.peak_bytes = std::max(stats_.peak_bytes, held_);
    evicted = evict_locked();
  }
  after_eviction(evicted);
  return Pin(this, t);
}

// Disk transfers happen under the lock: with the mask's tiles this small,
// spilling is the exception, and simple beats fast there.
BlobStore::Pin BlobStore::acquire(int64_t t) {
  bool evicted = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    Entry& e = entries_[static_cast<size_t>(t)];
    TW_ASSERT(e.size > 0);
    if (e.in_lru) lru_.erase(e.lru_pos), e.in_lru = false;
    if (e.bytes.empty()) {
      e.bytes.resize(e.size);
      pread_all(file_->fd(), e.bytes.data(), e.size, e.slot, file_->name());
      ++stats_.loads;
      held_ += e.size;
      stats_.peak_bytes = std::max(stats_.peak_bytes, held_);
    }
    ++e.pins;
    evicted = evict_locked();
  }
  after_eviction(evicted);
  return Pin(this, t);
}

void BlobStore::release(int64_t t) {
  std::lock_guard<std::mutex> l(mu_);
  Entry& e = entries_[static_cast<size_t>(t)];
  if (--e.pins > 0) return;
  // Evicted by the next put or acquire (not here: a failed write would
  // throw out of a destructor).
  lru_.push_back(t);
  e.lru_pos = std::prev(lru_.end());
  e.in_lru = true;
}

void BlobStore::drop(int64_t t) {
  std::lock_guard<std::mutex> l(mu_);
  Entry& e = entries_[static_cast<size_t>(t)];
  TW_ASSERT(e.size > 0 && e.pins == 0);
  if (e.in_lru) lru_.erase(e.lru_pos), e.in_lru = false;
  if (!e.bytes.empty()) held_ -= e.size;
  stats_.bytes -= e.size;
  std::vector<uint8_t>().swap(e.bytes);
  e.size = 0;
  e.dirty = false;
}

void BlobStore::set_budget(size_t bytes) {
  bool evicted = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    budget_ = bytes;
    evicted = evict_locked();
  }
  after_eviction(evicted);
}

BlobStore::Stats BlobStore::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

// Pinned blobs may hold more than the budget (the threads' working set).
bool BlobStore::evict_locked() {
  bool evicted = false;
  while (held_ > budget_ && !lru_.empty()) {
    const int64_t t = lru_.front();
    lru_.pop_front();
    Entry& e = entries_[static_cast<size_t>(t)];
    e.in_lru = false;
    if (e.dirty) {
      if (!file_) file_ = std::make_unique<ScratchFile>(near_);
      if (e.slot == ~uint64_t{0}) e.slot = file_end_, file_end_ += e.size;  // a blob never changes size
      pwrite_all(file_->fd(), e.bytes.data(), e.size, e.slot, file_->name());
      ++stats_.spills;
      e.dirty = false;
    }
    held_ -= e.size;
    std::vector<uint8_t>().swap(e.bytes);
    evicted = true;
  }
  return evicted;
}

}  // namespace tw
