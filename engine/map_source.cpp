#include "engine/map_source.hpp"

#include "engine/read_pieces.hpp"

namespace tw {

MapSource::MapSource(std::vector<const TileSource*> inputs, PixelFormat out_fmt, RowFn fn, std::string name)
    : inputs_(std::move(inputs)), fn_(std::move(fn)) {
  TW_ASSERT(!inputs_.empty());
  const LevelInfo& l0 = inputs_[0]->level(0);
  for (const TileSource* s : inputs_)
    if (s->level(0).width != l0.width || s->level(0).height != l0.height)
      throw InputError(s->info().path + " is " + std::to_string(s->level(0).width) + "x" +
                       std::to_string(s->level(0).height) + ", but " + inputs_[0]->info().path + " is " +
                       std::to_string(l0.width) + "x" + std::to_string(l0.height));
  info_.path = std::move(name);
  info_.format = "computed";
  info_.fmt = out_fmt;
  info_.mpp_x = inputs_[0]->info().mpp_x, info_.mpp_y = inputs_[0]->info().mpp_y;
  LevelInfo li;
  li.width = l0.width, li.height = l0.height;
  li.compression = "none (computed)";
  info_.levels.push_back(li);
}

void MapSource::read_inside(int, const ImageView& whole) const {
  size_t bpp = info_.fmt.bytes_per_pixel();
  for (const TileSource* s : inputs_) bpp += s->info().fmt.bytes_per_pixel();
  for_each_read_piece(whole, bpp, 0, [&](const ImageView& dst) { compute(dst); });
}

void MapSource::compute(const ImageView& dst) const {
  std::vector<Image> in;
  in.reserve(inputs_.size());
  for (const TileSource* s : inputs_) in.push_back(s->read(0, dst.rect));
  std::vector<const uint8_t*> rows(in.size());
  for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
    for (size_t k = 0; k < in.size(); ++k) rows[k] = in[k].row_bytes(y);
    fn_(rows, dst.row_bytes(y), dst.rect.x, y, dst.rect.w);
  }
}

}  // namespace tw
