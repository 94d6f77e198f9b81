#pragma once
// The GIL around the engine's work, safe while Python shuts down. A thread
// that takes the GIL back after the interpreter began finalizing (a daemon
// thread still in a tilewave call when the main thread ends) is ended by
// CPython with pthread_exit, whose unwinding through pybind11's noexcept
// destructors calls std::terminate: the process aborted instead of exiting
// 0. Such a thread is parked instead, for ever; the process's exit ends it.
// Use these for every release and re-acquire of the GIL in the extension.
#include <pybind11/pybind11.h>

namespace tw::python {

// Whether the interpreter is finalizing (taking the GIL would end the thread).
inline bool python_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Blocks the calling thread until the process exits.
[[noreturn]] void park_until_exit();

// Releases the GIL for its scope (as pybind11::gil_scoped_release).
class ReleaseGil {
 public:
  ReleaseGil() : state_(PyEval_SaveThread()) {}
  ~ReleaseGil() {
    if (python_finalizing()) park_until_exit();
    PyEval_RestoreThread(state_);
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
    if (python_finalizing()) park_until_exit();
    state_ = PyGILState_Ensure();
  }
  ~AcquireGil() { PyGILState_Release(state_); }
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;

 private:
  PyGILState_STATE state_;
};

}  // namespace tw::python
