#include "engine/scratch_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <exception>

#include "engine/file_io.hpp"
#include "engine/memory.hpp"

namespace tw {

struct ScratchStore::Entry {
  Image img;
  int pins = 0;
  bool dirty = false;
  bool loading = false;  // being read back from disk (outside the lock)
  std::list<int64_t>::iterator lru_pos;
  bool in_lru = false;
};

ScratchStore::ScratchStore(PixelFormat fmt, int64_t width, int64_t height, int64_t tile, size_t cache_bytes,
                           const std::string& near_path, std::string name)
    : grid_{width, height, tile, tile}, fmt_(fmt), cache_bytes_(cache_bytes), file_(near_path) {
  TW_ASSERT(width > 0 && height > 0 && tile > 0);
  info_.path = std::move(name);
  info_.format = "scratch";
  info_.fmt = fmt;
  LevelInfo li;
  li.width = width, li.height = height, li.tile_w = tile, li.tile_h = tile;
  li.compression = "none";
  info_.levels.push_back(li);
  on_disk_.assign(static_cast<size_t>(grid_.count()), 0);
  fd_ = file_.fd();
}

ScratchStore::~ScratchStore() = default;

size_t ScratchStore::tile_bytes() const {
  return static_cast<size_t>(grid_.tile_w * grid_.tile_h) * fmt_.bytes_per_pixel();
}

void ScratchStore::set_cache_bytes(size_t n) {
  std::unique_lock<std::mutex> l(mu_);
  const bool shrink = n < cache_bytes_;
  cache_bytes_ = n;
  evict_and_write(l);
  l.unlock();
  if (shrink) release_free_heap();
}

ScratchStore::Stats ScratchStore::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

// A tile's slot is its rows back to back: one system call for the tile when
// the image's rows are too (they are: tiles are allocated whole), else one
// per row. Called without the store's lock.
void ScratchStore::write_slot(int64_t index, const Image& img) const {
  const size_t row = static_cast<size_t>(grid_.tile_w) * fmt_.bytes_per_pixel();
  const uint64_t base = static_cast<uint64_t>(index) * tile_bytes();
  const bool packed = img.view().stride == row;
  for (int64_t y = 0; y < grid_.tile_h; y += packed ? grid_.tile_h : 1)
    pwrite_all(fd_, img.row_bytes(img.rect().y + y), packed ? tile_bytes() : row, base + y * row, file_.name());
}

void ScratchStore::read_slot(int64_t index, Image& img) const {
  const size_t row = static_cast<size_t>(grid_.tile_w) * fmt_.bytes_per_pixel();
  const uint64_t base = static_cast<uint64_t>(index) * tile_bytes();
  const bool packed = img.view().stride == row;
  for (int64_t y = 0; y < grid_.tile_h; y += packed ? grid_.tile_h : 1)
    pread_all(fd_, img.row_bytes(img.rect().y + y), packed ? tile_bytes() : row, base + y * row, file_.name());
}

// Evicts unpinned tiles, least recently used first, until the budget holds.
// Pinned tiles may push the total over the budget: a working set larger than
// the budget is the caller's to avoid (it plans tiles in flight from it).
// Dirty victims are written to disk with the lock let go, so that threads
// spilling and loading tiles do not wait for each other's disk transfers
// (with the lock held, 16 threads spilling a slide's stores ran one at a
// time); a tile being written is in writing_, and acquire() waits for it.
constexpr size_t kSpareTiles = 8;

void ScratchStore::evict_and_write(std::unique_lock<std::mutex>& l) {
  std::vector<std::pair<int64_t, Image>> dirty;
  while (held_ > cache_bytes_ && !lru_.empty()) {
    const int64_t victim = lru_.front();
    lru_.pop_front();
    auto it = entries_.find(victim);
    Entry& e = *it->second;
    // Counted out of the budget now (the buffer lives on until written):
    // counted until then, every thread would evict more on its account.
    held_ -= e.img.capacity_bytes();
    if (e.dirty) {
      writing_.insert(victim);
      dirty.emplace_back(victim, std::move(e.img));
      ++stats_.spills;
    } else if (spare_.size() < kSpareTiles) {
      spare_.push_back(std::move(e.img));
    }
    entries_.erase(it);
  }
  if (dirty.empty()) return;
  l.unlock();
  std::exception_ptr failed;
  for (auto& [index, img] : dirty) {
    try {
      if (!failed) write_slot(index, img);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  l.lock();
  for (auto& [index, img] : dirty) {
    on_disk_[static_cast<size_t>(index)] = 1;
    writing_.erase(index);
    if (spare_.size() < kSpareTiles) spare_.push_back(std::move(img));
  }
  io_done_.notify_all();
  if (failed) std::rethrow_exception(failed);
}

ScratchStore::Pin ScratchStore::acquire(int64_t tx, int64_t ty, bool overwrite) {
  TW_ASSERT(tx >= 0 && ty >= 0 && tx < grid_.cols() && ty < grid_.rows());
  const int64_t index = ty * grid_.cols() + tx;
  // Stores fill from chains of ops whose buffers of many sizes, freed on
  // many threads between the stores' long-lived tiles, leave free pages in
  // glibc's heaps: handed back now and then (outside the lock), or a
  // pipeline's RSS grew a third over its --memory.
  release_free_heap_now_and_then();
  std::unique_lock<std::mutex> l(mu_);
  if (failed_) std::rethrow_exception(failed_);
  for (;;) {
    // A tile on its way to disk, or on its way back, is waited for.
    if (writing_.count(index)) {
      io_done_.wait(l);
      continue;
    }
    auto it = entries_.find(index);
    if (it != entries_.end() && it->second->loading) {
      io_done_.wait(l);
      continue;
    }
    break;
  }
  auto it = entries_.find(index);
  Entry* e;
  if (it != entries_.end()) {
    e = it->second.get();
    if (e->in_lru) lru_.erase(e->lru_pos), e->in_lru = false;
  } else {
    auto fresh = std::make_unique<Entry>();
    const Rect full = grid_.tile_full_rect(tx, ty);
    if (!spare_.empty()) {
      fresh->img = std::move(spare_.back());
      spare_.pop_back();
      fresh->img.set_origin(full.x, full.y);
    } else {
      fresh->img = Image(fmt_, full);
    }
    held_ += fresh->img.capacity_bytes();
    stats_.peak_bytes = std::max(stats_.peak_bytes, held_);
    e = fresh.get();
    const bool load = on_disk_[static_cast<size_t>(index)] != 0;
    if (load) {
      e->loading = true;
    } else if (!overwrite) {
      e->img.fill_zero();
    } else {
      // Only the part outside the image: the caller writes the rest.
      const Rect in = grid_.tile_rect(tx, ty);
      const size_t bpp = fmt_.bytes_per_pixel();
      for (int64_t y = full.y; y < full.y1(); ++y) {
        if (y < in.y1()) {
          if (in.x1() < full.x1())
            std::memset(e->img.ptr_bytes(in.x1(), y), 0, static_cast<size_t>(full.x1() - in.x1()) * bpp);
        } else {
          std::memset(e->img.ptr_bytes(full.x, y), 0, static_cast<size_t>(full.w) * bpp);
        }
      }
    }
    entries_.emplace(index, std::move(fresh));
    if (load) {
      // Pinned while it loads, so eviction leaves it alone.
      ++e->pins;
      l.unlock();
      std::exception_ptr failed;
      try {
        read_slot(index, e->img);
      } catch (...) {
        failed = std::current_exception();
      }
      l.lock();
      e->loading = false;
      --e->pins;
      ++stats_.loads;
      io_done_.notify_all();
      if (failed) {
        // Not kept: a later acquire reads it again (and fails again).
        held_ -= e->img.capacity_bytes();
        entries_.erase(index);
        std::rethrow_exception(failed);
      }
    }
  }
  ++e->pins;
  try {
    evict_and_write(l);
  } catch (...) {
    unpin_locked(index, *e);
    throw;
  }
  Pin p;
  p.store_ = this;
  p.index_ = index;
  p.entry_ = e;
  return p;
}

void ScratchStore::unpin_locked(int64_t index, Entry& e) {
  if (--e.pins == 0) {
    lru_.push_back(index);
    e.lru_pos = std::prev(lru_.end());
    e.in_lru = true;
  }
}

// Runs in Pin's destructor: a failed spill is kept for the next acquire()
// to throw, rather than thrown from a destructor.
void ScratchStore::release(int64_t index) noexcept {
  std::unique_lock<std::mutex> l(mu_);
  auto it = entries_.find(index);
  TW_ASSERT(it != entries_.end());
  Entry& e = *it->second;
  unpin_locked(index, e);
  if (e.pins == 0) {
    try {
      evict_and_write(l);
    } catch (...) {
      if (!l.owns_lock()) l.lock();
      if (!failed_) failed_ = std::current_exception();
    }
  }
}

ScratchStore::Pin::Pin(Pin&& o) noexcept : store_(o.store_), index_(o.index_), entry_(o.entry_) {
  o.store_ = nullptr;
}

ScratchStore::Pin& ScratchStore::Pin::operator=(Pin&& o) noexcept {
  if (this != &o) {
    if (store_) store_->release(index_);
    store_ = o.store_, index_ = o.index_, entry_ = o.entry_;
    o.store_ = nullptr;
  }
  return *this;
}

ScratchStore::Pin::~Pin() {
  if (store_) store_->release(index_);
}

Image& ScratchStore::Pin::image() const {
  return static_cast<Entry*>(entry_)->img;
}

void ScratchStore::Pin::mark_dirty() {
  std::lock_guard<std::mutex> l(store_->mu_);
  static_cast<Entry*>(entry_)->dirty = true;
}

void ScratchStore::read_inside(int, const ImageView& dst) const {
  auto* self = const_cast<ScratchStore*>(this);
  const int64_t tx0 = dst.rect.x / grid_.tile_w, tx1 = (dst.rect.x1() - 1) / grid_.tile_w;
  const int64_t ty0 = dst.rect.y / grid_.tile_h, ty1 = (dst.rect.y1() - 1) / grid_.tile_h;
  for (int64_t ty = ty0; ty <= ty1; ++ty)
    for (int64_t tx = tx0; tx <= tx1; ++tx) {
      Pin p = self->acquire(tx, ty);
      copy_overlap(p.image().view(), dst);
    }
}

}  // namespace tw
