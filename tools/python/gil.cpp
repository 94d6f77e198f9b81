#include "tools/python/gil.hpp"

#include <chrono>
#include <thread>

namespace tw::python {

void park_until_exit() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace tw::python
