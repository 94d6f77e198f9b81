#pragma once
// TileSource over libtiff: tiled or stripped TIFF and BigTIFF, every level of
// a pyramid (main IFD chain, or OME SubIFDs), 8/16-bit gray, RGB(A),
// palette; JPEG (incl. YCbCr-subsampled), LZW, deflate, zstd, none, and any
// other codec libtiff was built with.
#include <memory>
#include <string>

#include "engine/tile_source.hpp"

namespace tw {

// The file is a readable TIFF but its pixels are of a kind this reader does
// not decode (e.g. JPEG 2000 tiles, floating-point samples).
class UnsupportedFormat : public InputError {
 public:
  using InputError::InputError;
};

class TiffSource : public TileSource, public RawTiles {
 public:
  // Throws InputError for a missing, non-TIFF, truncated or unsupported file.
  explicit TiffSource(const std::string& path);
  ~TiffSource() override;

  Image read_associated(const std::string& name) const override;
  const RawTiles* raw_tiles() const override { return this; }
  const RawTileFormat* raw_format(int level) const override;
  std::vector<uint8_t> read_raw_tile(int level, int64_t tx, int64_t ty) const override;
  void decode_raw_tile(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                       const ImageView& dst) const override;
  bool decode_raw_tile_coefficients(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                    const JpegCoefLayout& layout, int16_t* coefs, uint16_t* quant) const override;
  bool raw_tile_scan_head(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                          const JpegCoefLayout& layout, JpegScanHead& head) const override;

  // Keep decoded tiles/strips for re-reads (halos, strips that straddle
  // bands), within this many bytes. 0 (the default) keeps none.
  void set_cache_bytes(size_t n);
  void set_read_cache(size_t bytes) const override;
  size_t read_cache_for_level0() const override;
  size_t decode_unit_bytes(int level) const override;
  void set_decode_budget(size_t bytes) const override;

  // True when the bytes at path start like a TIFF or BigTIFF.
  static bool looks_like_tiff(const std::string& path);

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  void fill_info(const std::string& format, const std::string& vendor, bool aperio);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
