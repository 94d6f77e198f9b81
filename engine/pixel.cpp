#include "engine/pixel.hpp"

namespace tw {

const char* sample_name(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return "u8";
    case SampleType::kU16:
      return "u16";
    case SampleType::kI32:
      return "i32";
    case SampleType::kF32:
      return "f32";
    case SampleType::kU32:
      return "u32";
  }
  return "?";
}

std::string PixelFormat::str() const {
  std::string s = std::string(sample_name(type)) + " x" + std::to_string(channels);
  if (channels == 1) s += " (gray)";
  if (channels == 2) s += " (gray+alpha)";
  if (channels == 3) s += " (RGB)";
  if (channels == 4) s += " (RGBA)";
  return s;
}

}  // namespace tw
