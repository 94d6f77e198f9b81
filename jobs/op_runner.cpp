#include "jobs/op_runner.hpp"

#include <algorithm>

namespace tw {

PixelFormat check_op(const OpDef& op, const std::vector<ImageType>& inputs, const OpParams& params) {
  if (inputs.size() != op.inputs.size())
    throw InputError(op.name + " takes " + std::to_string(op.inputs.size()) + " image(s), not " +
                     std::to_string(inputs.size()));
  params.check_all();
  op.validate(params);
  return op.output_format(inputs, params);
}

void reserve_input_reads(const TileSource& in, ExecContext& ctx) {
  ctx.take_memory(reserve_decode_memory(in, ctx.memory, ctx.thread_count()));
  const size_t cache = std::min<size_t>(ctx.memory / 8, size_t{256} << 20);
  in.set_read_cache(cache);
  ctx.take_memory(cache);
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
  return op.run(inputs, params, ctx);
}

}  // namespace tw
