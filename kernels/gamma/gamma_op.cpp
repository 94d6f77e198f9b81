// Registration of `tilewave filter gamma` (kernels/gamma/gamma.hpp).
#include "kernels/gamma/gamma.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {

void register_gamma(OpRegistry& r) {
  OpDef op = filter_op("gamma", OpCategory::kPixel);
  op.summary = "gamma correction: 255 gain (v / 255)^G, rounded (as scikit-image's adjust_gamma)";
  op.usage = "--gamma G [--gain K]";
  op.params = {ParamSpec::real("gamma", "G", 0.01, 100, "", "exponent: below 1 brightens, above 1 darkens").needed(),
               ParamSpec::real("gain", "K", 0, 100, "1", "factor applied after the power")};
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const double g = p.real("gamma"), k = p.real("gain");
    auto gamma = [&](const SourceP& s) {
      return s->info().fmt.channels == 3 ? run_op(s, make_gamma<3>(g, k), ctx.backend, "gamma")
                                         : run_op(s, make_gamma<1>(g, k), ctx.backend, "gamma");
    };
    // Gray and RGB through their kernels, other channel counts channel by
    // channel (docs/channels.md).
    const int c = in[0]->info().fmt.channels;
    SourceP out = c == 1 || c == 3 ? gamma(in[0]) : per_channel(in[0], gamma, "gamma");
    return filter_result("gamma", std::move(out), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
