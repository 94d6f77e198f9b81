#pragma once
// An uncompressed single-level raster in a scratch file: written by rows or
// rectangles, read back as a TileSource. Used to hand one pyramid level from
// a striped pass to the next pass without holding it in memory.
#include <string>

#include "engine/output_file.hpp"
#include "engine/tile_source.hpp"

namespace tw {

class RawRasterFile : public TileSource {
 public:
  // An anonymous file in the folder of near_path: gone with this object.
  RawRasterFile(const std::string& near_path, PixelFormat fmt, int64_t width, int64_t height);
  ~RawRasterFile() override;
  // Stores the pixels of src (any rect inside the raster). Thread-safe for
  // disjoint rects.
  void write(const ImageView& src);

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  ScratchFile file_;
  int fd_ = -1;
};

}  // namespace tw
