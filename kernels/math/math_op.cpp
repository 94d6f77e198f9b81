// Registration of `tilewave math subtract|min|max|mask A B OUT`
// (kernels/math/math.hpp): pixel ops of two images, on the CPU or on the GPU
// (math_cuda.hpp; see on_gpu below). The report's op_device says which.
#include <string>
#include <type_traits>

#include "engine/map_source.hpp"
#include "engine/op_registry.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/sample_dispatch.hpp"
#include "kernels/math/math.hpp"
#include "kernels/math/math_cuda.hpp"

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

// With --device cuda, the GPU where an input is made on it (a GPU chain, a
// result left in device memory): that input stays there, and so does the
// result for the GPU steps after it. Two host inputs stay on the CPU: one
// pass over memory, where the GPU would add their upload (the nuclei's u32
// label mask: 4 bytes a pixel) and the result's download.
bool on_gpu(const std::vector<SourceP>& in, const ExecContext& ctx) {
  if (!ctx.backend.is_cuda()) return false;
  for (const SourceP& s : in)
    if (made_on_device(*s, ctx.backend.device)) return true;
  return false;
}

OpResult math_result(const std::string& name, SourceP image, const std::string& device) {
  OpResult r;
  r.image = std::move(image);
  r.description = "Tilewave math " + name;
  r.summary = name + " on " + device;
  r.values["op_device"] = device;
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

template <MathOp kOp, MathKind kKind>
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
  op.run = [name](const std::vector<SourceP>& in, const OpParams&, ExecContext& ctx) {
    require_one_size(name, in[0], in[1]);
    if (on_gpu(in, ctx))
      return math_result(name, make_math_cuda(kKind, in[0], in[1], ctx.backend.device, name), ctx.backend.str());
    const PixelFormat f = in[0]->info().fmt;
    const MapSource::RowFn fn = with_sample_type(f.type, [&](auto t) -> MapSource::RowFn {
      using T = decltype(t);
      const int64_t c = f.channels;
      return [c](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
        math_row<kOp>(reinterpret_cast<const T*>(rows[0]), reinterpret_cast<const T*>(rows[1]),
                      reinterpret_cast<T*>(out), n * c);
      };
    });
    return math_result(name, std::make_shared<OwningMapSource>(in, f, fn, name), "cpu");
  };
  r.add(std::move(op));
}

void register_mask(OpRegistry& r) {
  OpDef op = math_op("mask");
  op.summary = "A where B is non-zero, else 0 (B: one channel, or A's channels)";
  op.help =
      "A where B is non-zero, else 0, sample by sample. B may be any sample type; with\n"
      "one channel it masks every channel of A, otherwise it must have A's channels.\n"
      "A float B's NaN counts as non-zero, -0 as zero.";
  op.takes = "A: u8, u16, i32, u32 or f32, any number of channels; B: any sample type, 1 channel or A's; one size";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    const PixelFormat a = in[0].fmt, b = in[1].fmt;
    if (b.channels != 1 && b.channels != a.channels)
      throw InputError("mask: " + in[1].name + " is " + b.str() + " but " + in[0].name + " is " + a.str() +
                       "; the mask needs 1 channel or " + std::to_string(a.channels));
    return a;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams&, ExecContext& ctx) {
    require_one_size("mask", in[0], in[1]);
    if (on_gpu(in, ctx))
      return math_result("mask", make_math_cuda(MathKind::kMask, in[0], in[1], ctx.backend.device, "mask"),
                         ctx.backend.str());
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
    return math_result("mask", std::make_shared<OwningMapSource>(in, a, fn, "mask"), "cpu");
  };
  r.add(std::move(op));
}

}  // namespace

void register_math(OpRegistry& r) {
  register_binary<MathOp::kSubtract, MathKind::kSubtract>(
      r, "subtract", "A - B (u8, u16: at least 0; i32: saturated; f32: IEEE)",
      "A - B, sample by sample: u8 and u16 saturate at 0, i32 at its range, f32 is IEEE\n"
      "float subtraction (NaN and inf propagate).");
  register_binary<MathOp::kMin, MathKind::kMin>(
      r, "min", "elementwise minimum of A and B",
      "The smaller of A and B, sample by sample; f32: NaN where either is NaN (as\n"
      "numpy.minimum).");
  register_binary<MathOp::kMax, MathKind::kMax>(
      r, "max", "elementwise maximum of A and B",
      "The larger of A and B, sample by sample; f32: NaN where either is NaN (as\n"
      "numpy.maximum).");
  register_mask(r);
}

}  // namespace tw::ops
