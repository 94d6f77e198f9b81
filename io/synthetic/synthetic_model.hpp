#pragma once
// The synthetic slide's model (io/synthetic/synthetic_source.hpp): every
// pixel a pure function of (x, y, seed, size). synthetic_model.cpp says how.
#include <cstddef>
#include <cstdint>

#include "engine/pixel.hpp"
#include "io/synthetic/synthetic_source.hpp"

namespace tw::synthetic {

constexpr int64_t kMaxSide = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxPixels = int64_t{1} << 40;
constexpr int64_t kLabelSide = 600;
constexpr int64_t kMacroLongSide = 1024;

// Fields are sampled every kGrid px; at 8 the finest tissue octave (>= 32 px)
// still has four samples per wavelength.
constexpr int64_t kGrid = 8;

// A regular lattice of samples: x_i = x0 + i * step. step 1 is a region of
// the slide; larger steps sample it for the macro image.
struct Lattice {
  int64_t x0 = 0, y0 = 0, step = 1, nx = 0, ny = 0;
};

// splitmix64's finaliser: a full-avalanche 64-bit mix.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// lowbias32 (Chris Wellons' hash prospector): cheap enough per pixel.
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// Renders lat into out (sample (i, j) at out + j*stride + i*bpp), in fmt.
void render(const SyntheticSpec& spec, const Lattice& lat, PixelFormat fmt, uint8_t* out, size_t stride);

// The scale of the tissue's features, in pixels (reported by `info`).
double tissue_scale(const SyntheticSpec& spec);

}  // namespace tw::synthetic
