#pragma once
// The forward half of a JPEG tile encode (io/codec/jpeg_transform/jpeg_fdct_math.hpp)
// on the CPU: the reference the GPU kernel is checked against, and the
// proof (tests) that entropy-coding its coefficients gives libjpeg-turbo's
// own bytes.
#include <cstdint>

#include "engine/image.hpp"
#include "engine/jpeg_coefs.hpp"

namespace tw {

// tile: layout.tile square, 1 (gray) or 3 (RGB) channels of 8-bit samples.
// quant: layout.quant_per_tile() values (JpegEncoder::quant_tables()).
// Writes layout.coefs_per_tile() coefficients.
void jpeg_forward_tile(const ImageView& tile, const JpegCoefLayout& layout, const uint16_t* quant, int16_t* coefs);

}  // namespace tw
