// Registration of the colour deconvolution (kernels/hed/hed.hpp).
#include "kernels/hed/hed.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {

void register_hed(OpRegistry& r) {
  OpDef op = filter_op("hed", OpCategory::kPixel);
  op.summary = "RGB -> hematoxylin, eosin, DAB optical densities, float32 (as scikit-image's rgb2hed)";
  op.takes = "8-bit RGB";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    if (in[0].fmt != kRgb8)
      throw InputError(in[0].name + " is " + with_channels_word(in[0].fmt) + "; hed needs 8-bit RGB");
    return PixelFormat{SampleType::kF32, 3};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams&, ExecContext& ctx) {
    return filter_result("hed", ops::run_op(in[0], make_hed(), ctx.backend, "hed"), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
