#pragma once
// The EDT's column distances min(up, down) (the distance along the column to
// the nearest background pixel), as the row pass reads them: rows of a band
// at a time. Two ways to have them: a raster of every pixel's (16-bit where
// the height allows), or, where the input stays readable for as long as the
// result is read (a pipeline's held result), only each band's two edges,
// the rest made again from the input's band.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/image.hpp"
#include "engine/tile_source.hpp"
#include "jobs/edt/edt_support.hpp"

namespace tw {

// The row pass's bands, and the rows between the edges BandEdgeColumns
// keeps: both start at multiples of this.
constexpr int64_t kEdtBand = 32;

class ColumnDistances {
 public:
  virtual ~ColumnDistances() = default;
  // Rows [y0, y0 + rows) across the image, U16 (65535: none) or I32
  // (INT32_MAX: none); a view into the raster or into `tmp`.
  virtual ImageView rows(int64_t y0, int64_t rows, Image& tmp) const = 0;
  virtual PixelFormat format() const = 0;
  int64_t width() const { return w_; }
  int64_t height() const { return h_; }

 protected:
  int64_t w_ = 0, h_ = 0;
};

// Every pixel's column distance, in memory or in a scratch file.
std::shared_ptr<const ColumnDistances> stored_columns(std::shared_ptr<Spillable> raster);

struct BandEdgeStats {
  uint64_t foreground = 0;
  double read_seconds = 0;
  size_t held_bytes = 0;  // the edges' table where it is in memory
};

// The column distances of `src`'s pixels above `threshold` from one read of
// src: per band of kEdtBand rows, the distance from its first row to the
// nearest background above it and from its last to the nearest below (an
// eighth of a byte per pixel in 16 bits, a sixteenth of the raster; in
// memory within a quarter of `memory`, else in a file beside
// scratch_near). A band's distances are made from its rows of src, read
// again, and its two edges. src must be readable, with the same pixels, for
// as long as the result is.
std::shared_ptr<const ColumnDistances> band_edge_columns(std::shared_ptr<const TileSource> src, double threshold,
                                                         size_t memory, const std::string& scratch_near,
                                                         BandEdgeStats* stats);

}  // namespace tw
