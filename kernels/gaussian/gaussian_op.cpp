// Registration of the Gaussian blur (kernels/gaussian/gaussian.hpp).
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {

void register_gaussian(OpRegistry& r) {
  OpDef op = filter_op("gaussian", OpCategory::kNeighbourhood);
  op.summary = "Gaussian blur, radius ceil(3 S), mirror border";
  op.usage = "--sigma S";
  op.params = {ParamSpec::real("sigma", "S", 1e-3, kMaxGaussianSigma, "", "Gaussian sigma, in pixels").needed()};
  op.halo = [](const OpParams& p) { return gaussian_radius(p.real("sigma")); };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const double sigma = p.real("sigma");
    auto blur = [&](const SourceP& s) {
      return s->info().fmt.channels == 3 ? ops::run_op(s, make_gaussian<3>(sigma), ctx.backend, "gaussian")
                                         : ops::run_op(s, make_gaussian<1>(sigma), ctx.backend, "gaussian");
    };
    // Gray and RGB through their kernels, other channel counts channel by
    // channel (docs/channels.md).
    const int c = in[0]->info().fmt.channels;
    SourceP out = c == 1 || c == 3 ? blur(in[0]) : per_channel(in[0], blur, "gaussian");
    return filter_result("gaussian", std::move(out), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
