#include "jobs/label/paged_array.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "engine/error.hpp"

namespace tw {

namespace {
constexpr size_t kPageBytes = size_t{64} << 10;  // small pages: lookups of scattered records stay cheap
}

PagedBytes::PagedBytes(size_t elem, uint64_t n, size_t cache_bytes, const std::string& near_path)
    : elem_(elem), n_(n), near_(near_path) {
  page_elems_ = std::max<size_t>(1, kPageBytes / elem_);
  page_bytes_ = page_elems_ * elem_;
  max_pages_ = std::max<size_t>(2, cache_bytes / page_bytes_);
  on_disk_.assign(static_cast<size_t>((n_ + page_elems_ - 1) / page_elems_), false);
}

PagedBytes::~PagedBytes() = default;

PagedBytes::Page& PagedBytes::page(uint64_t p) {
  if (p == last_) return *last_page_;
  auto it = pages_.find(p);
  if (it == pages_.end()) {
    evict();
    Page& pg = pages_[p];
    pg.bytes.assign(page_bytes_, 0);
    if (on_disk_[static_cast<size_t>(p)]) {
      size_t done = 0;
      while (done < page_bytes_) {
        const ssize_t r = ::pread(file_->fd(), pg.bytes.data() + done, page_bytes_ - done,
                                  static_cast<off_t>(p * page_bytes_ + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) throw InputError("cannot read " + file_->name());
        done += static_cast<size_t>(r);
      }
    }
    lru_.push_back(p);
    pg.lru_pos = std::prev(lru_.end());
    it = pages_.find(p);
  } else {
    lru_.splice(lru_.end(), lru_, it->second.lru_pos);
  }
  last_ = p;
  last_page_ = &it->second;
  return it->second;
}

void PagedBytes::evict() {
  while (pages_.size() >= max_pages_) {
    const uint64_t victim = lru_.front();
    lru_.pop_front();
    auto it = pages_.find(victim);
    if (it->second.dirty) {
      if (!file_) file_ = std::make_unique<ScratchFile>(near_);
      size_t done = 0;
      while (done < page_bytes_) {
        const ssize_t w = ::pwrite(file_->fd(), it->second.bytes.data() + done, page_bytes_ - done,
                                   static_cast<off_t>(victim * page_bytes_ + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw InputError("cannot write " + file_->name() + ": " + std::strerror(errno));
        done += static_cast<size_t>(w);
      }
      on_disk_[static_cast<size_t>(victim)] = true;
      ++spills_;
    }
    if (victim == last_) last_ = UINT64_MAX, last_page_ = nullptr;
    pages_.erase(it);
  }
}

uint8_t* PagedBytes::at(uint64_t i, bool dirty) {
  TW_ASSERT(i < n_);
  Page& pg = page(i / page_elems_);
  pg.dirty |= dirty;
  return pg.bytes.data() + (i % page_elems_) * elem_;
}

void PagedBytes::read(uint64_t i, void* dst, uint64_t count) {
  TW_ASSERT(i + count <= n_);
  std::lock_guard<std::mutex> l(mu_);
  auto* d = static_cast<uint8_t*>(dst);
  while (count > 0) {
    const uint64_t off = i % page_elems_, k = std::min<uint64_t>(count, page_elems_ - off);
    const Page& pg = page(i / page_elems_);
    std::memcpy(d, pg.bytes.data() + off * elem_, k * elem_);
    d += k * elem_, i += k, count -= k;
  }
}

void PagedBytes::write(uint64_t i, const void* src, uint64_t count) {
  TW_ASSERT(i + count <= n_);
  std::lock_guard<std::mutex> l(mu_);
  const auto* s = static_cast<const uint8_t*>(src);
  while (count > 0) {
    const uint64_t off = i % page_elems_, k = std::min<uint64_t>(count, page_elems_ - off);
    Page& pg = page(i / page_elems_);
    std::memcpy(pg.bytes.data() + off * elem_, s, k * elem_);
    pg.dirty = true;
    s += k * elem_, i += k, count -= k;
  }
}

}  // namespace tw
