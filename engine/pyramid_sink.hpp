#pragma once
// Where a pyramid's finished tiles go: a pyramidal TIFF, and later OME-TIFF,
// DeepZoom, OME-Zarr (io/open_sink.hpp picks one by the output's name). The
// pyramid job feeds any of them the same way.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/image.hpp"
#include "engine/jpeg_coefs.hpp"

namespace tw {

// Facet of a sink that writes JPEG levels and can take them as DCT
// coefficients (the split encode, engine/jpeg_coefs.hpp): the GPU computes
// the transform, the sink only entropy-codes.
class JpegCoefSink {
 public:
  virtual ~JpegCoefSink() = default;
  // For a level written as JPEG of square tiles: its encoder's coefficient
  // layout and quantisation tables (else none).
  virtual std::optional<JpegCoefSpec> jpeg_coef_spec(int level) const = 0;
  // Many threads at once: entropy-codes coefficients computed from a tile's
  // pixels into the bytes encode() would make from those pixels.
  virtual void encode_coefficients(int level, const int16_t* coefs, std::vector<uint8_t>& out) = 0;
};

class PyramidSink {
 public:
  virtual ~PyramidSink() = default;
  // Called from many threads at once: compress one tile of a level. The
  // tile is exactly tile x tile pixels (edge tiles padded by replication).
  virtual void encode(int level, const ImageView& tile, std::vector<uint8_t>& out) = 0;
  // Called from one thread at a time, tiles in any order.
  virtual void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) = 0;
  // Rough compressed size of a tile relative to its raw size, for planning memory.
  virtual double compression_ratio_estimate() const { return 1.0; }
  // A label, macro or thumbnail, kept where the format has room for it
  // (from another thread while tiles stream in). Default: not kept.
  virtual void add_associated(const std::string& name, const Image& img) {
    (void)name;
    (void)img;
  }
  // After the last tile: completes the output (directories, descriptors)
  // and puts it at its final path.
  virtual void finish() {}
  virtual uint64_t bytes_written() const { return 0; }
  // The split JPEG encode, where the sink offers it.
  virtual JpegCoefSink* jpeg_coefs() { return nullptr; }
};

}  // namespace tw
