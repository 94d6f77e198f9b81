#pragma once
// PNG images with libpng: Deep Zoom's lossless tiles and `tilewave region` /
// `thumbnail` outputs (encode), and tests' reference reads (decode). PNG
// holds 8- and 16-bit gray, gray+alpha, RGB and RGBA; nothing else.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/image.hpp"

namespace tw {

// True when PNG can hold pixels of `fmt` (u8/u16, 1 to 4 channels).
bool png_can_store(PixelFormat fmt);

// Compresses `img` (any size, any stride) into a complete PNG file in `out`
// (overwritten). zlib_level: 0..9, -1 for zlib's default (6). Throws
// InputError for a pixel format PNG cannot hold.
void encode_png(const ImageView& img, int zlib_level, std::vector<uint8_t>& out);

// Decodes a PNG file held in memory, as stored (no conversion but the byte
// order of 16-bit samples). `what` names it in errors (InputError).
Image decode_png(const uint8_t* data, size_t n, const std::string& what);

}  // namespace tw
