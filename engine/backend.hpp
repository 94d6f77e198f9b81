#pragma once
// Which backend runs a job: the CPU (oneTBB) or a CUDA device.
#include <string>

namespace tw {

struct Backend {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int device = 0;
  // From parse_backend_deferred: CUDA is still starting on a background
  // thread, so whether `device` is usable is not known yet (resolve_backend
  // waits). `optional`: --device auto, the CPU takes over if it is not.
  bool pending = false;
  bool optional = false;
  std::string spelled;  // as the user wrote it, for messages
  static Backend cuda(int dev = 0) {
    Backend b;
    b.kind = Kind::kCuda;
    b.device = dev;
    return b;
  }
  bool is_cuda() const { return kind == Kind::kCuda; }
  std::string str() const { return is_cuda() ? "cuda:" + std::to_string(device) : "cpu"; }
};

// "cpu"; "cuda" or "cuda:N" (an InputError naming the reason when that
// device cannot be used); "auto": CUDA device 0 when one is usable, else CPU.
Backend parse_backend(const std::string& s);

// The same checks of the spelling, but a CUDA choice comes back pending
// while the devices are probed in the background (cuda_warm_up).
Backend parse_backend_deferred(const std::string& s);

// Waits for the probe and settles a pending choice: the CPU for "auto"
// without a usable device, an InputError for "cuda" without one.
Backend resolve_backend(const Backend& b);

}  // namespace tw
