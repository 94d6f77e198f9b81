#include "tools/python/gil.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tw::python {
namespace {

// Both sequentially consistent on purpose: a thread stores to `taking` then
// reads `closed`, the hook stores to `closed` then reads `taking`, so at
// least one of them sees the other (the thread parks or the hook waits).
std::atomic<bool> closed{false};
std::atomic<int> taking{0};
std::atomic<std::thread::id> closer{};

// After fork() the threads counted in are the parent's, not the child's.
void reset_gate_in_child() {
  taking.store(0);
}
[[maybe_unused]] const int g_at_fork = pthread_atfork(nullptr, nullptr, &reset_gate_in_child);

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

}  // namespace

void park_until_exit() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void enter_gil_gate() {
  taking.fetch_add(1);
  // The thread that shuts Python down runs on (a __del__ calling tilewave
  // while modules are torn down); CPython only ends the others.
  const bool shutting = closed.load() || finalizing();
  if (shutting && std::this_thread::get_id() != closer.load()) {
    taking.fetch_sub(1);
    park_until_exit();
  }
}

void leave_gil_gate() {
  taking.fetch_sub(1);
}

void close_gil_gate_at_exit() {
  closer.store(std::this_thread::get_id());
  closed.store(true);
  if (taking.load() == 0) return;
  // Threads past the gate wait for the GIL this thread holds: let them have
  // it before finalizing starts. Bounded, so that exit never hangs here.
  PyThreadState* state = PyEval_SaveThread();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (taking.load() != 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  PyEval_RestoreThread(state);
}

}  // namespace tw::python
