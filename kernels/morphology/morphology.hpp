#pragma once
// Grayscale erosion and dilation by a flat structuring element: the minimum
// (erosion) or maximum (dilation) over a disk (dx^2 + dy^2 <= R^2, as
// scikit-image's disk(R)) or a (2R+1)^2 square around each pixel.
//
// Border: pixels outside the image take no part. The engine makes the halo
// up by replicating the edge (BorderMode::kReplicate), which gives exactly
// that: a replicated pixel moves an outside offset (dx, dy) towards the
// centre in each coordinate, so it lands on a pixel inside both the image
// and the (convex, symmetric) element, whose value already takes part.
//
// The functor below is the definition (and the GPU's kernel): O(R^2) per
// pixel. The CPU runs cpu_block (kernels/morphology/morphology_cpu.cpp):
// the square as separable passes (van Herk / Gil-Werman vertically, O(1)
// per pixel; doubling horizontally, O(log R), in rows that vectorise), the
// disk by its chords in a Horner scheme (O(R) per pixel); both exact.
#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/image.hpp"
#include "engine/ops/op.hpp"

namespace tw::ops {

constexpr int kMaxMorphRadius = 64;

enum class MorphShape : uint8_t { kDisk, kSquare };

// T: uint8_t or uint16_t; C: channels (each filtered alike); kMax: dilation.
template <class T, int C, bool kMax>
struct Morph {
  using Category = ops::Neighborhood;
  using In = T;
  using Out = T;
  static constexpr int kIn = C, kOut = C;
  int r = 1;
  MorphShape shape = MorphShape::kDisk;
  // Half-width of the element's row dy, at chord[dy + r]: the element is
  // the union of the horizontal chords [-chord, chord] x {dy}.
  uint8_t chord[2 * kMaxMorphRadius + 1] = {};

  int radius() const { return r; }
  Border border() const { return {BorderMode::kReplicate, 0}; }
  TW_HD static T pick(T a, T b) { return kMax ? (a < b ? b : a) : (b < a ? b : a); }

  TW_HD void operator()(const Window<T>& w, T* out) const {
    for (int c = 0; c < C; ++c) {
      T v = w(0, 0, c);
      for (int dy = -r; dy <= r; ++dy) {
        const int hw = chord[dy + r];
        for (int dx = -hw; dx <= hw; ++dx) v = pick(v, w(dx, dy, c));
      }
      out[c] = v;
    }
  }

  // The CPU's kernel (engine/ops/op_source.hpp): same pixels as operator().
  void cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const;
};

// The element's chords: disk(R) of scikit-image, floor(sqrt(R^2 - dy^2)), or
// the square's R. Throws InputError unless 1 <= r <= kMaxMorphRadius.
template <class T, int C, bool kMax>
Morph<T, C, kMax> make_morph(int r, MorphShape shape);

MorphShape parse_morph_shape(const std::string& s);  // "disk" | "square"

}  // namespace tw::ops
