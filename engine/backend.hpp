#pragma once
// Which backend runs a job: the CPU (oneTBB) or a CUDA device.
#include <string>
#include <vector>

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
  // Several GPUs of this process (--device cuda:0,1 or cuda:all; a device may
  // be listed twice): jobs that split a slide spread it over them; the
  // others run on `device`, the first. Empty: just `device`.
  std::vector<int> devices;
  // cuda:all, until resolve_backend lists the devices.
  bool all_devices = false;
  static Backend cuda(int dev = 0) {
    Backend b;
    b.kind = Kind::kCuda;
    b.device = dev;
    return b;
  }
  bool is_cuda() const { return kind == Kind::kCuda; }
  std::string str() const {
    if (!is_cuda()) return "cpu";
    if (devices.empty()) return "cuda:" + std::to_string(device);
    std::string s = "cuda:";
    for (size_t i = 0; i < devices.size(); ++i) s += (i ? "," : "") + std::to_string(devices[i]);
    return s;
  }
};

// "cpu"; "cuda" or "cuda:N" (an InputError naming the reason when that
// device cannot be used); "cuda:N,M,..." or "cuda:all" for several;
// "auto": CUDA device 0 when one is usable, else CPU.
Backend parse_backend(const std::string& s);

// The same checks of the spelling, but a CUDA choice comes back pending
// while the devices are probed in the background (cuda_warm_up).
Backend parse_backend_deferred(const std::string& s);

// Waits for the probe and settles a pending choice: the CPU for "auto"
// without a usable device, an InputError for "cuda" without one.
Backend resolve_backend(const Backend& b);

}  // namespace tw
