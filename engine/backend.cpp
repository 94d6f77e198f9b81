#include "engine/backend.hpp"

#include <cstdlib>

#include "engine/cuda/device.hpp"
#include "engine/error.hpp"

namespace tw {

Backend parse_backend(const std::string& s) {
  Backend b;
  if (s == "cpu") return b;
  if (s == "auto") {
    if (!cuda_devices().empty()) b.kind = Backend::Kind::kCuda;
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
  const auto devs = cuda_devices();
  if (devs.empty()) throw InputError("--device " + s + ": no usable CUDA device (" + cuda_unavailable_reason() + ")");
  if (b.device >= static_cast<int>(devs.size()))
    throw InputError("--device " + s + ": there are only " + std::to_string(devs.size()) + " CUDA device(s)");
  return b;
}

}  // namespace tw
