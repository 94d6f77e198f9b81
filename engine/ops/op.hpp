#pragma once
// The op API (docs/ops/writing-an-op.md): an op is a small struct with a
// functor that the engine runs over any TileSource, tile by tile, on the CPU
// (oneTBB) or on a CUDA device, without the op's author touching either.
//
//   struct Invert {                                  // pixel -> pixel
//     using Category = tw::ops::Pixel;
//     using In = uint8_t;  static constexpr int kIn = 1;    // sample type, channels
//     using Out = uint8_t; static constexpr int kOut = 1;
//     TW_HD void operator()(const In* in, Out* out) const { out[0] = 255 - in[0]; }
//   };
//
//   struct Laplace {                                 // neighborhood -> pixel
//     using Category = tw::ops::Neighborhood;
//     using In = uint8_t;  static constexpr int kIn = 1;
//     using Out = int16_t... (any sample type the writer takes)
//     int radius() const { return 1; }              // halo read around each tile
//     tw::Border border() const { return {}; }       // how the halo is made up at the image edge
//     TW_HD void operator()(const tw::ops::Window<In>& w, Out* out) const {
//       out[0] = 4 * w(0, 0) - w(-1, 0) - w(1, 0) - w(0, -1) - w(0, 1); }
//   };
//
// Reductions (reduce -> scalar, reduce -> vector) are in engine/ops/reduce.hpp.
// run_op() in engine/ops/run_op.hpp makes the result a TileSource, so ops
// chain and any result goes to the pyramid writer.
#include <cstdint>
#include <type_traits>

#include "engine/border.hpp"
#include "engine/ops/hd.hpp"
#include "engine/pixel.hpp"

namespace tw::ops {

struct Pixel {};
struct Neighborhood {};
struct Separable {};  // see engine/ops/separable.hpp

// The neighbourhood of one output pixel inside a tile read with its halo.
template <class T>
struct Window {
  const T* center;  // sample 0 of the pixel itself
  int64_t stride;   // elements per row of the tile
  int channels;
  int64_t x, y;           // the pixel's global coordinates
  int64_t width, height;  // the image's size
  TW_HD T operator()(int dx, int dy, int c = 0) const { return center[dy * stride + dx * channels + c]; }
  // Whether a neighbour lies inside the image (the halo outside it is made up
  // by the op's border rule; some ops want to treat it differently).
  TW_HD bool inside(int dx, int dy) const { return x + dx >= 0 && x + dx < width && y + dy >= 0 && y + dy < height; }
};

template <class T>
constexpr SampleType sample_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return SampleType::kU8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return SampleType::kU16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return SampleType::kI32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return SampleType::kU32;
  else {
    static_assert(std::is_same_v<T, float>, "op samples are uint8_t, uint16_t, int32_t, uint32_t or float");
    return SampleType::kF32;
  }
}

template <class Op>
PixelFormat in_format() {
  return PixelFormat{sample_type_of<typename Op::In>(), Op::kIn};
}
template <class Op>
PixelFormat out_format() {
  return PixelFormat{sample_type_of<typename Op::Out>(), Op::kOut};
}

template <class Op>
int op_radius(const Op& op) {
  if constexpr (!std::is_same_v<typename Op::Category, Pixel>)
    return op.radius();
  else
    return 0;
}

template <class Op>
Border op_border(const Op& op) {
  if constexpr (!std::is_same_v<typename Op::Category, Pixel>)
    return op.border();
  else
    return {};
}

}  // namespace tw::ops
