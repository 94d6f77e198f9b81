#pragma once
// What the filter family of ops shares (`tilewave filter OP`): 8-bit gray or
// RGB in; ops defined on gray take RGB through BT.601 luma first (as
// OpenCV's cvtColor does); gray-or-RGB ops instantiated per channel count.
#include <memory>
#include <string>

#include "engine/op_registry.hpp"
#include "engine/ops/run_op.hpp"
#include "kernels/point/point_ops.hpp"

namespace tw::ops {

using SourceP = std::shared_ptr<const TileSource>;

// The input's format when it is 8-bit gray or RGB; InputError otherwise.
inline PixelFormat require_u8_gray_or_rgb(const ImageType& in, const std::string& who = "filter") {
  if (in.fmt.type != SampleType::kU8 || (in.fmt.channels != 1 && in.fmt.channels != 3))
    throw InputError(in.name + " is " + in.fmt.str() + "; " + who + " needs 8-bit gray or RGB");
  return in.fmt;
}

inline SourceP to_gray(const SourceP& in, const Backend& b) {
  return in->info().fmt.channels == 1 ? in : ops::run_op(in, Gray{}, b, "gray (BT.601 luma)");
}

// Gray or RGB ops: the functor template instantiated for the input's channels.
template <template <int> class Op, class Make>
SourceP per_channels(const SourceP& in, const Backend& b, const std::string& name, Make&& make) {
  if (in->info().fmt.channels == 1) return ops::run_op(in, make(Op<1>{}), b, name);
  return ops::run_op(in, make(Op<3>{}), b, name);
}

// An entry of the filter family: `tilewave filter NAME`, results stored
// losslessly, described as the command wrote them before the registry.
inline OpDef filter_op(const std::string& name, OpCategory category) {
  OpDef op;
  op.name = name;
  op.command = {"filter", name};
  op.category = category;
  op.takes = "8-bit gray or RGB";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) { return require_u8_gray_or_rgb(in[0]); };
  return op;
}

// The result of a filter op as the command reports it.
inline OpResult filter_result(const std::string& name, SourceP image, const ExecContext& ctx) {
  OpResult r;
  r.image = std::move(image);
  r.description = "Tilewave filter " + name;
  r.summary = name + " on " + ctx.backend.str();
  r.values["op_device"] = ctx.backend.str();
  return r;
}

}  // namespace tw::ops
