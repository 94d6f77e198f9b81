// Registration of `tilewave math subtract|min|max|mask A B OUT`
// (kernels/math/math.hpp): pixel ops of two images, run on the CPU for either
// backend (one operation per sample, no GPU version yet; the report says
// op_device cpu).
#include <string>
#include <type_traits>

#include "engine/map_source.hpp"
#include "engine/op_registry.hpp"
#include "engine/sample_dispatch.hpp"
#include "kernels/math/math.hpp"

namespace tw::ops {
namespace {

using SourceP = std::shared_ptr<const TileSource>;

std::string size_of(const TileSource& s) {
  return std::to_string(s.level(0).width) + "x" + std::to_string(s.level(0).height);
}

// Both inputs of one size (InputError naming both and their sizes).
void require_one_size(const std::string& op, const SourceP& a, const SourceP& b) {
  if (a->level(0).width != b->level(0).width || a->level(0).height != b->level(0).height)
    throw InputError(op + ": " + a->info().path + " is " + size_of(*a) + " but " + b->info().path + " is " +
                     size_of(*b) + "; both images must have one size");
}

OpResult math_result(const std::string& name, SourceP image) {
  OpResult r;
  r.image = std::move(image);
  r.description = "Tilewave math " + name;
  r.summary = name + " on cpu";
  r.values["op_device"] = "cpu";
  return r;
}

OpDef math_op(const std::string& name) {
  OpDef op;
  op.name = name;
  op.command = {"math", name};
  op.category = OpCategory::kPixel;
  op.inputs = {"A", "B"};
  op.takes = "u8, u16, i32, u32 or f32, any number of channels; A and B of one size and pixel type";
  return op;
}

template <MathOp kOp>
void register_binary(OpRegistry& r, const std::string& name, const std::string& summary, const std::string& help) {
  OpDef op = math_op(name);
  op.summary = summary;
  op.help = help;
  op.output_format = [name](const std::vector<ImageType>& in, const OpParams&) {
    if (in[0].fmt != in[1].fmt)
      throw InputError(name + ": " + in[0].name + " is " + in[0].fmt.str() + " but " + in[1].name + " is " +
                       in[1].fmt.str() + "; " + name + " needs one pixel type");
    return in[0].fmt;
  };
  op.run = [name](const std::vector<SourceP>& in, const OpParams&, ExecContext&) {
    require_one_size(name, in[0], in[1]);
    const PixelFormat f = in[0]->info().fmt;
    const MapSource::RowFn fn = with_sample_type(f.type, [&](auto t) -> MapSource::RowFn {
      using T = decltype(t);
      const int64_t c = f.channels;
      return [c](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
        math_row<kOp>(reinterpret_cast<const T*>(rows[0]), reinterpret_cast<const T*>(rows[1]),
                      reinterpret_cast<T*>(out), n * c);
      };
    });
    return math_result(name, std::make_shared<OwningMapSource>(in, f, fn, name));
  };
  r.add(std::move(op));
}

void register_mask(OpRegistry& r) {
  OpDef op = math_op("mask");
  op.summary = "A where B is non-zero, else 0 (B: one channel, or A's channels)";
  op.help =
      "A where B is non-zero, else 0, sample by sample. B may be any sample type; with\n"
      "one channel it masks every channel of A, otherwise it must have A's channels.\n"
      "A float B's NaN counts as non-zero, -0 as zero. Runs on the CPU.";
  op.takes = "A: u8, u16, i32, u32 or f32, any number of channels; B: any sample type, 1 channel or A's; one size";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    const PixelFormat a = in[0].fmt, b = in[1].fmt;
    if (b.channels != 1 && b.channels != a.channels)
      throw InputError("mask: " + in[1].name + " is " + b.str() + " but " + in[0].name + " is " + a.str() +
                       "; the mask needs 1 channel or " + std::to_string(a.channels));
    return a;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams&, ExecContext&) {
    require_one_size("mask", in[0], in[1]);
    const PixelFormat a = in[0]->info().fmt, b = in[1]->info().fmt;
    const MapSource::RowFn fn = with_sample_type(a.type, [&](auto ta) {
      return with_sample_type(b.type, [&](auto tb) -> MapSource::RowFn {
        using T = decltype(ta);
        using M = decltype(tb);
        const int ca = a.channels, cb = b.channels;
        return [ca, cb](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
          mask_row(reinterpret_cast<const T*>(rows[0]), reinterpret_cast<const M*>(rows[1]), reinterpret_cast<T*>(out),
                   n, ca, cb);
        };
      });
    });
    return math_result("mask", std::make_shared<OwningMapSource>(in, a, fn, "mask"));
  };
  r.add(std::move(op));
}

}  // namespace

void register_math(OpRegistry& r) {
  register_binary<MathOp::kSubtract>(
      r, "subtract", "A - B (u8, u16: at least 0; i32: saturated; f32: IEEE)",
      "A - B, sample by sample: u8 and u16 saturate at 0, i32 at its range, f32 is IEEE\n"
      "float subtraction (NaN and inf propagate). Runs on the CPU.");
  register_binary<MathOp::kMin>(r, "min", "elementwise minimum of A and B",
                                "The smaller of A and B, sample by sample; f32: NaN where either is NaN (as\n"
                                "numpy.minimum). Runs on the CPU.");
  register_binary<MathOp::kMax>(r, "max", "elementwise maximum of A and B",
                                "The larger of A and B, sample by sample; f32: NaN where either is NaN (as\n"
                                "numpy.maximum). Runs on the CPU.");
  register_mask(r);
}

}  // namespace tw::ops
