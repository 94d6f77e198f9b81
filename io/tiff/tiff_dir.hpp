#pragma once
// One TIFF directory as TiffSource sees it: its tags, what its pixels decode
// to (or why they cannot be read), the memory one decode takes, and the
// limits a header must keep to (io/tiff/tiff_source.hpp).
#include <tiffio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/geometry.hpp"
#include "engine/pixel.hpp"

namespace tw {

// A decoded strip larger than this is read row by row instead (a whole image
// stored as one strip must not be decoded into memory at once).
constexpr size_t kBigStripBytes = size_t{32} << 20;

// The most channels an image may have (multiplex slides have up to ~60).
constexpr int kMaxChannels = 64;

// The most bytes n compressed bytes of a codec can decode to (each codec's
// best case: deflate 1032:1, LZW codes of at most 4096 bytes, a zstd RLE
// block, two bits per JPEG block, ...), with slack for headers. A chunk whose
// declared pixels need more is damaged or lying: refused before a buffer of
// its declared size is made.
uint64_t max_decoded_bytes(uint16_t compression, uint64_t n);

std::string compression_name(uint16_t c);

struct Dir {
  tdir_t index = 0;
  uint64_t subifd = 0;  // nonzero: the directory lives at this SubIFD offset
  int64_t width = 0, height = 0;
  bool tiled = false;
  int64_t chunk_w = 0, chunk_h = 0;  // tile, or strip (width x rows per strip)
  uint16_t compression = 1, photometric = 1, planar = 1, bits = 8, spp = 1, sample_format = 1;
  uint16_t predictor = 1, sub_h = 1, sub_v = 1, fillorder = 1;
  uint32_t subfile_type = 0;
  std::vector<uint64_t> offsets, counts;
  std::vector<uint8_t> jpeg_tables;
  std::vector<uint16_t> cmap[3];
  std::string description;
  float xres = 0, yres = 0;
  uint16_t res_unit = 0;
  std::string unsupported;  // why the pixels cannot be read; empty = readable
  PixelFormat out_fmt;
  bool own_jpeg = false;  // decode JPEG ourselves from raw bytes
  RawTileFormat raw;
  bool raw_ok = false;

  size_t unit_bytes = 0;  // memory one decode takes (decode_unit_bytes)

  int64_t across() const { return ceil_div(width, chunk_w); }
  int64_t down() const { return ceil_div(height, chunk_h); }
  int64_t per_plane() const { return across() * down(); }
  int planes() const { return planar == PLANARCONFIG_SEPARATE ? spp : 1; }
  Rect chunk_rect(int64_t cx, int64_t cy) const {
    return Rect(cx * chunk_w, cy * chunk_h, chunk_w, chunk_h).intersect({0, 0, width, height});
  }
  size_t plane_bytes_per_pixel() const { return (planar == PLANARCONFIG_SEPARATE ? 1 : spp) * (bits / 8); }
  // Bytes of one plane of a chunk as decoded (tiles are stored whole).
  uint64_t chunk_plane_bytes() const {
    return static_cast<uint64_t>(chunk_w) * static_cast<uint64_t>(chunk_h) * plane_bytes_per_pixel();
  }
  bool row_by_row() const { return !tiled && chunk_plane_bytes() > kBigStripBytes; }
};

// Reads the current directory's tags; the warnings libtiff gave since the
// last take_tiff_warnings() (on reading this directory and its arrays) are
// this directory's.
Dir read_dir(TIFF* t, tdir_t index, uint64_t subifd);

// "label", "macro", "thumbnail" from the description; Aperio's second
// directory is its thumbnail; anything else "image-N".
std::string associated_name(const Dir& d, bool aperio, bool first_assoc);

double mpp_from(const Dir& d, float res);    // microns per pixel from a resolution tag
double aperio_mpp(const std::string& desc);  // "MPP = 0.25" in an Aperio description

}  // namespace tw
