#include "tools/serve/level_renderer.hpp"

#include <cmath>
#include <cstdlib>

#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw::serve {

Rect reduce_input_rect(const Rect& r, int64_t in_w, int64_t in_h) {
  const int64_t x0 = std::max<int64_t>(0, 2 * r.x - 2), y0 = std::max<int64_t>(0, 2 * r.y - 2);
  const int64_t x1 = std::min<int64_t>(in_w, 2 * r.x1() + 1), y1 = std::min<int64_t>(in_h, 2 * r.y1() + 1);
  return {x0, y0, x1 - x0, y1 - y0};
}

LevelRenderer::LevelRenderer(SourcePtr src, std::string id, LruCache<Image>* blocks)
    : src_(std::move(src)), id_(std::move(id)), blocks_(blocks) {
  const LevelInfo& l0 = src_->level(0);
  sizes_ = pyramid_level_sizes(l0.width, l0.height, 1);
  stored_.assign(sizes_.size(), -1);
  // A stored level stands for cascade level k when its downsample is 2^k and
  // its size is k's within a pixel: vendors round level sizes down where the
  // cascade rounds up (the missing column is mirrored by the reader's border
  // rule). Levels of other downsamples (an NDPI's 1/4 and 1/16 are fine, a
  // 1/3 is not) are not used.
  for (int l = 0; l < src_->level_count(); ++l) {
    const LevelInfo& li = src_->level(l);
    if (li.downsample < 1) continue;
    const double e = std::log2(li.downsample);
    const long k = std::lround(e);
    if (std::fabs(e - static_cast<double>(k)) > 0.01 || k >= static_cast<long>(sizes_.size())) continue;
    const auto& [w, h] = sizes_[static_cast<size_t>(k)];
    if (std::llabs(li.width - w) > 1 || std::llabs(li.height - h) > 1) continue;
    if (stored_[static_cast<size_t>(k)] < 0) stored_[static_cast<size_t>(k)] = l;
  }
  stored_[0] = 0;
}

Image LevelRenderer::render(int k, const Rect& r) const {
  TW_ASSERT(k >= 0 && k < levels() && !r.empty() && bounds(k).contains(r));
  if (stored_[k] >= 0) return src_->read(stored_[k], r);
  const Rect in_bounds = bounds(k - 1);
  const Rect in_rect = reduce_input_rect(r, in_bounds.w, in_bounds.h);
  const Image in = gather(k - 1, in_rect);
  Image out(src_->info().fmt, r);
  std::vector<uint32_t> scratch;
  for (int64_t y = r.y; y < r.y1(); ++y) {
    int64_t ry[5];
    reduce_source_rows(y, in_bounds.h, ry);
    const uint8_t* rows[5];
    for (int i = 0; i < 5; ++i) rows[i] = in.ptr_bytes(in_rect.x, ry[i]);
    reduce_row(out.fmt(), rows, in_rect.x, in_rect.w, in_bounds.w, r.x, r.w, out.row_bytes(y), scratch);
  }
  return out;
}

Image LevelRenderer::gather(int k, const Rect& r) const {
  if (stored_[k] >= 0) return src_->read(stored_[k], r);
  Image out(src_->info().fmt, r);
  for (int64_t by = r.y / kBlock; by * kBlock < r.y1(); ++by)
    for (int64_t bx = r.x / kBlock; bx * kBlock < r.x1(); ++bx) copy_overlap(block(k, bx, by)->view(), out.view());
  return out;
}

std::shared_ptr<const Image> LevelRenderer::block(int k, int64_t bx, int64_t by) const {
  const std::string key = id_ + "/" + std::to_string(k) + "/" + std::to_string(bx) + "/" + std::to_string(by);
  // The caller holds the block while it copies from it, whatever the cache
  // evicts meanwhile.
  return blocks_->get_or_make(key, [&] {
    const Rect rect = Rect(bx * kBlock, by * kBlock, kBlock, kBlock).intersect(bounds(k));
    return std::make_shared<const Image>(render(k, rect));
  });
}

}  // namespace tw::serve
