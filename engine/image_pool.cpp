#include "engine/image_pool.hpp"

namespace tw {

ImagePool::ImagePool(const HostAllocator* alloc) : state_(std::make_shared<State>()) {
  state_->alloc = alloc;
}

std::shared_ptr<Image> ImagePool::acquire(PixelFormat fmt, const Rect& rect) {
  Image img;
  {
    std::lock_guard<std::mutex> l(state_->mu);
    auto& f = state_->free;
    // The smallest idle buffer that fits, and not one far bigger: the
    // pyramid's cascade takes bands of every level from one pool, each level
    // half the one above, and a level-2 band taking an idle level-1 buffer
    // made the next level-1 band a new one, and so on up to level 0: a
    // 100000-px-wide slide under --memory 64M held 38 MB of idle buffers,
    // each the size of a level-0 band.
    const size_t want = Image::bytes_for(fmt, rect);
    size_t best = f.size();
    for (size_t i = 0; i < f.size(); ++i)
      if (f[i].can_hold(fmt, rect) && f[i].capacity_bytes() <= want + want / 2 &&
          (best == f.size() || f[i].capacity_bytes() < f[best].capacity_bytes()))
        best = i;
    if (best < f.size()) {
      img = std::move(f[best]);
      f.erase(f.begin() + static_cast<long>(best));
    }
  }
  if (img.empty())
    img = Image(fmt, rect, state_->alloc);
  else
    img.reshape(fmt, rect);
  std::weak_ptr<State> weak = state_;
  return std::shared_ptr<Image>(new Image(std::move(img)), [weak](Image* p) {
    if (auto s = weak.lock()) {
      std::lock_guard<std::mutex> l(s->mu);
      s->free.push_back(std::move(*p));
    }
    delete p;
  });
}

void ImagePool::add_idle(PixelFormat fmt, const Rect& rect) {
  Image img(fmt, rect, state_->alloc);
  std::lock_guard<std::mutex> l(state_->mu);
  state_->free.push_back(std::move(img));
}

size_t ImagePool::idle_bytes() const {
  std::lock_guard<std::mutex> l(state_->mu);
  size_t n = 0;
  for (const auto& i : state_->free) n += i.capacity_bytes();
  return n;
}

void ImagePool::clear() {
  std::lock_guard<std::mutex> l(state_->mu);
  state_->free.clear();
}

}  // namespace tw
