// Registration of `tilewave filter erode|dilate` (kernels/morphology/morphology.hpp).
#include "kernels/morphology/morphology.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {
namespace {

PixelFormat require_morph_input(const ImageType& in, const std::string& op) {
  const PixelFormat f = in.fmt;
  if (f.type != SampleType::kU8 && f.type != SampleType::kU16)
    throw InputError(in.name + " is " + f.str() + "; " + op + " needs 8- or 16-bit samples");
  return f;
}

template <bool kMax>
SourceP run_morph(const SourceP& in, int r, MorphShape shape, const Backend& b, const std::string& name) {
  const PixelFormat f = in->info().fmt;
  // Other channel counts than gray and RGB: channel by channel.
  if (f.channels != 1 && f.channels != 3)
    return per_channel(
        in, [&](const SourceP& one) { return run_morph<kMax>(one, r, shape, b, name); }, name);
  if (f.type == SampleType::kU8)
    return f.channels == 1 ? run_op(in, make_morph<uint8_t, 1, kMax>(r, shape), b, name)
                           : run_op(in, make_morph<uint8_t, 3, kMax>(r, shape), b, name);
  return f.channels == 1 ? run_op(in, make_morph<uint16_t, 1, kMax>(r, shape), b, name)
                         : run_op(in, make_morph<uint16_t, 3, kMax>(r, shape), b, name);
}

template <bool kMax>
void register_one(OpRegistry& reg, const std::string& name, const std::string& summary, const std::string& help) {
  OpDef op = filter_op(name, OpCategory::kNeighbourhood);
  op.summary = summary;
  op.help = help;
  op.usage = "--radius R [--shape disk|square]";
  op.takes = "8- or 16-bit, any number of channels (each alike)";
  op.params = {ParamSpec::integer("radius", "R", 1, kMaxMorphRadius, "", "radius of the structuring element, in pixels")
                   .needed(),
               ParamSpec::choice("shape", "S", {"disk", "square"}, "disk",
                                 "disk: dx^2 + dy^2 <= R^2 (scikit-image's disk(R)); square: (2R+1) x (2R+1)")};
  op.halo = [](const OpParams& p) { return static_cast<int>(p.integer("radius")); };
  op.output_format = [name](const std::vector<ImageType>& in, const OpParams&) {
    return require_morph_input(in[0], name);
  };
  op.run = [name](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const int r = static_cast<int>(p.integer("radius"));
    const MorphShape shape = parse_morph_shape(p.choice("shape"));
    return filter_result(name, run_morph<kMax>(in[0], r, shape, ctx.backend, name), ctx);
  };
  reg.add(std::move(op));
}

}  // namespace

void register_morphology(OpRegistry& r) {
  register_one<false>(r, "erode", "grayscale erosion: minimum over a disk or square of radius R",
                      "The minimum over the structuring element around each pixel (a disk of radius R,\n"
                      "dx^2 + dy^2 <= R^2, or a (2R+1)-pixel square); pixels outside the image take\n"
                      "no part. Equals scikit-image's erosion(I, disk(R)) and scipy's grey_erosion\n"
                      "(any mode but 'constant'). Several channels: each alike.");
  register_one<true>(r, "dilate", "grayscale dilation: maximum over a disk or square of radius R",
                     "The maximum over the structuring element around each pixel (a disk of radius R,\n"
                     "dx^2 + dy^2 <= R^2, or a (2R+1)-pixel square); pixels outside the image take\n"
                     "no part. Equals scikit-image's dilation(I, disk(R)) and scipy's grey_dilation\n"
                     "(any mode but 'constant'). Several channels: each alike.");
}

}  // namespace tw::ops
