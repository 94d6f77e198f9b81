#pragma once
// Connected-component labelling of one tile (the math of `tilewave label`;
// jobs/label/ joins the tiles of a slide). Pixels are "set" where the input
// is non-zero (f32: NaN counts as non-zero and -0 as zero, as `math mask`).
// A tile's labels are 1..n in raster order of each component's first pixel
// within the tile (scipy.ndimage.label's numbering), 0 for background; both
// backends give exactly these labels.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/pixel.hpp"

namespace tw::label {

// fg[i] = 1 where the n samples of a one-channel row are non-zero, else 0.
void foreground_row(const uint8_t* src, SampleType t, int64_t n, uint8_t* fg);

// Working memory of label_tile, reused from tile to tile.
struct TileScratch {
  std::vector<uint32_t> parent;  // provisional labels' union-find
  std::vector<uint32_t> final;   // provisional root -> tile label
};

// Labels the set pixels of a w x h tile (fg: 0/1 bytes, fg_stride bytes a
// row) with connectivity 4 or 8 into out (out_stride u32 a row): 1..n in
// raster order of first pixels. first[k - 1] = y * w + x of label k's first
// pixel (resized to n). Returns n. Two raster passes over a union-find of
// provisional labels whose roots are their smallest label (Wu et al.'s
// two-pass scheme); the second pass numbers roots as it first meets them,
// which is raster order of first pixels by construction.
uint32_t label_tile(const uint8_t* fg, size_t fg_stride, int64_t w, int64_t h, int connectivity, uint32_t* out,
                    size_t out_stride, std::vector<uint32_t>& first, TileScratch& scratch);

}  // namespace tw::label
