// Registration of the Sobel gradient (kernels/sobel/sobel.hpp).
#include "kernels/point/filter_support.hpp"
#include "kernels/sobel/sobel.hpp"

namespace tw::ops {

void register_sobel(OpRegistry& r) {
  OpDef op = filter_op("sobel", OpCategory::kNeighbourhood);
  op.summary = "3x3 gradient magnitude (L2), clipped to 255; or 255 where > T";
  op.usage = "[--threshold T]";
  op.params = {ParamSpec::real("threshold", "T", 0, 1e6, "", "output 255 where the magnitude exceeds T")};
  op.halo = [](const OpParams&) { return 1; };
  op.takes = "8-bit gray or RGB (RGB through BT.601 luma)";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    require_u8_gray_or_rgb(in[0], "sobel");
    return kGray8;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    Sobel s;
    if (p.has("threshold")) s.threshold = static_cast<float>(p.real("threshold"));
    return filter_result("sobel", ops::run_op(to_gray(in[0], ctx.backend), s, ctx.backend, "sobel"), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
