#include "jobs/op_runner.hpp"

#include <algorithm>

namespace tw {

PixelFormat check_op(const OpDef& op, const std::vector<ImageType>& inputs, const OpParams& params) {
  const size_t want = op.inputs.size() + given_optional_inputs(op, params).size();
  if (inputs.size() != want)
    throw InputError(op.name + " takes " + std::to_string(want) + " image(s), not " + std::to_string(inputs.size()));
  params.check_all();
  op.validate(params);
  return op.output_format(optional_input_slots(op, params, inputs, ImageType{PixelFormat{}, ""}), params);
}

void reserve_input_reads(const TileSource& in, ExecContext& ctx, bool reread) {
  ctx.take_memory(reserve_decode_memory(in, ctx.memory, ctx.thread_count()));
  size_t cache = std::min<size_t>(ctx.memory / 8, size_t{256} << 20);
  if (reread) {
    const size_t whole = in.read_cache_for_level0();
    if (whole <= ctx.memory / 4) cache = std::max(cache, whole);
  }
  in.set_read_cache(cache);
  ctx.take_memory(cache);
}

void carry_resolution(OpResult& res, const std::vector<std::shared_ptr<const TileSource>>& inputs) {
  if (!res.image || inputs.empty() || !inputs[0] || res.image == inputs[0]) return;
  const SourceInfo& in = inputs[0]->info();
  if (res.image->info().mpp_x > 0 || !(in.mpp_x > 0)) return;
  if (res.image->level(0).width != inputs[0]->level(0).width ||
      res.image->level(0).height != inputs[0]->level(0).height)
    return;
  // The result is the op's own, not yet shared: setting it is not a race.
  std::const_pointer_cast<TileSource>(res.image)->set_resolution(in.mpp_x, in.mpp_y);
}

OpResult run_registered_op(const OpDef& op, const std::vector<std::shared_ptr<const TileSource>>& inputs,
                           const OpParams& params, ExecContext& ctx) {
  std::vector<ImageType> types;
  for (const auto& in : inputs) types.push_back({in->info().fmt, in->info().path});
  check_op(op, types, params);
  // Reductions read each pixel once: no cache of decoded tiles for them.
  for (const auto& in : inputs) {
    if (op.category == OpCategory::kReduction)
      ctx.take_memory(reserve_decode_memory(*in, ctx.memory, ctx.thread_count()));
    else
      reserve_input_reads(*in, ctx);
  }
  OpResult res = op.run(optional_input_slots(op, params, inputs, std::shared_ptr<const TileSource>()), params, ctx);
  carry_resolution(res, inputs);
  return res;
}

}  // namespace tw
