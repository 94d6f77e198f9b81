#pragma once
// Which backend runs a job: the CPU (oneTBB) or a CUDA device.
#include <string>

namespace tw {

struct Backend {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int device = 0;
  bool is_cuda() const { return kind == Kind::kCuda; }
  std::string str() const { return is_cuda() ? "cuda:" + std::to_string(device) : "cpu"; }
};

// "cpu"; "cuda" or "cuda:N" (an InputError naming the reason when that
// device cannot be used); "auto": CUDA device 0 when one is usable, else CPU.
Backend parse_backend(const std::string& s);

}  // namespace tw
