#include "tools/serve/slide.hpp"

#include <algorithm>
#include <set>

#include "kernels/overlay/overlay.hpp"

namespace tw::serve {

Slide::Slide(std::string name, SourcePtr src, SourcePtr labels, std::shared_ptr<const PolygonStore> polygons,
             DziGeometry geometry, LruCache<Image>* blocks)
    : name_(std::move(name)),
      src_(std::move(src)),
      labels_(std::move(labels)),
      polygons_(std::move(polygons)),
      geometry_(geometry) {
  TW_ASSERT(!(labels_ && polygons_));
  const SourceInfo& in = src_->info();
  if (in.fmt.type != SampleType::kU8 || (in.fmt.channels != 1 && in.fmt.channels != 3))
    throw InputError(in.path + ": serve shows 8-bit gray or RGB slides, not " + in.fmt.str() +
                     " (convert it first: tilewave filter convert --type u8 ...)");
  TW_ASSERT(geometry_.width == src_->level(0).width && geometry_.height == src_->level(0).height);
  pixels_ = std::make_unique<LevelRenderer>(src_, name_ + "/pixels", blocks);
  if (labels_) {
    const SourceInfo& li = labels_->info();
    // Labels are halved by nearest only when u32 (REDUCE would average a
    // u8/u16 label image's ids into ids of other objects).
    if (li.fmt != PixelFormat{SampleType::kU32, 1})
      throw InputError(li.path + ": --overlay takes a u32 label image (tilewave label, watershed or nuclei), not " +
                       li.fmt.str());
    if (labels_->level(0).width != geometry_.width || labels_->level(0).height != geometry_.height)
      throw InputError(li.path + ": the labels are " + std::to_string(labels_->level(0).width) + "x" +
                       std::to_string(labels_->level(0).height) + ", the slide " + in.path + " is " +
                       std::to_string(geometry_.width) + "x" + std::to_string(geometry_.height));
    label_levels_ = std::make_unique<LevelRenderer>(labels_, name_ + "/labels", blocks);
  }
}

bool Slide::has_tile(int64_t level, int64_t col, int64_t row) const {
  return level >= 0 && level <= geometry_.max_level() && col >= 0 && row >= 0 &&
         col < geometry_.cols(static_cast<int>(level)) && row < geometry_.rows(static_cast<int>(level));
}

Image Slide::tile(int level, int64_t col, int64_t row) const {
  TW_ASSERT(has_tile(level, col, row));
  return pixels_->render(geometry_.max_level() - level, geometry_.tile_rect(level, col, row));
}

Image Slide::outline_tile(int level, int64_t col, int64_t row, std::array<uint8_t, 3> color) const {
  TW_ASSERT(has_tile(level, col, row) && has_overlay());
  const int k = geometry_.max_level() - level;
  const Rect r = geometry_.tile_rect(level, col, row);
  if (polygons_) {
    Image out(PixelFormat{SampleType::kU8, 4}, r);
    out.fill_zero();
    polygons_->draw(k, color, out.view());
    return out;
  }
  // The labels with a one-pixel ring, 0 (no object) outside the level, so
  // objects cut by the slide's edge are closed there as in kernels/overlay.
  Image labels(PixelFormat{SampleType::kU32, 1}, r.grown(1));
  labels.fill_zero();
  copy_overlap(label_levels_->render(k, r.grown(1).intersect(label_levels_->bounds(k))).view(), labels.view());
  Image black(kGray8, r), drawn(kRgb8, r);
  black.fill_zero();
  // draw_outlines is the overlay op's rule itself; over black, a pixel is on
  // an outline exactly when it took the colour (a black colour is refused).
  draw_outlines(black.view(), labels.view(), color, drawn.view());
  Image out(PixelFormat{SampleType::kU8, 4}, r);
  for (int64_t y = r.y; y < r.y1(); ++y) {
    const uint8_t* in = drawn.row_bytes(y);
    uint8_t* o = out.row_bytes(y);
    for (int64_t x = 0; x < r.w; ++x) {
      const bool on = in[3 * x] | in[3 * x + 1] | in[3 * x + 2];
      for (int c = 0; c < 3; ++c) o[4 * x + c] = in[3 * x + c];
      o[4 * x + 3] = on ? 255 : 0;
    }
  }
  return out;
}

bool valid_slide_name(const std::string& s) {
  if (s.empty() || s.size() > 200 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::vector<std::string> slide_names(const std::vector<std::string>& specs) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const std::string& spec : specs) {
    std::string base = spec;
    if (base.rfind("synthetic:", 0) == 0) {
      base = "synthetic";
    } else {
      base = base.substr(base.find_last_of('/') == std::string::npos ? 0 : base.find_last_of('/') + 1);
      auto ends = [&](const std::string& e) {
        return base.size() > e.size() && std::equal(e.rbegin(), e.rend(), base.rbegin(), [](char a, char b) {
                 return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
               });
      };
      if (ends(".ome.tif") || ends(".ome.tiff"))
        base.resize(base.rfind(".ome."));
      else if (const size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0)
        base.resize(dot);
    }
    for (char& c : base)
      if (!valid_slide_name(std::string(1, c == '.' ? 'a' : c))) c = '-';
    if (base.empty() || base[0] == '.') base = "slide" + base;
    if (base.size() > 190) base.resize(190);
    std::string name = base;
    for (int i = 2; taken.count(name); ++i) name = base + "-" + std::to_string(i);
    taken.insert(name);
    names.push_back(name);
  }
  return names;
}

}  // namespace tw::serve
