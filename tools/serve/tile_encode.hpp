#pragma once
// Stand-alone JPEG and PNG files of one tile, as a browser fetches them (the
// TIFF writer's JPEG tiles are abbreviated streams whose tables live in the
// TIFF header, so they cannot be served as they are).
#include <cstdint>
#include <string>

#include "engine/image.hpp"

namespace tw::serve {

enum class TileFormat { kJpeg, kPng };

// "jpeg"/"jpg" or "png"; throws InputError otherwise.
TileFormat parse_tile_format(const std::string& s);
const char* tile_format_extension(TileFormat f);  // "jpeg", "png"
const char* tile_format_mime(TileFormat f);

// JPEG: 8-bit gray or RGB, 4:2:0 chroma like the pyramid's tiles. PNG: 8-bit
// with 1 to 4 channels (gray, gray+alpha, RGB, RGBA), losslessly.
std::string encode_jpeg(const ImageView& img, int quality);
std::string encode_png(const ImageView& img);

}  // namespace tw::serve
