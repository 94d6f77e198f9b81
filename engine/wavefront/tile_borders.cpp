#include "engine/wavefront/tile_borders.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>

#include "engine/error.hpp"

namespace tw {

void copy_tile(const ImageView& src, const ImageView& dst) {
  const Rect o = src.rect.intersect(dst.rect);
  if (o.w * o.h < (int64_t{1} << 20)) return copy_overlap(src, dst);
  const size_t n = static_cast<size_t>(o.w) * src.fmt.bytes_per_pixel();
  tbb::parallel_for(tbb::blocked_range<int64_t>(o.y, o.y1(), 64), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t y = r.begin(); y < r.end(); ++y) std::memcpy(dst.ptr_bytes(o.x, y), src.ptr_bytes(o.x, y), n);
  });
}

namespace {

// n pixels from (x0, y0) by steps (dx, dy): an edge line. Inline, as in
// the engines it came from: it runs for every edge of every publication.
inline std::vector<uint8_t> line(const ImageView& v, size_t bpp, int64_t x0, int64_t y0, int64_t dx, int64_t dy,
                                 int64_t n) {
  std::vector<uint8_t> e(static_cast<size_t>(n) * bpp);
  for (int64_t k = 0; k < n; ++k) std::memcpy(e.data() + k * bpp, v.ptr_bytes(x0 + k * dx, y0 + k * dy), bpp);
  return e;
}

}  // namespace

TileBorders::TileBorders(const TileGrid& grid, PixelFormat fmt, int connectivity, const TilePropagator& rule)
    : rule_(rule),
      grid_(grid),
      fmt_(fmt),
      bpp_(fmt.bytes_per_pixel()),
      eight_(connectivity == 8),
      tiles_(static_cast<size_t>(grid.count())) {
  TW_ASSERT(connectivity == 4 || connectivity == 8);
  neutral_.resize(bpp_);
  rule_.neutral(neutral_.data());
}

TileEdges TileBorders::lines(const ImageView& v, const Rect& core) const {
  TileEdges e;
  e.top = line(v, bpp_, core.x, core.y, 1, 0, core.w), e.bottom = line(v, bpp_, core.x, core.y1() - 1, 1, 0, core.w);
  e.left = line(v, bpp_, core.x, core.y, 0, 1, core.h), e.right = line(v, bpp_, core.x1() - 1, core.y, 0, 1, core.h);
  return e;
}

// Unlocked: a tile's mask is recorded once, before any tile runs.
void TileBorders::record_mask(int64_t t, const ImageView& mask, const Rect& core) {
  tiles_[static_cast<size_t>(t)].mask = lines(mask, core);
}

void TileBorders::halo_from(int64_t nt, Side side, uint8_t* dst, size_t stride, int64_t count, int64_t offset) {
  Tile& b = tiles_[static_cast<size_t>(nt)];
  std::lock_guard<std::mutex> l(b.mu);
  const std::vector<uint8_t>& e = edge_of(b.values, side);
  TW_ASSERT(static_cast<int64_t>(e.size()) >= (offset + count) * static_cast<int64_t>(bpp_));
  for (int64_t k = 0; k < count; ++k) std::memcpy(dst + k * stride, e.data() + (offset + k) * bpp_, bpp_);
}

ImageView TileBorders::load_with_halo(int64_t tx, int64_t ty, const ImageView& tile, Image& buf) {
  const Rect core = grid_.tile_rect(tx, ty);
  const Rect hr = core.grown(1);
  if (buf.empty() || !buf.can_hold(fmt_, hr))
    buf = Image(fmt_, hr);
  else
    buf.reshape(fmt_, hr);
  const ImageView hv = buf.view();
  copy_tile(tile, hv.sub(core));
  for (int64_t x = hr.x; x < hr.x1(); ++x) std::memcpy(hv.ptr_bytes(x, hr.y), neutral_.data(), bpp_);
  for (int64_t x = hr.x; x < hr.x1(); ++x) std::memcpy(hv.ptr_bytes(x, hr.y1() - 1), neutral_.data(), bpp_);
  for (int64_t y = hr.y; y < hr.y1(); ++y) {
    std::memcpy(hv.ptr_bytes(hr.x, y), neutral_.data(), bpp_);
    std::memcpy(hv.ptr_bytes(hr.x1() - 1, y), neutral_.data(), bpp_);
  }
  const bool up = ty > 0, down = ty + 1 < grid_.rows(), left = tx > 0, right = tx + 1 < grid_.cols();
  if (up) halo_from(index(tx, ty - 1), kBottom, hv.ptr_bytes(core.x, hr.y), bpp_, core.w, 0);
  if (down) halo_from(index(tx, ty + 1), kTop, hv.ptr_bytes(core.x, hr.y1() - 1), bpp_, core.w, 0);
  if (left) halo_from(index(tx - 1, ty), kRight, hv.ptr_bytes(hr.x, core.y), hv.stride, core.h, 0);
  if (right) halo_from(index(tx + 1, ty), kLeft, hv.ptr_bytes(hr.x1() - 1, core.y), hv.stride, core.h, 0);
  if (eight_) {
    // Corners: the nearest pixel of each diagonal neighbour.
    auto corner = [&](int64_t nx, int64_t ny, Side side, int64_t at, int64_t hx, int64_t hy) {
      halo_from(index(nx, ny), side, hv.ptr_bytes(hx, hy), 0, 1, at);
    };
    if (up && left) corner(tx - 1, ty - 1, kBottom, grid_.tile_rect(tx - 1, ty - 1).w - 1, hr.x, hr.y);
    if (up && right) corner(tx + 1, ty - 1, kBottom, 0, hr.x1() - 1, hr.y);
    if (down && left) corner(tx - 1, ty + 1, kTop, grid_.tile_rect(tx - 1, ty + 1).w - 1, hr.x, hr.y1() - 1);
    if (down && right) corner(tx + 1, ty + 1, kTop, 0, hr.x1() - 1, hr.y1() - 1);
  }
  return hv;
}

bool TileBorders::reaches(const std::vector<uint8_t>& mine, int64_t nt, Side side, int64_t only_mine,
                          int64_t only_theirs) {
  Tile& b = tiles_[static_cast<size_t>(nt)];
  std::lock_guard<std::mutex> l(b.mu);
  const std::vector<uint8_t>& j = edge_of(b.values, side);
  const std::vector<uint8_t>& m = edge_of(b.mask, side);
  if (j.empty()) return true;
  if (only_mine >= 0)
    return rule_.can_propagate(mine.data() + only_mine * bpp_, j.data() + only_theirs * bpp_,
                               m.data() + only_theirs * bpp_);
  const int64_t n = static_cast<int64_t>(mine.size() / bpp_);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t d = eight_ ? -1 : 0; d <= (eight_ ? 1 : 0); ++d) {
      const int64_t q = k + d;
      if (q < 0 || q >= n) continue;
      if (rule_.can_propagate(mine.data() + k * bpp_, j.data() + q * bpp_, m.data() + q * bpp_)) return true;
    }
  return false;
}

EdgeRecord TileBorders::record(int64_t t, const ImageView& v, const Rect& core, bool initial) {
  EdgeRecord r;
  r.edges = lines(v, core);  // outside the lock: neighbours read this tile's edges meanwhile
  const TileEdges& e = r.edges;
  Tile& b = tiles_[static_cast<size_t>(t)];
  std::lock_guard<std::mutex> l(b.mu);
  auto px_differs = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& o, int64_t k) {
    return o.empty() || std::memcmp(a.data() + k * bpp_, o.data() + k * bpp_, bpp_) != 0;
  };
  r.top = e.top != b.values.top, r.bottom = e.bottom != b.values.bottom;
  r.left = e.left != b.values.left, r.right = e.right != b.values.right;
  r.top_left = px_differs(e.top, b.values.top, 0), r.top_right = px_differs(e.top, b.values.top, core.w - 1);
  r.bottom_left = px_differs(e.bottom, b.values.bottom, 0);
  r.bottom_right = px_differs(e.bottom, b.values.bottom, core.w - 1);
  b.values = e;
  if (!initial) ++b.seq;
  r.seq = b.seq;
  return r;
}

EdgeTaken TileBorders::take_edge(int64_t t, Side side, const std::vector<uint8_t>& edge, uint64_t seq) {
  TW_ASSERT(side == kTop || side == kBottom);
  const int64_t w = static_cast<int64_t>(edge.size() / bpp_);
  Tile& b = tiles_[static_cast<size_t>(t)];
  std::lock_guard<std::mutex> l(b.mu);
  EdgeTaken r;
  if (seq <= b.seq) return r;
  std::vector<uint8_t>& held = side == kTop ? b.values.top : b.values.bottom;
  r.newer = true;
  r.changed = edge != held;
  r.first = held.empty() || std::memcmp(edge.data(), held.data(), bpp_) != 0;
  r.last = held.empty() || std::memcmp(edge.data() + (w - 1) * bpp_, held.data() + (w - 1) * bpp_, bpp_) != 0;
  held = edge;
  b.seq = seq;
  return r;
}

}  // namespace tw
