#pragma once
// TIFF files laid out byte by byte, so a test can make one whose header lies
// (tiles of 2^31 pixels, byte counts past the end, a strip 4 G pixels wide)
// in a few hundred bytes: libtiff's writer refuses to write such files.
#include <cstdint>
#include <string>
#include <vector>

namespace tw::test {

struct RawIfd {
  uint32_t width = 0, height = 0;
  bool tiled = true;
  uint32_t tile_w = 256, tile_h = 256;  // tiled
  uint32_t rows_per_strip = 0;          // strips (0: the whole height)
  uint16_t bits = 8, spp = 3, compression = 1, photometric = 2, sample_format = 1, planar = 1;
  uint32_t subfile_type = 0;
  std::string description;
  // The stored bytes of each tile or strip, written back to back. Their
  // offsets and byte counts are filled in unless given below.
  std::vector<std::string> chunks;
  std::vector<uint64_t> counts, offsets;  // non-empty: written as they are
};

// A little-endian TIFF (or BigTIFF: 64-bit offsets and byte counts) with
// the IFDs in a chain.
std::string raw_tiff(const std::vector<RawIfd>& ifds, bool bigtiff = false);
void write_raw_tiff(const std::string& path, const std::vector<RawIfd>& ifds, bool bigtiff = false);

// n bytes of zeros, deflated (a valid deflate stream of a blank chunk).
std::string deflated_zeros(size_t n);

}  // namespace tw::test
