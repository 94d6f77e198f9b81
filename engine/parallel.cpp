#include "engine/parallel.hpp"

#include <tbb/parallel_for.h>

namespace tw {

void parallel_for_each(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn) {
  tbb::parallel_for(begin, end, [&](int64_t i) { fn(i); });
}

}  // namespace tw
