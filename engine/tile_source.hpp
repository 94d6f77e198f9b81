#pragma once
// Anything that yields pixels of a (possibly multi-level) raster by region:
// TIFF and OpenSlide readers, the synthetic slide, scratch stores.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/border.hpp"
#include "engine/codec_kind.hpp"
#include "engine/image.hpp"
#include "engine/jpeg_coefs.hpp"

namespace tw {

struct LevelInfo {
  int64_t width = 0, height = 0;
  // The native access unit: a tile, or a strip (tile_w == width). 0 when the
  // source has none (synthetic, OpenSlide).
  int64_t tile_w = 0, tile_h = 0;
  double downsample = 1.0;  // level-0 width over this level's width
  std::string compression;  // as stored, for `tilewave info`
  TileGrid grid() const { return {width, height, tile_w, tile_h}; }
  Rect bounds() const { return {0, 0, width, height}; }
};

struct AssociatedImageInfo {
  std::string name;  // "label", "macro", "thumbnail", ...
  int64_t width = 0, height = 0;
};

struct SourceInfo {
  std::string path;
  std::string format;  // "TIFF", "BigTIFF", "OpenSlide", "synthetic"
  std::string vendor;  // OpenSlide's vendor name when known ("aperio", "generic-tiff", ...)
  PixelFormat fmt;
  std::vector<LevelInfo> levels;
  double mpp_x = 0, mpp_y = 0;  // microns per pixel at level 0; 0 = unknown
  std::vector<AssociatedImageInfo> associated;
  std::vector<std::pair<std::string, std::string>> properties;  // extra key/values for `info`
  // The scanner's metadata, carried into every output layout with a place
  // for it (io/vendor_metadata.hpp bounds it and makes it valid UTF-8):
  double objective_power = 0;      // Aperio's AppMag, openslide.objective-power; 0 = unknown
  std::string vendor_description;  // level 0's ImageDescription where it is Aperio's
  // The vendor's own key/values under OpenSlide's names ("aperio.AppMag",
  // "hamamatsu.SourceLens", ...), in the order read.
  std::vector<std::pair<std::string, std::string>> vendor_properties;
  // One name per channel where the file gives them (OME-XML's Channel
  // Name); empty otherwise. Written into outputs that have room for them.
  std::vector<std::string> channel_names;
  // Whether 3 or 4 channels are an RGB(A) colour image; false for separate
  // channels (a MinIsBlack TIFF, OME planes): those are never written as RGB
  // or as YCbCr JPEG.
  bool color = true;
};

// Facet of a source whose levels are stored as compressed tiles: they can be
// copied out as stored (level-0 pass-through) and decoded once read.
class RawTiles {
 public:
  virtual ~RawTiles() = default;
  // Null where the level's tiles cannot be copied out as stored.
  virtual const RawTileFormat* raw_format(int level) const = 0;
  virtual std::vector<uint8_t> read_raw_tile(int level, int64_t tx, int64_t ty) const = 0;
  // Decodes bytes from read_raw_tile into dst (dst.rect = the clipped tile
  // rect), so a passed-through tile is decoded once and read once.
  virtual void decode_raw_tile(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                               const ImageView& dst) const = 0;
  // Entropy-decodes bytes from read_raw_tile of a JPEG level into their DCT
  // coefficients and quantisation tables (engine/jpeg_coefs.hpp), for the
  // GPU to finish. False where the tile is not JPEG laid out as `layout`
  // says (decode it with decode_raw_tile instead); throws on corrupt data.
  virtual bool decode_raw_tile_coefficients(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                            const JpegCoefLayout& layout, int16_t* coefs, uint16_t* quant) const = 0;
  // Reads only the headers of such a tile, for the GPU to entropy-decode it
  // (JpegDecoder::scan_head). False (the default) where it cannot: decode
  // the tile with decode_raw_tile_coefficients then; throws on corrupt data.
  virtual bool raw_tile_scan_head(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                  const JpegCoefLayout& layout, JpegScanHead& head) const {
    (void)level, (void)tx, (void)ty, (void)raw, (void)layout, (void)head;
    return false;
  }
};

class DeviceTiles;  // engine/ops/device_tiles.hpp
struct BitPlane;    // engine/bit_plane.hpp

// Thread-safe: read() may be called from many threads at once.
class TileSource {
 public:
  virtual ~TileSource() = default;

  const SourceInfo& info() const { return info_; }
  // Sets level 0's microns per pixel: for a result just made, before
  // anything reads it (jobs/op_runner.hpp: carry_resolution).
  void set_resolution(double mpp_x, double mpp_y) { info_.mpp_x = mpp_x, info_.mpp_y = mpp_y; }
  int level_count() const { return static_cast<int>(info_.levels.size()); }
  const LevelInfo& level(int l) const;

  // Fills dst, whose rect may reach outside the level: the outside is made up
  // by the border rule, so a tile read with a halo needs no edge code.
  void read(int level, const ImageView& dst, Border border = {}) const;
  Image read(int level, const Rect& r, Border border = {}) const;

  virtual Image read_associated(const std::string& name) const;

  // A cache of decoded tiles for readers whose reads overlap (ops reading
  // tiles with halos decode each stored tile once instead of up to nine
  // times). A no-op for sources with nothing to decode.
  virtual void set_read_cache(size_t bytes) const { (void)bytes; }
  // What set_read_cache needs to keep every stored tile of level 0 decoded
  // (for an input read in several passes); 0 where there is no cache.
  virtual size_t read_cache_for_level0() const { return 0; }

  // Memory a reader needs to decode one native unit of the level (a tile or
  // strip, or a row of a strip too large to decode whole): a size set by the
  // file's header, so it is checked against the budget before any pixel is
  // read. 0 for sources with nothing to decode.
  virtual size_t decode_unit_bytes(int level) const {
    (void)level;
    return 0;
  }
  // Caps the memory the reader's decoding may hold at once (all threads
  // together): decodes wait for room. Readers of files start at 1 GiB.
  virtual void set_decode_budget(size_t bytes) const { (void)bytes; }

  // The facet of sources that store compressed tiles (a TIFF), for the
  // pyramid's pass-through and split JPEG decoding; null for the others.
  virtual const RawTiles* raw_tiles() const { return nullptr; }
  // The facet of sources computed on a GPU whose results can stay there for
  // the next op of a chain (engine/ops/device_tiles.hpp); null for the others.
  virtual const DeviceTiles* device_tiles() const { return nullptr; }
  // The facet of 8-bit binary images held as bits (engine/bit_plane.hpp);
  // null for the others.
  virtual const BitPlane* bit_plane() const { return nullptr; }

 protected:
  // dst.rect lies inside the level's bounds and is non-empty.
  virtual void read_inside(int level, const ImageView& dst) const = 0;
  SourceInfo info_;
};

using SourcePtr = std::shared_ptr<const TileSource>;

// Sets src's decode budget from a run's --memory and thread count and
// returns the bytes it sets apart (to be taken off the rest of the run's
// budget): enough for every thread to decode a unit at once, at most a
// quarter of `memory`. Throws InputError, naming the file, its unit and the
// budget, when a single unit is larger than that quarter.
size_t reserve_decode_memory(const TileSource& src, size_t memory, int threads);

// Fills the pixels of dst outside `valid` (which dst contains, non-empty)
// from pixels inside it, by the border rule of an image of size w x h.
// Callers guarantee every mapped coordinate lies in `valid`.
void fill_border(const ImageView& dst, const Rect& valid, int64_t w, int64_t h, Border border);
// n pixels of value v at p (integers rounded and saturated): the constant
// border's pixels.
void fill_constant(uint8_t* p, int64_t n, PixelFormat fmt, double value);

}  // namespace tw
