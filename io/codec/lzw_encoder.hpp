#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tw {

// TIFF-flavoured LZW (TIFF 6.0 §13): MSB-first codes of 9..12 bits, Clear=256,
// EOI=257, code width growing one code early as libtiff's decoder expects.
class LzwEncoder {
 public:
  LzwEncoder();
  void encode(const uint8_t* data, size_t n, std::vector<uint8_t>& out);

 private:
  void reset_table();
  std::vector<int32_t> keys_;  // (prefix << 8 | byte), -1 = empty slot
  std::vector<int16_t> codes_;
};

}  // namespace tw
