#include "io/codec/uniform_tiles.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tw {

bool uniform_tile(const ImageView& tile, std::vector<uint8_t>& pixel) {
  const size_t bpp = tile.fmt.bytes_per_pixel();
  if (tile.rect.w <= 0 || tile.rect.h <= 0 || bpp == 0) return false;
  const uint8_t* first = tile.row_bytes(tile.rect.y);
  // The first row pixel by pixel (a textured tile fails within a few
  // pixels), then every other row against it.
  const int64_t w = tile.rect.w;
  for (int64_t x = 1; x < w; ++x)
    if (std::memcmp(first + static_cast<size_t>(x) * bpp, first, bpp) != 0) return false;
  const size_t row = tile.row_length_bytes();
  for (int64_t y = tile.rect.y + 1; y < tile.rect.y1(); ++y)
    if (std::memcmp(tile.row_bytes(y), first, row) != 0) return false;
  pixel.assign(first, first + bpp);
  return true;
}

const std::vector<uint8_t>* UniformTileBytes::find(int64_t w, int64_t h, const std::vector<uint8_t>& pixel) const {
  for (const Entry& e : kept_)
    if (e.w == w && e.h == h && e.pixel == pixel) return &e.bytes;
  return nullptr;
}

void UniformTileBytes::keep(int64_t w, int64_t h, const std::vector<uint8_t>& pixel,
                            const std::vector<uint8_t>& bytes) {
  if (kept_.size() == kMaxKept) kept_.erase(kept_.begin());
  kept_.push_back(Entry{w, h, pixel, bytes});
}

namespace {

class UniformTileCache final : public TileEncoder {
 public:
  explicit UniformTileCache(std::unique_ptr<TileEncoder> inner) : inner_(std::move(inner)) {}

  void encode(const ImageView& tile, std::vector<uint8_t>& out) override {
    if (!uniform_tile(tile, pixel_)) {
      inner_->encode(tile, out);
      return;
    }
    if (const std::vector<uint8_t>* kept = kept_.find(tile.rect.w, tile.rect.h, pixel_)) {
      out = *kept;
      return;
    }
    inner_->encode(tile, out);
    kept_.keep(tile.rect.w, tile.rect.h, pixel_, out);
  }

  void encode_coefficients(const int16_t* coefs, std::vector<uint8_t>& out) override {
    inner_->encode_coefficients(coefs, out);
  }

 private:
  std::unique_ptr<TileEncoder> inner_;
  UniformTileBytes kept_;
  std::vector<uint8_t> pixel_;
};

}  // namespace

std::unique_ptr<TileEncoder> with_uniform_tile_cache(std::unique_ptr<TileEncoder> inner) {
  return std::make_unique<UniformTileCache>(std::move(inner));
}

}  // namespace tw
