#include "engine/tile_source.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/memory.hpp"

namespace tw {
namespace {

template <class T>
void fill_constant_pixels(uint8_t* p, int64_t n, int channels, double value) {
  T v;
  if constexpr (std::is_integral_v<T>) {
    const double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
    v = static_cast<T>(std::llround(std::min(hi, std::max(lo, value))));
  } else {
    v = static_cast<T>(value);
  }
  T* t = reinterpret_cast<T*>(p);
  for (int64_t i = 0; i < n * channels; ++i) t[i] = v;
}

}  // namespace

void fill_constant(uint8_t* p, int64_t n, PixelFormat fmt, double value) {
  switch (fmt.type) {
    case SampleType::kU8:
      fill_constant_pixels<uint8_t>(p, n, fmt.channels, value);
      break;
    case SampleType::kU16:
      fill_constant_pixels<uint16_t>(p, n, fmt.channels, value);
      break;
    case SampleType::kI32:
      fill_constant_pixels<int32_t>(p, n, fmt.channels, value);
      break;
    case SampleType::kF32:
      fill_constant_pixels<float>(p, n, fmt.channels, value);
      break;
    case SampleType::kU32:
      fill_constant_pixels<uint32_t>(p, n, fmt.channels, value);
      break;
  }
}

namespace {

// Mapped source coordinate for each position of [lo, lo+n), -1 = constant.
std::vector<int64_t> axis_map(int64_t lo, int64_t n, int64_t size, BorderMode m) {
  std::vector<int64_t> map(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) map[i] = border_index(lo + i, size, m);
  return map;
}

}  // namespace

size_t reserve_decode_memory(const TileSource& src, size_t memory, int threads) {
  size_t unit = 0;
  int at = 0;
  for (int l = 0; l < src.level_count(); ++l)
    if (src.decode_unit_bytes(l) > unit) unit = src.decode_unit_bytes(l), at = l;
  if (unit == 0) return 0;
  const size_t quarter = memory / 4;
  if (unit > quarter) {
    const LevelInfo& li = src.level(at);
    throw BudgetTooSmall(src.info().path + ": level " + std::to_string(at) + " is stored in units of " +
                             std::to_string(li.tile_w) + "x" + std::to_string(li.tile_h) + " pixels that take " +
                             format_bytes(unit) + " each to decode, more than a quarter of --memory " +
                             format_bytes(memory) + " (give --memory " + format_bytes(unit * 4) + " or more)",
                         unit * 4, memory);
  }
  const size_t share = std::min(quarter, unit * static_cast<size_t>(std::max(threads, 1)));
  src.set_decode_budget(share);
  return share;
}

const LevelInfo& TileSource::level(int l) const {
  if (l < 0 || l >= level_count())
    throw InputError("level " + std::to_string(l) + " does not exist in " + info_.path + " (it has " +
                     std::to_string(level_count()) + ")");
  return info_.levels[l];
}

void fill_border(const ImageView& dst, const Rect& valid, int64_t w, int64_t h, Border border) {
  if (valid == dst.rect) return;
  const size_t bpp = dst.fmt.bytes_per_pixel();
  const auto mx = axis_map(dst.rect.x, dst.rect.w, w, border.mode);
  const auto my = axis_map(dst.rect.y, dst.rect.h, h, border.mode);
  // Columns left and right of `valid`, on the rows of `valid`.
  const int64_t left = valid.x - dst.rect.x, right = valid.x1() - dst.rect.x;
  auto side = [&](uint8_t* row, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      uint8_t* out = row + static_cast<size_t>(i) * bpp;
      if (mx[i] < 0) {
        fill_constant(out, 1, dst.fmt, border.value);
      } else {
        TW_ASSERT(mx[i] >= valid.x && mx[i] < valid.x1());
        std::memcpy(out, row + static_cast<size_t>(mx[i] - dst.rect.x) * bpp, bpp);
      }
    }
  };
  for (int64_t y = valid.y; y < valid.y1(); ++y) {
    uint8_t* row = dst.row_bytes(y);
    side(row, 0, left);
    side(row, right, dst.rect.w);
  }
  // Whole rows above and below, copied from rows already completed.
  for (int64_t j = 0; j < dst.rect.h; ++j) {
    const int64_t y = dst.rect.y + j;
    if (y >= valid.y && y < valid.y1()) continue;
    uint8_t* row = dst.row_bytes(y);
    if (my[j] < 0) {
      fill_constant(row, dst.rect.w, dst.fmt, border.value);
    } else {
      TW_ASSERT(my[j] >= valid.y && my[j] < valid.y1());
      std::memcpy(row, dst.row_bytes(my[j]), dst.row_length_bytes());
    }
  }
  // Constant mode leaves the columns of those rows to fix: rows copied from
  // inside carry the valid row's side columns, which are already constant.
}

void TileSource::read(int lvl, const ImageView& dst, Border border) const {
  const LevelInfo& li = level(lvl);
  TW_ASSERT(dst.fmt == info_.fmt);
  if (dst.rect.empty()) return;
  const Rect bounds = li.bounds();
  const Rect core = dst.rect.intersect(bounds);
  if (core == dst.rect) {
    read_inside(lvl, dst);
    return;
  }
  if (border.mode == BorderMode::kConstant) {
    if (!core.empty()) read_inside(lvl, dst.sub(core));
    if (core.empty()) {
      for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y)
        fill_constant(dst.row_bytes(y), dst.rect.w, dst.fmt, border.value);
      return;
    }
    fill_border(dst, core, li.width, li.height, border);
    return;
  }
  // Reflection may reach pixels of the level outside dst when the halo is
  // wider than the part of dst inside the image: read the span it needs.
  int64_t x0 = INT64_MAX, x1 = INT64_MIN, y0 = INT64_MAX, y1 = INT64_MIN;
  for (int64_t x = dst.rect.x; x < dst.rect.x1(); ++x) {
    const int64_t m = border_index(x, li.width, border.mode);
    x0 = std::min(x0, m), x1 = std::max(x1, m + 1);
  }
  for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
    const int64_t m = border_index(y, li.height, border.mode);
    y0 = std::min(y0, m), y1 = std::max(y1, m + 1);
  }
  const Rect need(x0, y0, x1 - x0, y1 - y0);
  if (!core.empty() && core.contains(need)) {
    read_inside(lvl, dst.sub(core));
    fill_border(dst, core, li.width, li.height, border);
    return;
  }
  Image tmp(dst.fmt, need);
  read_inside(lvl, tmp.view());
  const size_t bpp = dst.fmt.bytes_per_pixel();
  for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
    const int64_t sy = border_index(y, li.height, border.mode);
    uint8_t* out = dst.row_bytes(y);
    for (int64_t x = dst.rect.x; x < dst.rect.x1(); ++x) {
      const int64_t sx = border_index(x, li.width, border.mode);
      std::memcpy(out + static_cast<size_t>(x - dst.rect.x) * bpp, tmp.ptr_bytes(sx, sy), bpp);
    }
  }
}

Image TileSource::read(int lvl, const Rect& r, Border border) const {
  Image img(info_.fmt, r);
  read(lvl, img.view(), border);
  return img;
}

Image TileSource::read_associated(const std::string& name) const {
  throw InputError("no associated image '" + name + "' in " + info_.path);
}

}  // namespace tw
