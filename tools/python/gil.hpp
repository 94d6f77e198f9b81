#pragma once
// The GIL around the engine's work, safe while Python shuts down. A thread
// that takes the GIL back after the interpreter began finalizing (a daemon
// thread still in a tilewave call when the main thread ends) is ended by
// CPython with pthread_exit, whose unwinding through noexcept destructors
// calls std::terminate: the process aborted instead of exiting 0. Such a
// thread is parked instead, for ever; the process's exit ends it.
//
// Checking "is Python finalizing?" before taking the GIL is not enough: a
// thread that checked and then waited for the GIL while the main thread
// began finalizing was still ended inside the wait. So every take of the
// GIL passes a gate: an atexit hook (which Python runs before it marks
// itself finalizing) closes the gate and lets every thread already past it
// take the GIL first; threads that come later park.
// Use these for every release and re-acquire of the GIL in the extension.
#include <pybind11/pybind11.h>

namespace tw::python {

// Called before taking the GIL: parks the calling thread for ever if the
// interpreter is shutting down (unless it is the thread shutting it down),
// else counts it in until leave_gil_gate.
void enter_gil_gate();
void leave_gil_gate();

// The atexit hook that closes the gate (module.cpp registers it).
void close_gil_gate_at_exit();

// Blocks the calling thread until the process exits.
[[noreturn]] void park_until_exit();

// Releases the GIL for its scope (as pybind11::gil_scoped_release).
class ReleaseGil {
 public:
  ReleaseGil() : state_(PyEval_SaveThread()) {}
  ~ReleaseGil() {
    enter_gil_gate();
    PyEval_RestoreThread(state_);
    leave_gil_gate();
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

// Takes the GIL for its scope from any thread (as pybind11::gil_scoped_acquire).
class AcquireGil {
 public:
  AcquireGil() {
    enter_gil_gate();
    state_ = PyGILState_Ensure();
    leave_gil_gate();
  }
  ~AcquireGil() { PyGILState_Release(state_); }
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;

 private:
  PyGILState_STATE state_;
};

}  // namespace tw::python
