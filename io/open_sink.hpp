#pragma once
// Opens the sink an output's name asks for, beside open_source for inputs:
// OUT.ome.tif (OME-TIFF, levels in SubIFDs), OUT.dzi (Deep Zoom), OUT.zarr
// (OME-Zarr), anything else the generic pyramidal BigTIFF (OpenSlide, vips,
// QuPath and tifffile read it) but OUT.png/.jpg/.jpeg, which are refused.
// --format forces one.
#include <memory>
#include <string>
#include <vector>

#include "engine/pyramid_sink.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/pyramid_writer.hpp"

namespace tw {

enum class Layout : uint8_t { kTiff, kOmeTiff, kDzi, kZarr };

// The layout for an output path, or the one `forced` names (tiff, ome-tiff,
// dzi, zarr; empty: by the path's name). Throws InputError on a bad name,
// and for a path named as a flat image (is_flat_image_name).
Layout layout_for(const std::string& path, const std::string& forced = "");
// OUT.png, OUT.jpg, OUT.jpeg: one flat image (region, thumbnail), never a
// pyramid.
bool is_flat_image_name(const std::string& path);
const char* layout_name(Layout l);
// Layouts whose tiles are TIFF tiles (multiples of 16, TIFF codecs).
inline bool is_tiff_layout(Layout l) {
  return l == Layout::kTiff || l == Layout::kOmeTiff;
}

struct SinkRequest {
  std::string path;
  Layout layout = Layout::kTiff;
  EncodeSettings encode;                 // tiles as the pyramid pass hands them to the sink
  std::vector<PyramidLevelSpec> levels;  // level 0's format may be a source's raw one (pass-through)
  PyramidWriterOptions options;
  int64_t layout_tile = 0;                 // --tile as given (Deep Zoom's tile size); 0: the layout's default
  int overlap = 1;                         // Deep Zoom: pixels shared by neighbouring tiles
  std::vector<std::string> channel_names;  // the source's, where it names them
};

// Memory the sink for this request holds until finish() (its tile index):
// checked against the budget before the sink is made.
size_t sink_memory_bytes(const SinkRequest& r);

std::unique_ptr<PyramidSink> open_sink(const SinkRequest& r);

}  // namespace tw
