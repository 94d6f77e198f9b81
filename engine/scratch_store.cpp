#include "engine/scratch_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/byte_counters.hpp"
#include "engine/memory.hpp"

namespace tw {

struct ScratchStore::Entry {
  Image img;
  int pins = 0;
  bool dirty = false;
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
  {
    std::lock_guard<std::mutex> l(mu_);
    const bool shrink = n < cache_bytes_;
    cache_bytes_ = n;
    evict_locked();
    if (!shrink) return;
  }
  release_free_heap();
}

ScratchStore::Stats ScratchStore::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void ScratchStore::write_slot(int64_t index, const Image& img) {
  const size_t row = static_cast<size_t>(grid_.tile_w) * fmt_.bytes_per_pixel();
  const uint64_t base = static_cast<uint64_t>(index) * tile_bytes();
  count_spilled(tile_bytes());
  for (int64_t y = 0; y < grid_.tile_h; ++y) {
    const uint8_t* p = img.row_bytes(img.rect().y + y);
    size_t done = 0;
    while (done < row) {
      const ssize_t w = ::pwrite(fd_, p + done, row - done, static_cast<off_t>(base + y * row + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw InputError("cannot write " + file_.name() + ": " + std::strerror(errno));
      done += static_cast<size_t>(w);
    }
  }
}

void ScratchStore::read_slot(int64_t index, Image& img) const {
  const size_t row = static_cast<size_t>(grid_.tile_w) * fmt_.bytes_per_pixel();
  const uint64_t base = static_cast<uint64_t>(index) * tile_bytes();
  for (int64_t y = 0; y < grid_.tile_h; ++y) {
    uint8_t* p = img.row_bytes(img.rect().y + y);
    size_t done = 0;
    while (done < row) {
      const ssize_t r = ::pread(fd_, p + done, row - done, static_cast<off_t>(base + y * row + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw InputError("cannot read " + file_.name());
      done += static_cast<size_t>(r);
    }
  }
}

// Evicts unpinned tiles, least recently used first, until the budget holds.
// Pinned tiles may push the total over the budget: a working set larger than
// the budget is the caller's to avoid (it plans tiles in flight from it).
constexpr size_t kSpareTiles = 8;

void ScratchStore::evict_locked() {
  while (held_ > cache_bytes_ && !lru_.empty()) {
    const int64_t victim = lru_.front();
    lru_.pop_front();
    auto it = entries_.find(victim);
    Entry& e = *it->second;
    if (e.dirty) {
      write_slot(victim, e.img);
      on_disk_[static_cast<size_t>(victim)] = 1;
      ++stats_.spills;
    }
    held_ -= e.img.capacity_bytes();
    if (spare_.size() < kSpareTiles) spare_.push_back(std::move(e.img));
    entries_.erase(it);
  }
}

ScratchStore::Pin ScratchStore::acquire(int64_t tx, int64_t ty, bool overwrite) {
  TW_ASSERT(tx >= 0 && ty >= 0 && tx < grid_.cols() && ty < grid_.rows());
  const int64_t index = ty * grid_.cols() + tx;
  // Stores fill from chains of ops whose buffers of many sizes, freed on
  // many threads between the stores' long-lived tiles, leave free pages in
  // glibc's heaps: handed back now and then (outside the lock), or a
  // pipeline's RSS grew a third over its --memory.
  release_free_heap_now_and_then();
  std::lock_guard<std::mutex> l(mu_);
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
    if (on_disk_[static_cast<size_t>(index)]) {
      read_slot(index, fresh->img);
      ++stats_.loads;
    } else if (!overwrite) {
      fresh->img.fill_zero();
    } else {
      // Only the part outside the image: the caller writes the rest.
      const Rect in = grid_.tile_rect(tx, ty);
      const size_t bpp = fmt_.bytes_per_pixel();
      for (int64_t y = full.y; y < full.y1(); ++y) {
        if (y < in.y1()) {
          if (in.x1() < full.x1())
            std::memset(fresh->img.ptr_bytes(in.x1(), y), 0, static_cast<size_t>(full.x1() - in.x1()) * bpp);
        } else {
          std::memset(fresh->img.ptr_bytes(full.x, y), 0, static_cast<size_t>(full.w) * bpp);
        }
      }
    }
    held_ += fresh->img.capacity_bytes();
    stats_.peak_bytes = std::max(stats_.peak_bytes, held_);
    e = fresh.get();
    entries_.emplace(index, std::move(fresh));
  }
  ++e->pins;
  Pin p;
  p.store_ = this;
  p.index_ = index;
  p.entry_ = e;
  evict_locked();
  return p;
}

void ScratchStore::release(int64_t index) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(index);
  TW_ASSERT(it != entries_.end());
  Entry& e = *it->second;
  if (--e.pins == 0) {
    lru_.push_back(index);
    e.lru_pos = std::prev(lru_.end());
    e.in_lru = true;
    evict_locked();
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
