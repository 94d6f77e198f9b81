#include "io/open_sink.hpp"

#include "engine/error.hpp"
#include "engine/text.hpp"
#include "io/dzi/dzi_sink.hpp"
#include "io/tiff/ome_tiff_sink.hpp"
#include "io/tiff/tiff_pyramid_sink.hpp"
#include "io/zarr/zarr_sink.hpp"

namespace tw {

bool is_flat_image_name(const std::string& path) {
  return ends_with_nocase(path, ".png") || ends_with_nocase(path, ".jpg") || ends_with_nocase(path, ".jpeg");
}

Layout layout_for(const std::string& path, const std::string& forced) {
  // Such a name is a flat image wherever Tilewave writes one: a pyramid
  // under it would be a BigTIFF that image viewers cannot open, whatever
  // --format says.
  if (is_flat_image_name(path))
    throw InputError("output " + path +
                     ": a pyramid cannot be a PNG or JPEG file; name it .tif, .ome.tif, .dzi or .zarr "
                     "(`tilewave region` or `tilewave thumbnail` write a flat PNG/JPEG)");
  if (!forced.empty()) {
    if (forced == "tiff" || forced == "tif") return Layout::kTiff;
    if (forced == "ome-tiff" || forced == "ome") return Layout::kOmeTiff;
    if (forced == "dzi" || forced == "deepzoom") return Layout::kDzi;
    if (forced == "zarr" || forced == "ome-zarr") return Layout::kZarr;
    throw InputError("unknown output format '" + forced + "' (expected tiff, ome-tiff, dzi or zarr)");
  }
  if (ends_with_nocase(path, ".ome.tif") || ends_with_nocase(path, ".ome.tiff") || ends_with_nocase(path, ".ome.btf"))
    return Layout::kOmeTiff;
  if (ends_with_nocase(path, ".dzi")) return Layout::kDzi;
  if (ends_with_nocase(path, ".zip")) return Layout::kDzi;  // a Deep Zoom pyramid in one zip, as vips dzsave
  if (ends_with_nocase(path, ".zarr") || ends_with_nocase(path, ".zarr/")) return Layout::kZarr;
  return Layout::kTiff;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kTiff:
      return "tiff";
    case Layout::kOmeTiff:
      return "ome-tiff";
    case Layout::kDzi:
      return "dzi";
    case Layout::kZarr:
      return "zarr";
  }
  return "?";
}

size_t sink_memory_bytes(const SinkRequest& r) {
  if (r.layout == Layout::kDzi) return dzi_sink_memory_bytes(r);
  if (r.layout == Layout::kZarr) return 0;  // no tile index: each chunk is a file of its own
  if (r.layout == Layout::kOmeTiff) return OmeTiffSink::index_bytes(r.encode, r.levels);
  return PyramidTiffWriter::index_bytes(r.levels);
}

std::unique_ptr<PyramidSink> open_sink(const SinkRequest& r) {
  switch (r.layout) {
    case Layout::kTiff:
      return std::make_unique<TiffPyramidSink>(r.path, r.encode, r.levels, r.options);
    case Layout::kOmeTiff:
      return std::make_unique<OmeTiffSink>(r.path, r.encode, r.levels, r.options, r.channel_names);
    case Layout::kDzi:
      return make_dzi_sink(r);
    case Layout::kZarr:
      return std::make_unique<ZarrSink>(r);
  }
  throw InputError(std::string(layout_name(r.layout)) + " output is not available in this build yet");
}

}  // namespace tw
