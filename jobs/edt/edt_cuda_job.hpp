#pragma once
// The exact EDT on a CUDA device: the same column passes and row pass as the
// CPU backend (edt.hpp), with the same integers, so the distances are equal
// bit for bit. The image goes to the device whole when it fits the device
// budget; otherwise in bands of rows, the column passes carrying one value
// per column from band to band and the distances below each pixel spilled
// to the host (memory or a scratch file) between the two passes, so any
// height works. Sides must be below 2^20 pixels (64-bit exactness). In one
// band the result can stay on the device (EdtCudaJob::keep_on_device).
#include <memory>
#include <string>

#include "jobs/edt/edt_job.hpp"

namespace tw {

struct EdtCudaJob {
  EdtParams params;
  size_t memory = size_t{1} << 30;  // host budget
  size_t gpu_memory = 0;            // device budget; 0: half the free memory
  int device = 0;
  std::string scratch_near;
  // When the image is one band: the distances stay in device memory, as a
  // source GPU ops read where it lies (host readers copy pieces down).
  bool keep_on_device = false;
};

std::shared_ptr<const TileSource> euclidean_distance_cuda(const TileSource& src, const EdtCudaJob& job,
                                                          EdtStats* stats = nullptr);

}  // namespace tw
