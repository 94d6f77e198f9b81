#pragma once
// Compresses one Deep Zoom tile (any size: edge tiles and overlaps make
// them all sizes) into a complete image file, JPEG (with its own tables and
// a JFIF header, as browsers load it) or PNG. One encoder per thread.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/image.hpp"

namespace tw {

struct DziTileFormat {
  Codec codec = Codec::kJpeg;  // kJpeg or kPng
  int quality = 90;            // JPEG
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  int png_level = -1;  // zlib 0..9, -1: libpng's default (6)
  PixelFormat fmt;

  const char* suffix() const { return codec == Codec::kPng ? "png" : "jpeg"; }
  // InputError when the tiles cannot hold fmt (float32 or labels, JPEG of
  // 16 bits or of other than 1 or 3 channels), naming the way out.
  void validate() const;
};

class DziTileEncoder {
 public:
  explicit DziTileEncoder(const DziTileFormat& f);
  ~DziTileEncoder();
  DziTileEncoder(const DziTileEncoder&) = delete;
  DziTileEncoder& operator=(const DziTileEncoder&) = delete;
  // out is overwritten with the file's bytes.
  void encode(const ImageView& tile, std::vector<uint8_t>& out);

 private:
  struct Jpeg;
  DziTileFormat f_;
  std::unique_ptr<Jpeg> jpeg_;
};

}  // namespace tw
