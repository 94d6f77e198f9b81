#pragma once
// Reconstruction of a whole slide, out of core: the marker and the mask are
// copied tile by tile into scratch stores (checking their order), the
// wavefront engine runs to stability, and the result is left in a store
// that reads as a TileSource (for the pyramid writer or a next op).
#include <functional>
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/exec_context.hpp"
#include "engine/scratch_store.hpp"
#include "kernels/reconstruct/reconstruct.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {

struct ReconstructJob {
  ReconstructParams params;
  // skimage refuses a marker above the mask (dilation) or below it
  // (erosion); so do we, unless asked to clip the marker to the mask.
  bool clip = false;
  int64_t tile = 256;  // the wavefront's tiles on the CPU
  // With CUDA: 0 picks the largest power of two up to 8192 whose tiles keep
  // the stores within the memory budget, no larger than the image needs
  // (never below `tile`).
  int64_t gpu_tile = 0;
  size_t memory = size_t{1} << 30;
  size_t gpu_memory = 0;     // device budget (0: half the free memory)
  std::string scratch_near;  // scratch files go beside this path
  Backend backend;
  // A binary image whose bit planes fit the budgets is solved whole, on the
  // device with CUDA, in memory on the CPU (binary_whole.hpp), and with CUDA
  // a grey one too where it fits the device (grey_whole.hpp); false: always
  // the tile wavefront.
  bool whole_image_on_device = true;
  // Several ranks: the propagation is split over them, and each ends with
  // the whole result (every rank loads the same inputs).
  Ranks* ranks = nullptr;
  // When set, each marker tile is computed from the mask tile (mask, marker
  // views of the same rect) instead of read: the mask's source runs once.
  // It may also rewrite the mask tile in place (Canny turns its classes into
  // a binary mask there).
  std::function<void(const ImageView& mask, const ImageView& marker)> marker_from_mask;
  // Says that marker_from_mask is fill-holes' (the mask on the image's
  // border, the maximum inside), so a binary mask computed on the GPU can be
  // packed and solved there without coming to the host (binary_whole.hpp).
  bool marker_is_mask_border = false;
  // Says that marker_from_mask is h-dome's (the mask minus this, saturating),
  // so a grey image can be solved whole on the device (grey_whole.hpp).
  int64_t marker_mask_minus = 0;
  // The run's ExecContext::result_to_device: a result solved whole on the
  // device may stay there for the GPU steps that read it.
  bool result_on_device = false;
  // h-dome's: where the image is solved whole on the device, give the dome
  // (the mask minus its reconstruction, saturating) computed there rather
  // than the reconstruction (ReconstructResult::dome says it did).
  bool dome = false;
};

// The GPU is filled only by large tiles: a 4096^2 tile is 16384 megapixels,
// and every extra tile visit moves the tile across PCIe again.
constexpr int64_t kCudaTile = 4096;
constexpr int64_t kCudaTileMax = 8192;

struct ReconstructResult {
  std::shared_ptr<const TileSource> image;  // the reconstruction
  std::shared_ptr<ScratchStore> store;      // its tile store (null when solved whole on the device)
  size_t held_bytes = 0;                    // host memory the image holds without a store (its bit plane)
  WavefrontStats wavefront;
  ScratchStore::Stats store_stats;
  GpuWavefrontStats gpu;          // with CUDA
  bool gpu_binary = false;        // ran the bit-plane kernel (binary input)
  bool gpu_device_input = false;  // the input was a GPU chain's, packed on the device
  bool whole_image = false;       // solved whole (in memory or on the device): no tiles
  bool on_gpu = false;            // ran on the GPU
  bool dome = false;              // `image` is the dome (ReconstructJob::dome), not the reconstruction
};

// The job's budgets, tile, scratch place and backend from a run's context.
ReconstructJob reconstruct_job(const ExecContext& ctx, ReconstructParams params = {}, bool clip = false);

ReconstructResult reconstruct(const TileSource& marker, const TileSource& mask, const ReconstructJob& job);
// The marker from job.marker_from_mask.
ReconstructResult reconstruct(const TileSource& mask, const ReconstructJob& job);

}  // namespace tw
