#include "io/codec/lzw_encoder.hpp"

#include <algorithm>

namespace tw {
namespace {

constexpr int kClear = 256, kEoi = 257, kFirst = 258;
constexpr int kMaxCode = 4095;
constexpr size_t kHashSize = 9001;  // prime, > 2 x 4096 entries

class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
  void put(uint32_t code, int nbits) {
    acc_ = (acc_ << nbits) | code;
    bits_ += nbits;
    while (bits_ >= 8) {
      bits_ -= 8;
      out_.push_back(static_cast<uint8_t>(acc_ >> bits_));
    }
    acc_ &= (1u << bits_) - 1;
  }
  void flush() {
    if (bits_ > 0) out_.push_back(static_cast<uint8_t>(acc_ << (8 - bits_)));
    bits_ = 0, acc_ = 0;
  }

 private:
  std::vector<uint8_t>& out_;
  uint32_t acc_ = 0;
  int bits_ = 0;
};

}  // namespace

LzwEncoder::LzwEncoder() : keys_(kHashSize, -1), codes_(kHashSize, 0) {}

void LzwEncoder::reset_table() {
  std::fill(keys_.begin(), keys_.end(), -1);
}

void LzwEncoder::encode(const uint8_t* data, size_t n, std::vector<uint8_t>& out) {
  out.clear();
  out.reserve(n / 2 + 16);
  BitWriter bw(out);
  int nbits = 9;
  int next_code = kFirst;
  reset_table();
  bw.put(kClear, nbits);
  if (n == 0) {
    bw.put(kEoi, nbits);
    bw.flush();
    return;
  }
  int prefix = data[0];
  for (size_t i = 1; i < n; ++i) {
    const int c = data[i];
    const int32_t key = (prefix << 8) | c;
    size_t h = (static_cast<size_t>(key) * 2654435761u) % kHashSize;
    while (keys_[h] != -1 && keys_[h] != key) h = (h + 1 == kHashSize) ? 0 : h + 1;
    if (keys_[h] == key) {
      prefix = codes_[h];
      continue;
    }
    bw.put(static_cast<uint32_t>(prefix), nbits);
    keys_[h] = key;
    codes_[h] = static_cast<int16_t>(next_code++);
    // The decoder adds its entry one code later than we do, so it widens at
    // 511/1023/2047 while we widen when the next code would not fit.
    if (next_code == kMaxCode - 1) {
      bw.put(kClear, nbits);
      reset_table();
      next_code = kFirst;
      nbits = 9;
    } else if (next_code > (1 << nbits) - 1) {
      ++nbits;
    }
    prefix = c;
  }
  bw.put(static_cast<uint32_t>(prefix), nbits);
  // The decoder adds an entry after the final code too, so EOI follows the
  // same widening (or table reset) rule as any other code.
  if (++next_code == kMaxCode - 1) {
    bw.put(kClear, nbits);
    nbits = 9;
  } else if (next_code > (1 << nbits) - 1) {
    ++nbits;
  }
  bw.put(kEoi, nbits);
  bw.flush();
}

}  // namespace tw
