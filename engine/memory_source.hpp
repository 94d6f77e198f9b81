#pragma once
// A TileSource over an image already in memory (C++ callers, tests).
#include <memory>
#include <string>

#include "engine/tile_source.hpp"

namespace tw {

class MemorySource : public TileSource {
 public:
  explicit MemorySource(Image img, double mpp = 0, std::string name = "memory");
  const Image& image() const { return img_; }

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  Image img_;
};

}  // namespace tw
