#include "engine/backend.hpp"

#include <cstdlib>

#include "engine/cuda/device.hpp"
#include "engine/error.hpp"

namespace tw {

Backend parse_backend_deferred(const std::string& s) {
  Backend b;
  b.spelled = s;
  if (s == "cpu") return b;
  if (s == "auto") {
    // Without the CUDA backend compiled in, auto is simply the CPU.
    if (!cuda_compiled()) return b;
    b.kind = Backend::Kind::kCuda;
    b.pending = b.optional = true;
    cuda_warm_up();
    return b;
  }
  if (s != "cuda" && s.rfind("cuda:", 0) != 0)
    throw InputError("unknown device '" + s + "' (expected auto, cpu, cuda, cuda:N, cuda:N,M,... or cuda:all)");
  b.kind = Backend::Kind::kCuda;
  if (s == "cuda:all") {
    b.all_devices = true;
  } else if (s.size() > 5) {
    const char* p = s.c_str() + 5;
    for (;;) {
      char* end = nullptr;
      const long n = std::strtol(p, &end, 10);
      if (end == p || (*end != 0 && *end != ',') || n < 0 || n > 1024 || *p == '-' || *p == '+' || *p == ' ')
        throw InputError("invalid device '" + s + "' (expected cuda:N, cuda:N,M,... with device numbers, or cuda:all)");
      b.devices.push_back(static_cast<int>(n));
      if (b.devices.size() > 64) throw InputError("invalid device '" + s + "': more than 64 devices");
      if (*end == 0) break;
      p = end + 1;
    }
    b.device = b.devices[0];
    if (b.devices.size() == 1) b.devices.clear();
  }
  if (!cuda_compiled())
    throw InputError("--device " + s + ": this build has no CUDA backend (nvcc was not found when it was built)");
  b.pending = true;
  cuda_warm_up();
  return b;
}

Backend resolve_backend(const Backend& in) {
  if (!in.pending) return in;
  Backend b = in;
  b.pending = false;
  const auto devs = cuda_devices();
  if (b.optional) {
    if (devs.empty()) b.kind = Backend::Kind::kCpu;
    return b;
  }
  if (devs.empty())
    throw InputError("--device " + b.spelled + ": no usable CUDA device (" + cuda_unavailable_reason() + ")");
  if (b.all_devices) {
    b.all_devices = false;
    for (int d = 0; d < static_cast<int>(devs.size()); ++d) b.devices.push_back(d);
    b.device = 0;
    if (b.devices.size() == 1) b.devices.clear();
  }
  for (int d : b.devices.empty() ? std::vector<int>{b.device} : b.devices)
    if (d >= static_cast<int>(devs.size()))
      throw InputError("--device " + b.spelled + ": there are only " + std::to_string(devs.size()) + " CUDA device(s)");
  return b;
}

Backend parse_backend(const std::string& s) {
  return resolve_backend(parse_backend_deferred(s));
}

}  // namespace tw
