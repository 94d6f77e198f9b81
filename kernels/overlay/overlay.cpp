#include "kernels/overlay/overlay.hpp"

#include <cstring>

#include "engine/error.hpp"
#include "engine/next_nonzero.hpp"
#include "engine/read_pieces.hpp"
#include "engine/sample_dispatch.hpp"

namespace tw {

SourceInfo overlay_info(const TileSource& image) {
  SourceInfo info = image.info();
  info.fmt = kRgb8;
  info.levels.resize(1);
  info.levels[0].tile_w = info.levels[0].tile_h = 0;
  info.levels[0].compression.clear();
  info.associated.clear();
  return info;
}

OverlaySource::OverlaySource(std::shared_ptr<const TileSource> image, std::shared_ptr<const TileSource> labels,
                             std::array<uint8_t, 3> color)
    : image_(std::move(image)), labels_(std::move(labels)), color_(color) {
  info_ = overlay_info(*image_);
}

Border outside_labels() {
  Border outside;
  outside.mode = BorderMode::kConstant;
  outside.value = 0;
  return outside;
}

void OverlaySource::read_inside(int level, const ImageView& dst) const {
  TW_ASSERT(level == 0);
  // In pieces, as ops read (engine/read_pieces.hpp): a pyramid's band of a
  // 100000-px-wide slide read whole took 100 MB of u32 labels and an RGB
  // copy of the image beside it per read in flight, twice and more the
  // --memory the pass was planned in. An RGB image is read straight into
  // the result and the outlines painted over it.
  const bool rgb = image_->info().fmt == dst.fmt;
  const size_t bpp = labels_->info().fmt.bytes_per_pixel() + (rgb ? 0 : image_->info().fmt.bytes_per_pixel());
  for_each_read_piece(dst, bpp, 1, [&](const ImageView& part) {
    const Image lab = labels_->read(0, part.rect.grown(1), outside_labels());
    if (rgb) {
      image_->read(0, part);
      draw_outlines(part, lab.view(), color_, part);
    } else {
      const Image gray = image_->read(0, part.rect);
      draw_outlines(gray.view(), lab.view(), color_, part);
    }
  });
}

namespace {

template <class L>
void draw_t(const ImageView& image, const ImageView& labels, std::array<uint8_t, 3> color, const ImageView& dst) {
  const Rect r = dst.rect;
  const int ch = image.fmt.channels;
  for (int64_t y = r.y; y < r.y1(); ++y) {
    const uint8_t* in = image.ptr_bytes(r.x, y);
    uint8_t* out = dst.ptr_bytes(r.x, y);
    const L* up = labels.ptr<L>(r.x, y - 1);
    const L* mid = labels.ptr<L>(r.x, y);
    const L* down = labels.ptr<L>(r.x, y + 1);
    // The row copied, then the outline's pixels (a few percent) painted
    // over it: a select a byte with the channel test inside took 5% of the
    // CPU of a 2-GP nuclei run's writing on the H200 (the copy: 40% less).
    if (ch == 3) {
      if (out != in) std::memcpy(out, in, static_cast<size_t>(3 * r.w));
    } else {
      for (int64_t x = 0; x < r.w; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
    }
    for (int64_t x = next_nonzero(mid, 0, r.w); x < r.w; x = next_nonzero(mid, x + 1, r.w)) {
      const L v = mid[x];
      if (mid[x - 1] != v || mid[x + 1] != v || up[x] != v || down[x] != v)
        out[3 * x] = color[0], out[3 * x + 1] = color[1], out[3 * x + 2] = color[2];
    }
  }
}

}  // namespace

void draw_outlines(const ImageView& image, const ImageView& labels, std::array<uint8_t, 3> color,
                   const ImageView& dst) {
  // Float labels are refused by the op's type check.
  TW_ASSERT(labels.fmt.channels == 1 && labels.fmt.type != SampleType::kF32 && labels.rect.contains(dst.rect.grown(1)));
  with_sample_type(labels.fmt.type, [&](auto t) { draw_t<decltype(t)>(image, labels, color, dst); });
}

}  // namespace tw
