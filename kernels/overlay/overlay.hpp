#pragma once
// Outlines of labelled objects drawn over an image, for a viewer
// (`tilewave overlay IMAGE LABELS OUT.tif`, the nuclei job's overlay.tif):
// a pixel is on an outline when its label is non-zero and one of its four
// neighbours has another label (or lies outside the image). Outlines are
// therefore inside their objects, one pixel wide, and two touching objects
// both show their edge. The rest is the image, gray made RGB.
#include <array>
#include <cstdint>
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

// How the labels' halo is read past the image's edge: as 0, another label,
// so that objects cut by the edge are closed there (on either backend).
Border outside_labels();

// The result's description: the image's, RGB, level 0 only (on either backend,
// so that both write the same file).
SourceInfo overlay_info(const TileSource& image);

class OverlaySource : public TileSource {
 public:
  // image: 8-bit gray or RGB; labels: one channel of any integer type, one size.
  OverlaySource(std::shared_ptr<const TileSource> image, std::shared_ptr<const TileSource> labels,
                std::array<uint8_t, 3> color);

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  std::shared_ptr<const TileSource> image_, labels_;
  std::array<uint8_t, 3> color_;
};

// dst (RGB) = image pixels over dst.rect, with outline pixels of `labels`
// (a view covering dst.rect grown by one on every side) set to color. An RGB
// image may be dst itself.
void draw_outlines(const ImageView& image, const ImageView& labels, std::array<uint8_t, 3> color, const ImageView& dst);

}  // namespace tw
