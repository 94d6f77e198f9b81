#pragma once
// The built-in sample slide: tissue-like content generated on the fly, of any
// size, without storing anything. White background; tissue islands with
// eosin-pink stained, fibrous texture; hematoxylin-purple nuclei-like blobs
// with sharp (anti-aliased) edges. Every pixel is a pure function of (x, y,
// seed): any region reads the same whatever the tiling, so it serves the
// demo and tests of any size (including images far larger than memory).
#include <cstdint>
#include <string>

#include "engine/tile_source.hpp"

namespace tw {

struct SyntheticSpec {
  int64_t width = 16384, height = 12288;
  uint64_t seed = 1;
  int channels = 3;   // 3: RGB; 1: gray (luma of the RGB)
  int bits = 8;       // 8 or 16 (16: the 8-bit value * 257 plus fine detail)
  double mpp = 0.25;  // microns per pixel reported (a 40x scan)
};

// Parses the part after "synthetic:" — "WxH[,seed=N][,gray][,16bit][,mpp=F]"
// (empty = defaults). Throws InputError on malformed or absurd values.
SyntheticSpec parse_synthetic_spec(const std::string& spec);

class SyntheticSource : public TileSource {
 public:
  explicit SyntheticSource(const SyntheticSpec& spec);
  // "label" (a slide label with a barcode-like pattern) and "macro" (a
  // downscaled overview of the whole slide).
  Image read_associated(const std::string& name) const override;

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  SyntheticSpec spec_;
};

}  // namespace tw
