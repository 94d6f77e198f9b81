#pragma once
// Tile compressions Tilewave reads and writes, named as users type them.
#include <cstdint>
#include <string>
#include <vector>

namespace tw {

// kPng: tiles of Deep Zoom outputs and PNG images, never inside a TIFF.
enum class Codec : uint8_t { kNone, kJpeg, kDeflate, kZstd, kLzw, kOther, kPng };

Codec parse_codec(const std::string& s);  // throws InputError
const char* codec_name(Codec c);

enum class ChromaSubsampling : uint8_t { k420, k444 };
ChromaSubsampling parse_subsampling(const std::string& s);

// How a level's compressed tiles are stored, so they can be copied into
// another TIFF unchanged (pass-through) when the formats agree.
struct RawTileFormat {
  Codec codec = Codec::kOther;
  uint16_t tiff_compression = 0;                  // the TIFF Compression tag value
  uint16_t photometric = 0;                       // the TIFF Photometric tag value
  uint16_t subsampling_h = 1, subsampling_v = 1;  // YCbCrSubsampling, JPEG only
  uint16_t predictor = 1;
  uint16_t sample_format = 1;  // TIFF SampleFormat: 1 unsigned integer, 3 IEEE float
  int bits_per_sample = 8;
  int samples_per_pixel = 1;
  int64_t tile_w = 0, tile_h = 0;
  std::vector<uint8_t> jpeg_tables;  // TIFF JPEGTables, may be empty
};

}  // namespace tw
