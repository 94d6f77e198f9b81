// Registration of the point ops (kernels/point/point_ops.hpp).
#include "engine/ops/reduce.hpp"
#include "kernels/point/filter_support.hpp"
#include "kernels/stats/stats.hpp"

namespace tw::ops {
namespace {

void register_brightness(OpRegistry& r) {
  OpDef op = filter_op("brightness", OpCategory::kPixel);
  op.summary = "v + N, saturated (each channel)";
  op.usage = "--add N";
  op.params = {ParamSpec::integer("add", "N", -255, 255, "", "value added, -255..255").needed()};
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const int add = static_cast<int>(p.integer("add"));
    return filter_result("brightness",
                         per_channels<Brightness>(in[0], ctx.backend, "brightness",
                                                  [&](auto o) {
                                                    o.add = add;
                                                    return o;
                                                  }),
                         ctx, light_op_device<Brightness<1>>(*in[0], ctx));
  };
  r.add(std::move(op));
}

void register_contrast(OpRegistry& r) {
  OpDef op = filter_op("contrast", OpCategory::kPixel);
  op.summary = "(v - C) * F + C, rounded, saturated";
  op.usage = "--factor F [--center C]";
  op.params = {ParamSpec::real("factor", "F", 0, 255, "", "gain").needed(),
               ParamSpec::real("center", "C", 0, 255, "128", "fixed point")};
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const float f = static_cast<float>(p.real("factor")), c = static_cast<float>(p.real("center"));
    return filter_result("contrast",
                         per_channels<Contrast>(in[0], ctx.backend, "contrast",
                                                [&](auto o) {
                                                  o.factor = f, o.center = c;
                                                  return o;
                                                }),
                         ctx);
  };
  r.add(std::move(op));
}

void register_threshold(OpRegistry& r) {
  OpDef op = filter_op("threshold", OpCategory::kPixel);
  op.summary = "255 where v > T (Otsu: T from the whole-slide histogram)";
  op.usage = "--value T | --otsu [--nonzero]";
  op.params = {ParamSpec::integer("value", "T", 0, 255, "", "255 where v > T"),
               ParamSpec::flag("otsu", "T by Otsu's method on the whole slide's histogram"),
               ParamSpec::flag("nonzero",
                               "Otsu on the histogram of the non-zero pixels only (a masked image's "
                               "background, h-dome's flat ground)")};
  op.validate = [](const OpParams& p) {
    if (p.has("value") == p.flag("otsu")) throw ParamError("threshold needs one of --value T and --otsu");
    if (p.flag("nonzero") && !p.flag("otsu")) throw ParamError("threshold --nonzero goes with --otsu");
  };
  op.reads_input_twice = [](const OpParams& p) { return p.flag("otsu"); };
  op.takes = "8-bit gray or RGB (RGB through BT.601 luma)";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    require_u8_gray_or_rgb(in[0], "threshold");
    return kGray8;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    Threshold t;
    const SourceP g = to_gray(in[0], ctx.backend);
    OpResult res;
    if (p.flag("otsu")) {
      auto hist = ops::histogram(*g, ChannelHistogram<1>{}, ctx.backend, "otsu histogram", ctx.memory);
      // Pixels outside a mask are zeros: counted, they would be the class
      // Otsu separates from everything else.
      if (p.flag("nonzero")) hist[0] = 0;
      t.t = otsu_threshold(hist);
      res.messages.push_back("Otsu threshold: " + std::to_string(t.t));
    } else {
      t.t = static_cast<int>(p.integer("value"));
    }
    OpResult f = filter_result("threshold", ops::run_op(g, t, ctx.backend, "threshold"), ctx,
                               light_op_device<Threshold>(*g, ctx));
    f.messages = res.messages;
    if (p.flag("otsu")) f.values["otsu_threshold"] = t.t;
    return f;
  };
  r.add(std::move(op));
}

void register_invert(OpRegistry& r) {
  OpDef op = filter_op("invert", OpCategory::kPixel);
  op.summary = "255 - v (each channel)";
  op.run = [](const std::vector<SourceP>& in, const OpParams&, ExecContext& ctx) {
    return filter_result("invert", per_channels<Invert>(in[0], ctx.backend, "invert", [](auto o) { return o; }), ctx,
                         light_op_device<Invert<1>>(*in[0], ctx));
  };
  r.add(std::move(op));
}

void register_gray(OpRegistry& r) {
  OpDef op = filter_op("gray", OpCategory::kPixel);
  op.summary = "RGB -> gray (BT.601 luma, as OpenCV)";
  op.takes = "8-bit gray or RGB";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    require_u8_gray_or_rgb(in[0], "gray");
    return kGray8;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams&, ExecContext& ctx) {
    return filter_result("gray", to_gray(in[0], ctx.backend), ctx);
  };
  r.add(std::move(op));
}

}  // namespace

void register_point_ops(OpRegistry& r) {
  register_brightness(r);
  register_contrast(r);
  register_threshold(r);
  register_invert(r);
  register_gray(r);
}

}  // namespace tw::ops
