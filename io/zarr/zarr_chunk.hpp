#pragma once
// One Zarr chunk from one of the pyramid pass's tiles: the pass hands tiles
// interleaved (y, x, c), a Zarr array of axes (c, y, x) stores each chunk
// C-first, so the tile is transposed into planes, the part outside the
// level zeroed (the array's fill_value), optionally delta-filtered and
// compressed. Runs on many threads: one encoder per thread.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/image.hpp"

namespace tw {

// How chunks are stored; each maps to a numcodecs codec that python3-zarr
// 2.13 / numcodecs 0.11 decode: kDeflate "zlib", kZstd "zstd", kNone null.
struct ZarrCompression {
  Codec codec = Codec::kDeflate;
  int level = -1;      // deflate 1..12 (libdeflate), zstd 1..22; -1: 6 and 3
  bool delta = false;  // numcodecs "delta" filter before the compressor (integer samples only)

  // InputError for what a Zarr store here cannot hold (JPEG, LZW, PNG, a level out of range).
  void validate(PixelFormat fmt) const;
  int effective_level() const;
};

class ZarrChunkEncoder {
 public:
  ZarrChunkEncoder(PixelFormat fmt, int64_t chunk, const ZarrCompression& c);
  ~ZarrChunkEncoder();
  ZarrChunkEncoder(const ZarrChunkEncoder&) = delete;
  ZarrChunkEncoder& operator=(const ZarrChunkEncoder&) = delete;

  // tile: chunk x chunk pixels at its place in a level of level_w x
  // level_h (global coordinates). out is overwritten.
  void encode(const ImageView& tile, int64_t level_w, int64_t level_h, std::vector<uint8_t>& out);

 private:
  void compress(std::vector<uint8_t>& out);  // the planes into out
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The pieces of encode(), for tests: the C-first planes of a tile (zero
// outside the level), and numcodecs' Delta filter in place.
void tile_to_planes(const ImageView& tile, int64_t level_w, int64_t level_h, uint8_t* planes);
void delta_encode(uint8_t* data, size_t bytes, SampleType type);

}  // namespace tw
