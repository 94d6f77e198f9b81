#pragma once
// f(T{}) for a sample type: the one switch from SampleType to the C++ type,
// for code that handles every type with one template.
#include <cstdint>

#include "engine/pixel.hpp"

namespace tw {

template <class F>
decltype(auto) with_sample_type(SampleType t, F&& f) {
  switch (t) {
    case SampleType::kU8:
      return f(uint8_t{});
    case SampleType::kU16:
      return f(uint16_t{});
    case SampleType::kI32:
      return f(int32_t{});
    case SampleType::kU32:
      return f(uint32_t{});
    case SampleType::kF32:
      break;
  }
  return f(float{});
}

}  // namespace tw
