#pragma once
// Raster buffers indexed in global coordinates (STYLE.md §2): a tile with its
// halo is a buffer whose rect starts left of and above the tile's core.
#include <cstdint>
#include <cstring>
#include <memory>

#include "engine/error.hpp"
#include "engine/geometry.hpp"
#include "engine/pixel.hpp"

namespace tw {

// A borrowed window on pixels: rect in global coordinates, stride in bytes.
struct ImageView {
  PixelFormat fmt;
  Rect rect;
  size_t stride = 0;
  uint8_t* data = nullptr;

  uint8_t* row_bytes(int64_t gy) const { return data + static_cast<size_t>(gy - rect.y) * stride; }
  uint8_t* ptr_bytes(int64_t gx, int64_t gy) const {
    return row_bytes(gy) + static_cast<size_t>(gx - rect.x) * fmt.bytes_per_pixel();
  }
  template <class T>
  T* row(int64_t gy) const {
    return reinterpret_cast<T*>(row_bytes(gy));
  }
  template <class T>
  T* ptr(int64_t gx, int64_t gy) const {
    return reinterpret_cast<T*>(ptr_bytes(gx, gy));
  }
  size_t row_length_bytes() const { return static_cast<size_t>(rect.w) * fmt.bytes_per_pixel(); }
  // The part of this view covering r (which must lie inside rect).
  ImageView sub(const Rect& r) const;
};

// Copies the overlap of src and dst (global coordinates) from src into dst.
void copy_overlap(const ImageView& src, const ImageView& dst);

// Where an Image's bytes come from: plain memory by default, page-locked
// (pinned) memory for buffers that feed asynchronous GPU copies.
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  virtual void* allocate(size_t bytes) const = 0;  // 64-byte aligned; throws on failure
  virtual void deallocate(void* p, size_t bytes) const = 0;
};
const HostAllocator& default_allocator();

// An owning, 64-byte aligned buffer. Move-only.
class Image {
 public:
  Image() = default;
  // alloc must outlive the Image (allocators are long-lived singletons).
  Image(PixelFormat fmt, Rect rect, const HostAllocator* alloc = nullptr);
  Image(Image&&) noexcept;
  Image& operator=(Image&&) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  ~Image();

  const PixelFormat& fmt() const { return fmt_; }
  const Rect& rect() const { return rect_; }
  size_t stride() const { return stride_; }
  size_t size_bytes() const { return stride_ * static_cast<size_t>(rect_.h); }
  size_t capacity_bytes() const { return capacity_; }
  bool empty() const { return data_ == nullptr; }
  uint8_t* data() const { return data_; }
  ImageView view() const { return {fmt_, rect_, stride_, data_}; }
  uint8_t* row_bytes(int64_t gy) const { return view().row_bytes(gy); }
  uint8_t* ptr_bytes(int64_t gx, int64_t gy) const { return view().ptr_bytes(gx, gy); }
  template <class T>
  T* row(int64_t gy) const {
    return view().row<T>(gy);
  }
  template <class T>
  T* ptr(int64_t gx, int64_t gy) const {
    return view().ptr<T>(gx, gy);
  }
  // Moves the buffer to a new origin without touching pixels (same size).
  void set_origin(int64_t x, int64_t y) { rect_.x = x, rect_.y = y; }
  // Reinterprets the buffer for another rect of the same or smaller byte size.
  // Used by pools that recycle band buffers.
  bool can_hold(PixelFormat fmt, const Rect& r) const;
  // The bytes a buffer of fmt/r takes (rows padded for alignment).
  static size_t bytes_for(PixelFormat fmt, const Rect& r);
  void reshape(PixelFormat fmt, const Rect& r);
  void fill_zero();

 private:
  void release();
  PixelFormat fmt_;
  Rect rect_;
  size_t stride_ = 0;
  size_t capacity_ = 0;
  uint8_t* data_ = nullptr;
  const HostAllocator* alloc_ = nullptr;
};

// Bytes currently held by Image buffers, and the most ever held at once:
// lets tests and reports check the memory budget from the inside.
size_t image_bytes_live();
size_t image_bytes_peak();

}  // namespace tw
