#include "jobs/edt/edt_support.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace tw {

namespace {
// fg[x] = p[x] > thr for unsigned integers: an integer v is above thr
// exactly when it is above floor(thr).
template <class T>
int64_t above_threshold(const T* p, int64_t w, double thr, uint8_t* fg) {
  if (!(thr < static_cast<double>(std::numeric_limits<T>::max()))) {  // NaN as well: nothing is above it
    std::memset(fg, 0, static_cast<size_t>(w));
    return 0;
  }
  if (thr < 0) {
    std::memset(fg, 1, static_cast<size_t>(w));
    return w;
  }
  const auto t = static_cast<T>(std::floor(thr));
  for (int64_t x = 0; x < w; ++x) fg[x] = p[x] > t;
  int64_t n = 0;
  for (int64_t x = 0; x < w; ++x) n += fg[x];
  return n;
}
}  // namespace

int64_t foreground_row(const Image& band, double thr, uint8_t* fg, int64_t row) {
  const int64_t w = band.rect().w;
  const PixelFormat f = band.fmt();
  const uint8_t* p = band.row_bytes(band.rect().y + row);
  int64_t n = 0;
  // One channel of unsigned integers (a u8 mask, the u32 labels of
  // `objects`): compared as integers, which vectorises (the per-pixel
  // switch and double compare took 5% of the CPU of a 2-GP nuclei run's
  // steps on the H200).
  if (f.channels == 1) {
    switch (f.type) {
      case SampleType::kU8:
        return above_threshold(p, w, thr, fg);
      case SampleType::kU16:
        return above_threshold(reinterpret_cast<const uint16_t*>(p), w, thr, fg);
      case SampleType::kU32:
        return above_threshold(reinterpret_cast<const uint32_t*>(p), w, thr, fg);
      default:
        break;
    }
  }
  for (int64_t x = 0; x < w; ++x) {
    auto sample = [&](int c) -> double {
      switch (f.type) {
        case SampleType::kU8:
          return p[x * f.channels + c];
        case SampleType::kU16:
          return reinterpret_cast<const uint16_t*>(p)[x * f.channels + c];
        case SampleType::kI32:
          return reinterpret_cast<const int32_t*>(p)[x * f.channels + c];
        case SampleType::kF32:
          return reinterpret_cast<const float*>(p)[x * f.channels + c];
        case SampleType::kU32:
          return reinterpret_cast<const uint32_t*>(p)[x * f.channels + c];
      }
      return 0;
    };
    const double v = f.channels >= 3 ? 0.299 * sample(0) + 0.587 * sample(1) + 0.114 * sample(2) : sample(0);
    n += fg[x] = v > thr;
  }
  return n;
}

Spillable::Spillable(PixelFormat fmt, int64_t w, int64_t h, bool in_memory, const std::string& near) {
  if (in_memory)
    mem_ = std::make_shared<MemorySource>(Image(fmt, Rect(0, 0, w, h)));
  else
    file_ = std::make_shared<RawRasterFile>(near, fmt, w, h);
}

void Spillable::write(const ImageView& v) {
  if (file_)
    file_->write(v);
  else
    copy_overlap(v, mem_->image().view());
}

Image Spillable::read(const Rect& r) const {
  return file_ ? file_->read(0, r) : mem_->read(0, r);
}

namespace {
ImageView reuse(Image& tmp, PixelFormat fmt, const Rect& r) {
  if (tmp.fmt() != fmt || tmp.rect().w != r.w || tmp.rect().h != r.h) tmp = Image(fmt, r);
  tmp.set_origin(r.x, r.y);
  return tmp.view();
}
}  // namespace

ImageView Spillable::window(const Rect& r, Image& tmp) {
  if (mem_) return mem_->image().view().sub(r);
  return reuse(tmp, file_->info().fmt, r);
}

void Spillable::commit(const ImageView& v) {
  if (file_) file_->write(v);
}

ImageView Spillable::peek(const Rect& r, Image& tmp) const {
  if (mem_) return mem_->image().view().sub(r);
  const ImageView v = reuse(tmp, file_->info().fmt, r);
  file_->read(0, v);
  return v;
}

std::shared_ptr<const TileSource> Spillable::source() const {
  if (file_) return file_;
  return mem_;
}

}  // namespace tw
