#pragma once
// One channel of a multi-channel image, as a single-channel image of the same
// sample type (e.g. hematoxylin, channel 0 of `filter hed`'s float32 x3).
// A copy of one sample: both backends give the input's bits.
#include <cstdint>

#include "engine/ops/op.hpp"

namespace tw::ops {

template <class T, int C>
struct Channel {
  using Category = ops::Pixel;
  using In = T;
  using Out = T;
  static constexpr int kIn = C, kOut = 1;
  int index = 0;  // 0 <= index < C (checked by the registry entry)
  TW_HD void operator()(const In* in, Out* out) const { out[0] = in[index]; }
};

}  // namespace tw::ops
