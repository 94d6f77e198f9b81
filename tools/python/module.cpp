// The compiled half of `import tilewave`: tools/python/tilewave/__init__.py
// is the front users see and imports this module as tilewave._tilewave.
#include "tools/python/bindings.hpp"
#include "tools/python/gil.hpp"
#include "tools/python/job_thread.hpp"

PYBIND11_MODULE(_tilewave, m) {
  m.doc() = "Tilewave's engine: slides, registered ops and whole-slide jobs (see docs/python.md)";
  m.attr("__version__") = "0.1.0";
  tw::python::bind_errors(m);
  tw::python::bind_slide(m);
  tw::python::bind_device_arrays(m);
  tw::python::bind_ops(m);
  tw::python::bind_jobs(m);
  // Python runs atexit hooks before it starts finalizing: a daemon thread's
  // job is stopped (its partial output removed) and threads coming back
  // from the engine after that park instead of being ended (gil.hpp).
  pybind11::module_::import("atexit").attr("register")(pybind11::cpp_function([] {
    tw::python::stop_job_at_exit();
    tw::python::close_gil_gate_at_exit();
  }));
}
