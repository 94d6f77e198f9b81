#pragma once
// The exact EDT of a whole slide, streamed (kernels/edt/edt.hpp has the
// math): the column pass bottom-up into a raster of distances below, then
// top-down into the column distances; the row pass runs as the result is
// read, band by band; memory O(width x band) besides that raster.
#include <memory>
#include <string>

#include "engine/raw_raster.hpp"
#include "kernels/edt/edt.hpp"

namespace tw {

struct EdtStats {
  double seconds = 0;
  double read_seconds = 0;  // of `seconds`: reading (and decoding) the input
  uint64_t foreground = 0, background = 0;
  size_t held_bytes = 0;  // what the result holds while it is read (its raster in memory, its cache)
  // With CUDA: device time of the kernels and of the copies, and how many
  // bands of rows the image was cut into (1: it fitted on the device).
  double gpu_kernel_seconds = 0, gpu_transfer_seconds = 0;
  int64_t gpu_bands = 0;
  bool on_device = false;   // the result stayed in device memory
  bool bits_input = false;  // the input went up as bits (engine/bit_plane.hpp)
};

// No background anywhere: every distance is +infinity (documented result;
// scipy returns distances to a point outside the image instead).
// The result is float32, computed when read (the row pass over a raster of
// column distances, 16-bit where the height allows: in memory when it fits
// a quarter of `memory`, else in a scratch file beside scratch_near), with a
// cache of bands of rows in an eighth. Readers that need more bands at once
// than that cache holds get the result stored once instead (in memory within
// that eighth, else in a scratch file) rather than bands made again and again.
std::shared_ptr<const TileSource> euclidean_distance(const TileSource& src, const EdtParams& p, size_t memory,
                                                     const std::string& scratch_near, EdtStats* stats = nullptr);

// The same result where src stays readable, with the same pixels, for as
// long as the result is read (a pipeline's held result: the executor keeps
// it, OpResult::reads_inputs): instead of the raster of column distances
// (2 bytes a pixel, spilled beyond a quarter of `memory`: written, read and
// written again, read again), only each band's edges are kept, an eighth of
// a byte a pixel, and a band's rows of src are read again when the band is
// made (jobs/edt/edt_columns.hpp). The same distances, to the bit.
std::shared_ptr<const TileSource> euclidean_distance_of_held(std::shared_ptr<const TileSource> src, const EdtParams& p,
                                                             size_t memory, const std::string& scratch_near,
                                                             EdtStats* stats = nullptr);

// How a result of euclidean_distance has been read so far: the bands of rows
// made (the row pass run over them), and whether it has been stored.
struct EdtReadCounts {
  int64_t bands_made = -1;  // -1: not such a result
  bool stored = false;
};
EdtReadCounts edt_read_counts(const TileSource& result);

}  // namespace tw
