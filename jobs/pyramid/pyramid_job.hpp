#pragma once
// One streaming pass that turns level 0 of a source into every level of a
// pyramid: a oneTBB pipeline of read/decode (parallel) -> cascade (serial,
// internally parallel) -> encode (parallel) -> write (serial, in order), with
// tokens in flight bounded by the memory budget.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/jpeg_coefs.hpp"
#include "engine/pyramid_sink.hpp"
#include "engine/ranks/ranks.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct PyramidJobOptions {
  int64_t tile = 256;
  int64_t min_size = 256;
  size_t memory = size_t{1} << 30;
  // Copy level-0 tiles from the source's raw tiles instead of encoding them.
  // The caller has checked that the source's raw format matches the sink's.
  bool passthrough = false;
  std::string progress_label = "pyramid";
  // Scratch files (for images too wide for the budget) go beside this path;
  // empty: $TMPDIR or /tmp.
  std::string scratch_near;
  // A pending CUDA backend (parse_backend_deferred) lets the pass start on
  // the CPU and the GPU join once it is up, where the pass allows it.
  Backend backend;
  // Tests: with a pending backend, start on the CPU even if CUDA is already
  // up, and hand the cascade over at the first band at or after this row.
  int64_t gpu_join_row = -1;
  // Device memory for the CUDA cascade; 0: half of the device's free memory.
  size_t gpu_memory = 0;
  // With CUDA and level-0 pass-through of JPEG tiles: decode some of them on
  // the GPU (nvJPEG) where the build and the tiles allow it. kAuto does so
  // only with few CPU threads: measured on an H100 host, 16 threads of
  // libjpeg-turbo outrun the hardware decoder on 256-px tiles
  // (docs/PERFORMANCE.md).
  enum class GpuJpeg { kOff, kAuto, kOn };
  GpuJpeg gpu_jpeg = GpuJpeg::kAuto;
  // Ranks to split the slide over by bands of rows (jobs/pyramid/
  // banded_pyramid.hpp); null or one rank: this process makes it all.
  Ranks* ranks = nullptr;
};

struct PyramidStats {
  std::vector<std::pair<int64_t, int64_t>> level_sizes;
  int64_t tiles_encoded = 0;
  int64_t tiles_passed_through = 0;
  int tokens = 0;            // bands in flight
  int stripes = 1;           // vertical stripes level 0 was cut into
  size_t planned_bytes = 0;  // working set the plan expects
  double seconds = 0;
  std::string backend = "cpu";
  // Seconds busy in each stage. Host stages: summed over threads (CPU
  // seconds); device stages: summed device time from CUDA events.
  // reduce = the reduce stage's wall time on the host (for the CPU backend,
  // the cascade; for CUDA, issuing work to the device).
  double read_s = 0, decode_s = 0, reduce_s = 0, encode_s = 0, write_s = 0;
  double upload_s = 0, kernel_s = 0, download_s = 0;
  uint64_t pixels_in = 0;
  uint64_t bytes_read = 0;  // compressed bytes read for pass-through
  uint64_t bytes_uploaded = 0, bytes_downloaded = 0;
  size_t planned_device_bytes = 0;
  std::string jpeg_decoder;  // who decoded level-0 JPEG tiles: "libjpeg-turbo", "nvjpeg-hardware + libjpeg-turbo", ...
  int64_t gpu_decoded_bands = 0;  // of the level-0 bands, how many the GPU decoded
  int64_t gpu_idct_bands = 0;     // ... and how many it finished after the CPU's entropy decoding
  int64_t gpu_device_bands = 0;   // level-0 bands a GPU chain computed straight into the GPU's cascade
  int64_t gpu_fdct_tiles = 0;     // tiles the GPU transformed (the CPU entropy-coding those it did not)
  int64_t gpu_entropy_tiles = 0;  // of them, tiles the GPU entropy-coded too (the CPU only adding head and EOI)
  // With a pending backend (the pass began on the CPU while CUDA started):
  // the level-0 row from which the GPU made the levels; -1 if it never did.
  int64_t gpu_from_row = -1;
  // A slide split over ranks (jobs/pyramid/banded_pyramid.hpp): how many,
  // the levels each made from its share of rows, and rank 0's seconds
  // putting every rank's tiles into the file in a single process's order.
  int ranks = 1;
  int shared_levels = 0;
  double merge_s = 0;
};

// Level sizes of the pyramid run_pyramid would write.
std::vector<std::pair<int64_t, int64_t>> plan_pyramid_levels(const TileSource& src, int64_t min_size);

PyramidStats run_pyramid(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt);

// Device memory a pass may plan with: 0 on the CPU (or a backend still
// starting, whose pass is planned as a CPU one).
size_t pyramid_gpu_budget(const PyramidJobOptions& opt);

}  // namespace tw
