#pragma once
// The math ops on a GPU (math_cuda.cu; math_cuda_none.cpp where CUDA is not
// built). The result is a GPU chain's top (engine/ops/device_tiles.hpp): an
// input that a GPU chain makes on `device` is made there and not brought
// down, a GPU op reading the result takes it on the device, and an input
// on the host goes up once per read.
#include <memory>
#include <string>

#include "engine/tile_source.hpp"

namespace tw::ops {

enum class MathKind { kSubtract, kMin, kMax, kMask };

// A and B of one size (checked by the caller); `out` is A's format. For
// kMask, B has 1 channel or A's, of any sample type; otherwise B is A's
// format.
std::shared_ptr<const TileSource> make_math_cuda(MathKind kind, std::shared_ptr<const TileSource> a,
                                                 std::shared_ptr<const TileSource> b, int device,
                                                 const std::string& name);

}  // namespace tw::ops
