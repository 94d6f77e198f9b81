#include "engine/memory_source.hpp"

namespace tw {

MemorySource::MemorySource(Image img, double mpp, std::string name) : img_(std::move(img)) {
  img_.set_origin(0, 0);
  info_.path = std::move(name);
  info_.format = "memory";
  info_.fmt = img_.fmt();
  info_.mpp_x = info_.mpp_y = mpp;
  LevelInfo li;
  li.width = img_.rect().w, li.height = img_.rect().h;
  li.compression = "none";
  info_.levels.push_back(li);
}

void MemorySource::read_inside(int, const ImageView& dst) const {
  copy_overlap(img_.view(), dst);
}

}  // namespace tw
