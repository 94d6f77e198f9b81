#include "engine/image.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "engine/memory.hpp"

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define TW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define TW_ASAN 1
#endif
#endif
#ifndef TW_ASAN
#define TW_ASAN 0
#endif

namespace tw {
namespace {

std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};

void track_alloc(size_t n) {
  const size_t now = g_live.fetch_add(n) + n;
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

size_t aligned_stride(PixelFormat fmt, int64_t w) {
  const size_t raw = static_cast<size_t>(w) * fmt.bytes_per_pixel();
  return (raw + 63) & ~size_t{63};
}

// A tile under 2 MB: malloc aligned by hand, the pointer malloc gave kept in
// the 8 bytes before the buffer. With glibc 2.36's aligned_alloc (Debian 12),
// which splits each block off a larger one, `tilewave nuclei` on 2 cores
// faulted about 10% more pages in and ran about 8% longer (median of 10
// pairs; no difference with glibc 2.39: docs/PERFORMANCE.md). malloc's
// pointers are 16-aligned, so the gap is 16..64 bytes. Under AddressSanitizer
// the tile is its own block, so that a write just before it is reported
// rather than landing in the gap.
void* allocate_tile(size_t bytes) {
  const size_t n = (bytes + 63) & ~size_t{63};
#if TW_ASAN
  void* p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
#else
  void* raw = std::malloc(n + 64);
  if (!raw) throw std::bad_alloc();
  void* p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + 64) & ~uintptr_t{63});
  static_cast<void**>(p)[-1] = raw;
#endif
  return p;
}
void free_tile(void* p) {
#if TW_ASAN
  std::free(p);
#else
  std::free(static_cast<void**>(p)[-1]);
#endif
}

class MallocAllocator : public HostAllocator {
 public:
  void* allocate(size_t bytes) const override {
    return bytes >= kBigBufferBytes ? take_big_buffer(bytes) : allocate_tile(bytes);
  }
  void deallocate(void* p, size_t bytes) const override {
    if (bytes >= kBigBufferBytes)
      give_big_buffer(p, bytes);
    else
      free_tile(p);
  }
};

}  // namespace

const HostAllocator& default_allocator() {
  // Never destroyed: a thread still running while exit() runs (a daemon
  // thread of Python) may allocate, and a destroyed object's virtual call
  // is a "pure virtual method called" abort.
  static const MallocAllocator& a = *new MallocAllocator;
  return a;
}

size_t image_bytes_live() {
  return g_live.load();
}
size_t image_bytes_peak() {
  return g_peak.load();
}

ImageView ImageView::sub(const Rect& r) const {
  TW_ASSERT(rect.contains(r));
  return {fmt, r, stride, ptr_bytes(r.x, r.y)};
}

void copy_overlap(const ImageView& src, const ImageView& dst) {
  TW_ASSERT(src.fmt == dst.fmt);
  const Rect o = src.rect.intersect(dst.rect);
  if (o.empty()) return;
  const size_t n = static_cast<size_t>(o.w) * src.fmt.bytes_per_pixel();
  for (int64_t y = o.y; y < o.y1(); ++y) std::memcpy(dst.ptr_bytes(o.x, y), src.ptr_bytes(o.x, y), n);
}

Image::Image(PixelFormat fmt, Rect rect, const HostAllocator* alloc)
    : fmt_(fmt), rect_(rect), alloc_(alloc ? alloc : &default_allocator()) {
  TW_ASSERT(rect.w >= 0 && rect.h >= 0);
  stride_ = aligned_stride(fmt, rect.w);
  capacity_ = stride_ * static_cast<size_t>(rect.h);
  if (capacity_ == 0) capacity_ = 64;
  data_ = static_cast<uint8_t*>(alloc_->allocate(capacity_));
  track_alloc(capacity_);
}

Image::Image(Image&& o) noexcept
    : fmt_(o.fmt_), rect_(o.rect_), stride_(o.stride_), capacity_(o.capacity_), data_(o.data_), alloc_(o.alloc_) {
  o.data_ = nullptr;
  o.capacity_ = 0;
}

Image& Image::operator=(Image&& o) noexcept {
  if (this != &o) {
    release();
    fmt_ = o.fmt_, rect_ = o.rect_, stride_ = o.stride_, capacity_ = o.capacity_, data_ = o.data_, alloc_ = o.alloc_;
    o.data_ = nullptr;
    o.capacity_ = 0;
  }
  return *this;
}

Image::~Image() {
  release();
}

void Image::release() {
  if (data_) {
    alloc_->deallocate(data_, capacity_);
    g_live.fetch_sub(capacity_);
    data_ = nullptr;
    capacity_ = 0;
  }
}

size_t Image::bytes_for(PixelFormat fmt, const Rect& r) {
  return aligned_stride(fmt, r.w) * static_cast<size_t>(r.h);
}

bool Image::can_hold(PixelFormat fmt, const Rect& r) const {
  return data_ && bytes_for(fmt, r) <= capacity_;
}

void Image::reshape(PixelFormat fmt, const Rect& r) {
  TW_ASSERT(can_hold(fmt, r));
  fmt_ = fmt;
  rect_ = r;
  stride_ = aligned_stride(fmt, r.w);
}

void Image::fill_zero() {
  if (data_) std::memset(data_, 0, size_bytes());
}

}  // namespace tw
