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

// Whether run_op puts `Op` over `in` on the GPU of `backend`: with CUDA, but
// for light ops over an input made on the host (a stored step, a file),
// which the CPU maps for less than the upload and download of every piece
// cost: the nuclei's basins, `filter invert` of a stored 2-GP image read by
// the watershed's CPU flood in 31k tiles, took 3.0 thread-seconds on the
// GPU's lanes. After a GPU op, or read by one, nothing changes: the bytes
// that cross are the same.
template <class Op>
bool runs_on_gpu(const TileSource& in, const Backend& backend) {
#if TW_HAVE_CUDA
  return backend.is_cuda() && !(is_light<Op>::value && !in.device_tiles());
#else
  (void)in, (void)backend;
  return false;
#endif
}

template <class Op>
std::shared_ptr<const TileSource> run_op(std::shared_ptr<const TileSource> in, const Op& op, const Backend& backend,
                                         const std::string& name) {
#if TW_HAVE_CUDA
  if (runs_on_gpu<Op>(*in, backend)) return make_cuda_op_source<Op>(std::move(in), op, backend.device, name);
#else
  (void)backend;
#endif
  return std::make_shared<CpuOpSource<Op>>(std::move(in), op, name);
}

}  // namespace tw::ops
