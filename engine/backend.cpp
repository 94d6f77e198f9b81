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
    throw InputError("unknown device '" + s + "' (expected auto, cpu, cuda or cuda:N)");
  b.kind = Backend::Kind::kCuda;
  if (s.size() > 5) {
    char* end = nullptr;
    const long n = std::strtol(s.c_str() + 5, &end, 10);
    if (*end != 0 || end == s.c_str() + 5 || n < 0 || n > 1024)
      throw InputError("invalid device '" + s + "' (expected cuda:N with N a device number)");
    b.device = static_cast<int>(n);
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
  if (b.device >= static_cast<int>(devs.size()))
    throw InputError("--device " + b.spelled + ": there are only " + std::to_string(devs.size()) + " CUDA device(s)");
  return b;
}

Backend parse_backend(const std::string& s) {
  return resolve_backend(parse_backend_deferred(s));
}

}  // namespace tw
