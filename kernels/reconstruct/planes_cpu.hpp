#pragma once
// A whole binary image's reconstruction by dilation on the CPU, on the bit
// planes of bit_planes.hpp (a core at the origin, its ring and the bits past
// the width zero in both planes), 32 pixels a word: the CPU counterpart of
// reconstruct_binary_planes (reconstruct_cuda.hpp), so a mask whose planes
// fit the budget is solved in memory without tiles, stores or spills (a
// 1-GP mask is two planes of 128 MB, where its byte stores spilled 2.8 GB
// at --memory 1G). For erosion, pass the planes of the complements.
//
// Row by row, the pixels a neighbour row reaches seed whole runs of the
// row's allowed pixels at once (a carry through an addition fills a run), in
// raster and anti-raster passes over bands of rows on all threads, each band
// reading its neighbours' edge rows as the previous round left them, until
// a round changes nothing.
#include <cstdint>

namespace tw {

// Solves in place (`on` becomes the result). False where `max_rounds` rounds
// (a raster and an anti-raster pass each) did not converge — long vertical
// corridors, a serpentine: `on` then holds part of the answer only, and the
// caller solves it another way.
bool reconstruct_binary_planes_cpu(int connectivity, uint32_t* on, const uint32_t* allowed, int64_t w, int64_t h,
                                   int max_rounds = 24);

}  // namespace tw
