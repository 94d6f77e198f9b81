#pragma once
// Runs a registered op (engine/op_registry.hpp) the same way for every front
// end: checks its parameters and its inputs' pixel types before any work,
// sets apart what the inputs' readers need from the context's budget, then
// runs it.
#include <memory>
#include <vector>

#include "engine/op_registry.hpp"

namespace tw {

// Parameters and types only (no pixels read): ParamError or InputError
// naming the op. Returns the output's pixel type.
PixelFormat check_op(const OpDef& op, const std::vector<ImageType>& inputs, const OpParams& params);

OpResult run_registered_op(const OpDef& op, const std::vector<std::shared_ptr<const TileSource>>& inputs,
                           const OpParams& params, ExecContext& ctx);

// A result the op made without a resolution takes its first input's when it
// has the input's size (the EDT's, a reconstruction's and Canny's stores
// were written without one, and nuclei.csv lost its micron columns): every
// op's result is in the slide's coordinates. Called by every front end
// right after the op's run, before anything reads the result.
void carry_resolution(OpResult& res, const std::vector<std::shared_ptr<const TileSource>>& inputs);

// For ops that read their input in tiles with halos: reserves the reader's
// decode memory (reserve_decode_memory), then lets the input keep decoded
// tiles in an eighth of the rest (at most 256 MiB); both off ctx.memory.
// `reread`: the input is read again later (by several passes of a
// pipeline): then its whole level 0, decoded, where that fits a quarter of
// the rest, so that it is decoded once.
void reserve_input_reads(const TileSource& in, ExecContext& ctx, bool reread = false);

}  // namespace tw
