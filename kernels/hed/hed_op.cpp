// Registration of the colour deconvolution (kernels/hed/hed.hpp).
#include <string>

#include "kernels/hed/hed.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {

void register_hed(OpRegistry& r) {
  OpDef op = filter_op("hed", OpCategory::kPixel);
  op.summary = "RGB -> hematoxylin, eosin, DAB optical densities, float32 (as scikit-image's rgb2hed)";
  op.usage = "[--stain all|h|e|d]";
  op.help =
      "Colour deconvolution (Ruifrok & Johnston) with scikit-image's stain matrix:\n"
      "three float32 channels, the hematoxylin, eosin and DAB optical densities\n"
      "(rgb2hed's). --stain h (or e, d) writes that one density only, a single\n"
      "channel equal bit for bit to that channel of the three, at a third of the\n"
      "cost (filter hed --stain h is filter hed | filter channel --index 0).";
  op.takes = "8-bit RGB";
  op.params = {ParamSpec::choice("stain", "S", {"all", "h", "e", "d"}, "all",
                                 "all: the three densities; h, e or d: that one only")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams& p) {
    if (in[0].fmt != kRgb8)
      throw InputError(in[0].name + " is " + with_channels_word(in[0].fmt) + "; hed needs 8-bit RGB");
    return PixelFormat{SampleType::kF32, p.choice("stain") == "all" ? 3 : 1};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const std::string stain = p.choice("stain");
    if (stain == "all") return filter_result("hed", ops::run_op(in[0], make_hed(), ctx.backend, "hed"), ctx);
    const int j = stain == "h" ? 0 : stain == "e" ? 1 : 2;
    return filter_result("hed", ops::run_op(in[0], make_hed_stain(j), ctx.backend, "hed"), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
