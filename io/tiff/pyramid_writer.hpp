#pragma once
// A tiled pyramidal BigTIFF in one of two layouts:
//  * kChain (the generic layout, `.tif`): one directory per level in the main
//    IFD chain, levels after the first flagged reduced-resolution (OpenSlide's
//    generic-tiff reader lists only those);
//  * kSubIfds (OME-TIFF): one full-resolution directory per plane in the main
//    chain, each with its reduced levels as SubIFDs (tag 330), flagged
//    reduced-resolution: what Bio-Formats and QuPath read as a pyramid.
// Resolution tags scaled per level; associated images as stripped
// directories named by ImageDescription, after the pyramid (in an Aperio
// file, the thumbnail right after level 0, as OpenSlide expects).
//
// Tiles arrive already compressed, in any order and from any level, and are
// appended to the file as they come; finish() writes the directories. (Not
// through libtiff's writer: it writes one directory at a time, which meant
// spilling the lower levels and copying them back — see the .cpp.)
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/image.hpp"

namespace tw {

struct PyramidLevelSpec {
  int64_t width = 0, height = 0;
  RawTileFormat format;  // compression tags; tile_w/tile_h give the tiling
};

enum class TiffLevelLayout : uint8_t { kChain, kSubIfds };

struct PyramidWriterOptions {
  double mpp_x = 0, mpp_y = 0;  // level 0 microns per pixel; 0 = unknown
  std::string description;      // ImageDescription of the first directory
  std::string software = "Tilewave";
  TiffLevelLayout layout = TiffLevelLayout::kChain;
  // Images of the same levels and format, each with its own tiles (OME-TIFF's
  // channels, one plane each); more than one needs kSubIfds.
  int planes = 1;
  // kChain with an Aperio description: the associated images where
  // OpenSlide's Aperio reader looks for them (the thumbnail as the second
  // directory, label and macro named on their description's second line).
  bool aperio = false;
  // The source's scanner metadata for layouts with a place for it
  // (OME-XML, OME-Zarr's .zattrs); already bounded (io/vendor_metadata.hpp).
  double objective_power = 0;  // 0 = unknown
  std::vector<std::pair<std::string, std::string>> vendor_properties;
};

// An associated image as the writer will store it (directories after the
// pyramid's, in this order), for a format that lists them (OME-XML).
struct StoredAssociated {
  std::string name;
  int64_t width = 0, height = 0;
  int channels = 0;
};

class PyramidTiffWriter {
 public:
  // Validates the output folder now (InputError); writes to a temporary name.
  PyramidTiffWriter(const std::string& final_path, PixelFormat fmt, std::vector<PyramidLevelSpec> levels,
                    PyramidWriterOptions opt);
  ~PyramidTiffWriter();  // without finish(): removes everything written
  PyramidTiffWriter(const PyramidTiffWriter&) = delete;
  PyramidTiffWriter& operator=(const PyramidTiffWriter&) = delete;

  // Not thread-safe: call from one thread (the pipeline's serial stage).
  void write_tile(int level, int64_t tx, int64_t ty, const uint8_t* data, size_t n) {
    write_tile(0, level, tx, ty, data, n);
  }
  void write_tile(int plane, int level, int64_t tx, int64_t ty, const uint8_t* data, size_t n);
  // An RGB or gray 8-bit image stored after the pyramid (label, macro, ...),
  // compressed now. Safe to call from another thread while tiles are written.
  void add_associated(const std::string& name, const Image& img);
  // The associated images added so far, in the order finish() stores them.
  // Call after the last add_associated().
  std::vector<StoredAssociated> associated() const;
  // Replaces the first directory's ImageDescription (a format whose
  // description lists everything in the file writes it last).
  void set_description(std::string description);
  // Writes the directories, closes, and renames into place.
  void finish();

  uint64_t bytes_written() const;
  const std::string& temp_path() const;

  // Memory the writer holds for the whole run: each tile's offset and byte
  // count, until the directories are written (17 bytes a tile: 1 MiB for a
  // 16-gigapixel pyramid, but a lying header can ask for gigabytes), for
  // each plane.
  static size_t index_bytes(const std::vector<PyramidLevelSpec>& levels, int planes = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
