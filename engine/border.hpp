#pragma once
// How pixels outside a level are invented when a read (a tile plus its halo)
// reaches past the edge.
#include <cstdint>
#include <string>

namespace tw {

enum class BorderMode : uint8_t {
  kReflect101,  // mirror without repeating the edge: dcb|abcd|cba (scipy 'mirror', OpenCV REFLECT_101)
  kReflect,     // mirror repeating the edge: cba|abcd|dcb (scipy 'reflect', OpenCV REFLECT)
  kReplicate,   // aaa|abcd|ddd (scipy 'nearest', OpenCV REPLICATE)
  kConstant,    // vvv|abcd|vvv
};

struct Border {
  BorderMode mode = BorderMode::kReflect101;
  double value = 0;  // for kConstant, in sample units
};

BorderMode parse_border_mode(const std::string& s);  // throws InputError
const char* border_mode_name(BorderMode m);

#if defined(__CUDACC__)
#define TW_BORDER_HD __host__ __device__ inline
#else
#define TW_BORDER_HD inline
#endif

// Maps coordinate i onto [0, n) for the mode; -1 for kConstant outside.
// Valid for any i and any n >= 1 (reflection repeats as often as needed).
// Also compiled for the GPU (a chain's halos are made up on the device).
TW_BORDER_HD int64_t border_index(int64_t i, int64_t n, BorderMode m) {
  if (i >= 0 && i < n) return i;
  switch (m) {
    case BorderMode::kReflect101: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t k = i % period;
      if (k < 0) k += period;
      return k < n ? k : period - k;
    }
    case BorderMode::kReflect: {
      const int64_t period = 2 * n;
      int64_t k = i % period;
      if (k < 0) k += period;
      return k < n ? k : period - 1 - k;
    }
    case BorderMode::kReplicate:
      return i < 0 ? 0 : n - 1;
    case BorderMode::kConstant:
      return -1;
  }
  return -1;
}

}  // namespace tw
