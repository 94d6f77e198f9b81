#pragma once
// The engine's one way to spread independent rows over the worker threads,
// for host-side code below the jobs layer (a GPU kernel's host staging): it
// runs on the job's pool and respects --threads, without kernels seeing the
// thread library.
#include <cstdint>
#include <functional>

namespace tw {

// fn(i) for i in [begin, end), in parallel; returns when all are done.
void parallel_for_each(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn);

}  // namespace tw
