#pragma once
// Opens the sink an output's name asks for, beside open_source for inputs.
// Today every name gets the generic pyramidal BigTIFF (OpenSlide, vips,
// QuPath and tifffile read it); OME-TIFF, DeepZoom and OME-Zarr will be
// chosen here by their names (.ome.tif, .dzi, .zarr).
#include <memory>
#include <string>
#include <vector>

#include "engine/pyramid_sink.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/pyramid_writer.hpp"

namespace tw {

struct SinkRequest {
  std::string path;
  EncodeSettings encode;
  std::vector<PyramidLevelSpec> levels;  // level 0's format may be a source's raw one (pass-through)
  PyramidWriterOptions options;
};

// Memory the sink for this request holds until finish() (its tile index):
// checked against the budget before the sink is made.
size_t sink_memory_bytes(const SinkRequest& r);

std::unique_ptr<PyramidSink> open_sink(const SinkRequest& r);

}  // namespace tw
