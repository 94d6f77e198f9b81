#pragma once
// run_op(): an op over a TileSource on the chosen backend, as a TileSource.
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/ops/op_source.hpp"

namespace tw::ops {

// Defined in engine/ops/op_cuda.cuh; instantiated per op by TW_CUDA_OP in
// the op's .cu file (so a CUDA build fails to link if an op lacks one).
template <class Op>
std::shared_ptr<const TileSource> make_cuda_op_source(std::shared_ptr<const TileSource> in, const Op& op, int device,
                                                      const std::string& name);

template <class Op>
std::shared_ptr<const TileSource> run_op(std::shared_ptr<const TileSource> in, const Op& op, const Backend& backend,
                                         const std::string& name) {
#if TW_HAVE_CUDA
  if (backend.is_cuda()) return make_cuda_op_source<Op>(std::move(in), op, backend.device, name);
#else
  (void)backend;
#endif
  return std::make_shared<CpuOpSource<Op>>(std::move(in), op, name);
}

}  // namespace tw::ops
