#pragma once
// `tilewave features`: one record per object of a u32 label image (an object
// = all pixels of one non-zero label value) — area, centroid, bounding box,
// perimeter, axes, eccentricity, solidity, and intensity statistics of a
// second image — written as CSV or as QuPath GeoJSON (docs/features.md).
//
// One streaming pass over bands of rows, on all cores: rows are cut into
// runs of equal labels in parallel, each run is assigned to its object in
// raster order, and each object adds up its runs in raster order (objects in
// parallel), so an object crossing any number of tiles is measured whole and
// the results do not depend on the tile size, the band height or the thread
// count. An object is complete once a row passes without it; records are
// written in raster order of each object's first pixel (label order for
// labels that `tilewave label`, scipy or scikit-image numbered), when no
// object begun before it is still open: formatted in batches in parallel,
// written in order. Memory: the band, the open objects' sums, and (for
// GeoJSON) the label rows the open objects span, all within ctx.memory.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/exec_context.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct FeaturesOptions {
  // > 0: microns per pixel of the label image's level 0, overriding what
  // its file says; with neither, the µm columns are left out.
  double mpp = 0;
  // Hematoxylin statistics of an 8-bit RGB intensity image.
  bool hematoxylin = true;
};

struct FeaturesStats {
  int64_t objects = 0;
  int64_t width = 0, height = 0;
  int64_t band_rows = 0;
  bool read_ahead = false;  // the next band read while one was scanned
  size_t peak_open_objects = 0;
  int64_t outlines_reread = 0;         // outlines traced from a re-read of the labels
  uint64_t bytes = 0;                  // of the output files, together
  std::vector<uint64_t> output_bytes;  // of each output file, in the order given
  double seconds = 0;                  // the whole pass (shared by all its outputs)
};

// Writes the table of `labels` (u32, one channel, level 0) to out_path
// (.csv, or .geojson/.json). `intensity` may be null; otherwise its level 0
// must be the labels' size. Throws InputError for unusable inputs.
FeaturesStats write_features(std::shared_ptr<const TileSource> labels, std::shared_ptr<const TileSource> intensity,
                             const std::string& out_path, const FeaturesOptions& opt, ExecContext& ctx);

// The same table written to several files in one pass over the labels (e.g.
// a CSV and a GeoJSON; each byte for byte what the one-path call writes).
FeaturesStats write_features(std::shared_ptr<const TileSource> labels, std::shared_ptr<const TileSource> intensity,
                             const std::vector<std::string>& out_paths, const FeaturesOptions& opt, ExecContext& ctx);

}  // namespace tw
