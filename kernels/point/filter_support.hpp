#pragma once
// What the filter family of ops shares (`tilewave filter OP`): 8-bit images
// in; ops defined per channel take any number of channels (gray and RGB
// through kernels instantiated for them, others channel by channel,
// engine/channel_split.hpp); ops defined on gray take RGB through BT.601
// luma first (as OpenCV's cvtColor does) and refuse other channel counts.
#include <memory>
#include <string>

#include "engine/channel_split.hpp"
#include "engine/op_registry.hpp"
#include "engine/ops/run_op.hpp"
#include "kernels/point/point_ops.hpp"

namespace tw::ops {

using SourceP = std::shared_ptr<const TileSource>;

// "u8 x5 (5 channels)": a format as messages about channel counts give it.
inline std::string with_channels_word(const PixelFormat& f) {
  return f.str() + (f.channels > 4 ? " (" + std::to_string(f.channels) + " channels)" : "");
}

// The input's format when it is 8-bit gray or RGB; InputError otherwise,
// naming the op, and how to get there from several channels.
inline PixelFormat require_u8_gray_or_rgb(const ImageType& in, const std::string& who = "filter") {
  if (in.fmt.type != SampleType::kU8 || (in.fmt.channels != 1 && in.fmt.channels != 3))
    throw InputError(
        in.name + " is " + with_channels_word(in.fmt) + "; " + who + " needs 8-bit gray or RGB" +
        (in.fmt.channels != 1 && in.fmt.channels != 3 ? " (pick a channel first: filter channel --index K)" : ""));
  return in.fmt;
}

// The input's format when it is 8-bit, of any channel count; InputError
// otherwise, naming the op.
inline PixelFormat require_u8(const ImageType& in, const std::string& who) {
  if (in.fmt.type != SampleType::kU8)
    throw InputError(in.name + " is " + in.fmt.str() + "; " + who + " needs 8-bit samples (filter convert --type u8)");
  return in.fmt;
}

inline SourceP to_gray(const SourceP& in, const Backend& b) {
  return in->info().fmt.channels == 1 ? in : ops::run_op(in, Gray{}, b, "gray (BT.601 luma)");
}

// Per-channel ops: the functor template instantiated for gray or RGB; any
// other channel count channel by channel (the same results as on each
// channel alone).
template <template <int> class Op, class Make>
SourceP per_channels(const SourceP& in, const Backend& b, const std::string& name, Make&& make) {
  const int c = in->info().fmt.channels;
  if (c == 1) return ops::run_op(in, make(Op<1>{}), b, name);
  if (c == 3) return ops::run_op(in, make(Op<3>{}), b, name);
  return per_channel(
      in, [&](const SourceP& one) { return ops::run_op(one, make(Op<1>{}), b, name); }, name);
}

// An entry of the filter family: `tilewave filter NAME`, results stored
// losslessly, described as the command wrote them before the registry.
inline OpDef filter_op(const std::string& name, OpCategory category) {
  OpDef op;
  op.name = name;
  op.command = {"filter", name};
  op.category = category;
  op.takes = "8-bit, any number of channels (each alike)";
  op.output_format = [name](const std::vector<ImageType>& in, const OpParams&) { return require_u8(in[0], name); };
  return op;
}

// The result of a filter op as the command reports it; `device`: where it
// ran, when not the backend's (a light op over a host input: run_op).
inline OpResult filter_result(const std::string& name, SourceP image, const ExecContext& ctx,
                              const std::string& device = "") {
  const std::string on = device.empty() ? ctx.backend.str() : device;
  OpResult r;
  r.image = std::move(image);
  r.description = "Tilewave filter " + name;
  r.summary = name + " on " + on;
  r.values["op_device"] = on;
  return r;
}

// Where run_op puts the light op `Op` over `in`.
template <class Op>
std::string light_op_device(const TileSource& in, const ExecContext& ctx) {
  return runs_on_gpu<Op>(in, ctx.backend) ? ctx.backend.str() : Backend{}.str();
}

}  // namespace tw::ops
