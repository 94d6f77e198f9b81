#pragma once
// Burt–Adelson REDUCE (seed 004, eq. 1): convolve each channel with the
// separable 5-tap kernel [1 4 6 4 1]/16 in both directions, mirror border
// without repeating the edge (reflect101), keep the even coordinates.
// Integer pixels use exact integer arithmetic: (sum w*p + 128) >> 8, w the
// outer product of [1 4 6 4 1]; output sizes are ceil(w/2) x ceil(h/2).
// u32 samples are labels: they downsample by nearest (the input pixel at
// (2X, 2Y)), the same output sizes.
#include <cstdint>
#include <vector>

#include "engine/image.hpp"

namespace tw {

constexpr int64_t reduced_size(int64_t n) {
  return (n + 1) / 2;
}

// Level sizes of a pyramid: level 0 = (w, h); halve (rounding up) while either
// side is larger than min_size.
std::vector<std::pair<int64_t, int64_t>> pyramid_level_sizes(int64_t w, int64_t h, int64_t min_size);

// The input rows one output row needs: input rows reflect101(2Y-2 .. 2Y+2).
void reduce_source_rows(int64_t out_y, int64_t in_height, int64_t rows[5]);

// Computes output columns [out_x0, out_x0 + out_w) of one output row.
// rows[i] points at input column in_x0 of input row reflect101(2Y-2+i);
// the input level is in_width wide and columns [in_x0, in_x0 + in_w) are
// held. Every input column the output needs (after reflection) must be held.
// `scratch` is reused between calls to avoid allocation.
void reduce_row(PixelFormat fmt, const uint8_t* const rows[5], int64_t in_x0, int64_t in_w, int64_t in_width,
                int64_t out_x0, int64_t out_w, uint8_t* out, std::vector<uint32_t>& scratch);

// The whole-image reference: REDUCE of all of src (rect origin 0,0).
Image reduce_image(const Image& src);

}  // namespace tw
