// Registration of `tilewave filter convert` (kernels/convert/convert.hpp).
#include <type_traits>

#include "engine/sample_dispatch.hpp"
#include "kernels/convert/convert.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {
namespace {

// f(std::integral_constant<int, C>{}) for 1 to 4 channels.
template <class F>
void with_channels(int channels, F&& f) {
  switch (channels) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    default:
      return f(std::integral_constant<int, 4>{});
  }
}

SampleType target_of(const OpParams& p) {
  const std::string t = p.choice("type");
  return t == "u8" ? SampleType::kU8 : t == "u16" ? SampleType::kU16 : SampleType::kF32;
}

double max_of(SampleType t) {
  return t == SampleType::kU8 ? 255.0 : 65535.0;
}

struct Range {
  double lo = 0, span = 1;
  bool ranged = false;
};

// LO and HI - LO for this input and target: --from/--to when given; for an
// integer target without them, the input's full range where it is an
// unsigned type no wider than the target (u8 -> u16 is v * 257); otherwise a
// ParamError, since any default would be a silent conversion.
Range range_of(const ImageType& in, const OpParams& p) {
  const SampleType target = target_of(p);
  Range r;
  if (p.has("from")) {
    r.lo = p.real("from"), r.span = p.real("to") - r.lo, r.ranged = true;
    return r;
  }
  if (target == SampleType::kF32) return r;
  const SampleType src = in.fmt.type;
  const bool fits = src == SampleType::kU8 || (src == SampleType::kU16 && target == SampleType::kU16);
  if (!fits)
    throw ParamError("convert --type " + p.choice("type") + " needs --from LO --to HI for " + in.name + ", which is " +
                     in.fmt.str() + " (no default range maps it to " + sample_name(target) + ")");
  r.lo = 0, r.span = max_of(src), r.ranged = true;
  return r;
}

}  // namespace

void register_convert(OpRegistry& r) {
  OpDef op = filter_op("convert", OpCategory::kPixel);
  op.summary = "sample type conversion with an explicit range: LO..HI -> 0..255 / 0..65535 (or 0..1 in f32)";
  op.usage = "--type u8|u16|f32 [--from LO --to HI]";
  op.help =
      "Converts samples to u8, u16 or f32 through an explicit range, channel by channel:\n"
      "to u8 or u16, out = clamp(round((v - LO) * MAX / (HI - LO)), 0, MAX) with MAX 255 or\n"
      "65535, rounded half away from zero, NaN -> 0; to f32, (v - LO) / (HI - LO), or the\n"
      "value itself without a range. Computed in double, the same bits on CPU and GPU.\n"
      "--from/--to are required where no default is exact: integer targets from f32, i32, u32,\n"
      "or a wider type; without them u8 -> u16 maps 0..255 to 0..65535 (v * 257) and\n"
      "u8 -> u8, u16 -> u16 keep the values.";
  op.takes = "u8, u16, i32, u32 or f32, any number of channels";
  op.params = {ParamSpec::choice("type", "T", {"u8", "u16", "f32"}, "", "output sample type: u8, u16 or f32").needed(),
               ParamSpec::real("from", "LO", -1e300, 1e300, "", "input value mapped to 0"),
               ParamSpec::real("to", "HI", -1e300, 1e300, "", "input value mapped to the maximum (f32: 1)")};
  op.validate = [](const OpParams& p) {
    if (p.has("from") != p.has("to")) throw ParamError("convert needs both --from LO and --to HI, or neither");
    if (p.has("from") && p.real("from") == p.real("to")) throw ParamError("convert: --from and --to must differ");
  };
  op.output_format = [](const std::vector<ImageType>& in, const OpParams& p) {
    const PixelFormat f = in[0].fmt;
    range_of(in[0], p);
    return PixelFormat{target_of(p), f.channels};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const PixelFormat f = in[0]->info().fmt;
    const Range range = range_of(ImageType{f, in[0]->info().path}, p);
    auto convert = [&](const SourceP& src) {
      SourceP out;
      with_sample_type(f.type, [&](auto i) {
        with_sample_type(target_of(p), [&](auto o) {
          using I = decltype(i);
          using O = decltype(o);
          if constexpr (!std::is_same_v<O, int32_t> && !std::is_same_v<O, uint32_t>) {
            with_channels(src->info().fmt.channels, [&](auto c) {
              Convert<I, O, decltype(c)::value> conv;
              conv.lo = range.lo, conv.span = range.span, conv.ranged = range.ranged;
              out = run_op(src, conv, ctx.backend, "convert");
            });
          }
        });
      });
      return out;
    };
    // More than 4 channels: channel by channel (each sample alike anyway).
    return filter_result("convert", f.channels <= 4 ? convert(in[0]) : per_channel(in[0], convert, "convert"), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
