#include "engine/ops/op_source.hpp"

#include <tbb/global_control.h>

#include <algorithm>

#include "engine/error.hpp"
#include "engine/ops/reduce.hpp"

namespace tw::ops {

SourceInfo result_info(const TileSource& in, PixelFormat out, const std::string& name) {
  SourceInfo si;
  si.path = name;
  si.format = "computed";
  si.fmt = out;
  si.mpp_x = in.info().mpp_x, si.mpp_y = in.info().mpp_y;
  LevelInfo li;
  li.width = in.level(0).width, li.height = in.level(0).height;
  li.compression = "none (computed)";
  si.levels.push_back(li);
  return si;
}

void require_format(const TileSource& in, PixelFormat want, const std::string& op_name) {
  if (in.info().fmt != want)
    throw InputError(op_name + " needs " + want.str() + " pixels, but " + in.info().path + " is " +
                     in.info().fmt.str());
}

}  // namespace tw::ops

namespace tw::ops {

std::vector<Rect> reduce_cells(const TileSource& in, size_t memory) {
  const LevelInfo& l0 = in.level(0);
  const int64_t bpp = static_cast<int64_t>(in.info().fmt.bytes_per_pixel());
  const int threads = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  // A cell is read, and on the GPU staged once more in pinned memory: three
  // copies per thread fit the budget; at most 32 MB a cell (enough to keep
  // a thread busy), at least one 4 KB row piece.
  const int64_t per_cell =
      std::clamp<int64_t>(static_cast<int64_t>(memory / (3 * static_cast<size_t>(threads))), 4096, int64_t{32} << 20);
  const int64_t row = std::max<int64_t>(1, l0.width * bpp);
  const int64_t w = row <= per_cell ? l0.width : std::max<int64_t>(1, per_cell / bpp);
  const int64_t h = std::clamp<int64_t>(per_cell / (w * bpp), 1, 1024);
  std::vector<Rect> cells;
  for (int64_t y = 0; y < l0.height; y += h)
    for (int64_t x = 0; x < l0.width; x += w) cells.push_back(Rect(x, y, w, h).intersect(l0.bounds()));
  return cells;
}

}  // namespace tw::ops
