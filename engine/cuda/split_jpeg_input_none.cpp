// Builds without CUDA: the input as it is.
#include "engine/cuda/split_jpeg_input.hpp"

namespace tw {

std::shared_ptr<const TileSource> make_split_jpeg_input(std::shared_ptr<const TileSource> src, int, size_t, size_t) {
  return src;
}

int64_t split_jpeg_tiles(const TileSource&) {
  return -1;
}

int64_t split_jpeg_gpu_decoded_tiles(const TileSource&) {
  return -1;
}

}  // namespace tw
