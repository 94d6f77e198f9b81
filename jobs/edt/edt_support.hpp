#pragma once
// Pieces both EDT backends share: which pixels are foreground, and the
// rasters that stay in memory within the budget or spill to a file.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/image.hpp"
#include "engine/memory_source.hpp"
#include "engine/raw_raster.hpp"

namespace tw {

// fg[x] = 1 where row `row` of `band` (counted from the band's top) is
// foreground: value > threshold (RGB: BT.601 luma). Returns the count.
int64_t foreground_row(const Image& band, double thr, uint8_t* fg, int64_t row);

// A raster kept in memory when the budget allows, else in a scratch file.
class Spillable {
 public:
  Spillable(PixelFormat fmt, int64_t w, int64_t h, bool in_memory, const std::string& near);
  void write(const ImageView& v);
  Image read(const Rect& r) const;
  std::shared_ptr<const TileSource> source() const;
  // Windows over r without copies where the raster is in memory: the raster
  // itself, else `tmp` (reallocated only when the size changes). A window
  // to write is stored by commit() (nothing to do in memory).
  ImageView window(const Rect& r, Image& tmp);
  void commit(const ImageView& v);
  ImageView peek(const Rect& r, Image& tmp) const;
  bool in_memory() const { return mem_ != nullptr; }
  const LevelInfo& level() const { return source()->level(0); }

 private:
  std::shared_ptr<MemorySource> mem_;
  std::shared_ptr<RawRasterFile> file_;
};

}  // namespace tw
