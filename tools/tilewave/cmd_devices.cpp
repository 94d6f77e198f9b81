#include <cstdio>
#include <iostream>

#include "engine/cuda/device.hpp"
#include "engine/memory.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

namespace tw::cli {

int cmd_devices(int argc, char** argv) {
  Args a("devices", argc, argv, 2, {{"help", "", "show this help"}});
  if (a.has("help")) {
    std::cout << "usage: tilewave devices\n\nLists the backends: the CPU and every CUDA device this build can use.\n";
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("devices takes no arguments");
  std::printf("cpu: available\n");
  const auto devs = cuda_devices();
  if (devs.empty()) std::printf("cuda: none (%s)\n", cuda_unavailable_reason().c_str());
  for (const auto& d : devs)
    std::printf("cuda:%d: %s, sm_%d%d, %d multiprocessors, %s (%s free)\n", d.index, d.name.c_str(), d.sm_major,
                d.sm_minor, d.multiprocessors, format_bytes(d.memory_bytes).c_str(),
                format_bytes(d.free_bytes).c_str());
  return 0;
}

}  // namespace tw::cli
