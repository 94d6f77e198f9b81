#include "engine/ops/op_source.hpp"

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
    throw InputError(op_name + " needs " + want.str() + " pixels, but " + in.info().path + " is " + in.info().fmt.str());
}

}  // namespace tw::ops

namespace tw::ops {

int64_t reduce_band_rows(const TileSource& in) {
  const int64_t row = std::max<int64_t>(1, in.level(0).width * static_cast<int64_t>(in.info().fmt.bytes_per_pixel()));
  return std::clamp<int64_t>((int64_t{32} << 20) / row, 1, 1024);
}

}  // namespace tw::ops
