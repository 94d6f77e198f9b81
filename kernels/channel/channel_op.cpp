// Registration of `tilewave filter channel` (kernels/channel/channel.hpp).
#include "engine/sample_dispatch.hpp"
#include "kernels/channel/channel.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {
namespace {

template <class T>
SourceP channel_of(const SourceP& in, int channels, int index, const Backend& b) {
  switch (channels) {
    case 2:
      return run_op(in, Channel<T, 2>{index}, b, "channel");
    case 3:
      return run_op(in, Channel<T, 3>{index}, b, "channel");
    case 4:
      return run_op(in, Channel<T, 4>{index}, b, "channel");
    default:
      // More channels (multiplex): the engine's copy of one channel, the
      // same bits whichever backend runs the op.
      return channel_source(in, index);
  }
}

}  // namespace

void register_channel(OpRegistry& r) {
  OpDef op = filter_op("channel", OpCategory::kPixel);
  op.summary = "channel N (0-based) of a multi-channel image, same sample type, single-channel";
  op.usage = "--index N";
  op.help =
      "Picks channel N (0-based) of an image of 2 to 64 channels and writes it as a\n"
      "single-channel image of the same sample type, bit for bit (e.g. hematoxylin:\n"
      "channel 0 of filter hed's float32 result, or one marker of a multiplex slide).";
  op.takes = "any sample type (u8, u16, i32, u32, f32), 2 to 64 channels";
  op.params = {ParamSpec::integer("index", "N", 0, 63, "", "the channel to keep, 0-based").needed()};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams& p) {
    const PixelFormat f = in[0].fmt;
    if (f.channels < 2)
      throw InputError("channel: " + in[0].name + " is " + f.str() + "; channel needs 2 or more channels");
    const int64_t index = p.integer("index");
    if (index >= f.channels)
      throw InputError("channel: --index " + std::to_string(index) + " but " + in[0].name + " is " + f.str());
    return PixelFormat{f.type, 1};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const PixelFormat f = in[0]->info().fmt;
    const int index = static_cast<int>(p.integer("index"));
    const SourceP out = with_sample_type(
        f.type, [&](auto t) { return channel_of<decltype(t)>(in[0], f.channels, index, ctx.backend); });
    return filter_result("channel", std::move(out), ctx);
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
