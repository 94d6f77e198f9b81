#pragma once
// Runs a whole-slide job (a CLI command) from Python: on a thread of its
// own, while the calling thread waits with the GIL released and wakes every
// few milliseconds for Ctrl-C. A progress callback is called with the
// fraction of the current output written (0..1), on the thread that writes,
// with the GIL taken; if it raises, or Ctrl-C arrives, the job is stopped at
// its next written tile (engine/progress.hpp's Cancelled): it unwinds as on
// any error, so no output reaches its final path, and the Python exception
// is raised.
#include <pybind11/pybind11.h>

#include <functional>

namespace tw::python {

// One job at a time per process (the engine's progress observer and TBB's
// thread limit are the process's): a second caller waits for the first.
void run_job(const std::function<void()>& job, const pybind11::object& progress);

// Called at interpreter exit with the GIL taken (a daemon thread's job may
// still run): stops the running job as Ctrl-C would and waits for it to
// unwind, so that its partial output is removed and none of its threads
// runs on while the process tears down.
void stop_job_at_exit();

}  // namespace tw::python
