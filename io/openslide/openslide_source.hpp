#pragma once
// TileSource over OpenSlide, for vendor formats libtiff cannot make sense of
// (SVS with JPEG 2000, NDPI, MRXS, SCN, VMS, BIF, Philips TIFF, ...): every
// level with its geometry, microns per pixel, vendor, associated images.
// OpenSlide hands out premultiplied ARGB; pixels come out as RGB composited
// over the slide's background colour (white unless the slide says otherwise).
#include <memory>
#include <string>

#include "engine/tile_source.hpp"

namespace tw {

class OpenSlideSource : public TileSource {
 public:
  // Throws InputError if OpenSlide cannot open the file, or if the file
  // fails the checks that keep OpenSlide from aborting the process or
  // converting its pixels (io/openslide/openslide_guard.hpp).
  explicit OpenSlideSource(const std::string& path);
  ~OpenSlideSource() override;

  Image read_associated(const std::string& name) const override;
  size_t decode_unit_bytes(int level) const override;
  void set_decode_budget(size_t bytes) const override;

  // OpenSlide's vendor name for the file, or "" if it does not recognise it.
  static std::string detect_vendor(const std::string& path);

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
