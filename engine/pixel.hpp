#pragma once
// Sample types and the interleaved pixel formats Tilewave moves around.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tw {

// kU32: label images (connected components, watershed), never scaled.
enum class SampleType : uint8_t { kU8, kU16, kI32, kF32, kU32 };

constexpr size_t sample_bytes(SampleType t) {
  return t == SampleType::kU8 ? 1 : t == SampleType::kU16 ? 2 : 4;
}
const char* sample_name(SampleType t);

// Channels are interleaved ("chunky"): RGB pixels are R,G,B,R,G,B,...
struct PixelFormat {
  SampleType type = SampleType::kU8;
  int channels = 1;

  constexpr size_t bytes_per_pixel() const { return sample_bytes(type) * channels; }
  bool operator==(const PixelFormat& o) const { return type == o.type && channels == o.channels; }
  bool operator!=(const PixelFormat& o) const { return !(*this == o); }
  std::string str() const;  // e.g. "u8 x3 (RGB)"
};

constexpr PixelFormat kGray8{SampleType::kU8, 1};
constexpr PixelFormat kRgb8{SampleType::kU8, 3};
constexpr PixelFormat kGray16{SampleType::kU16, 1};

}  // namespace tw
