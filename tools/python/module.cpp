// The compiled half of `import tilewave`: tools/python/tilewave/__init__.py
// is the front users see and imports this module as tilewave._tilewave.
#include "tools/python/bindings.hpp"

PYBIND11_MODULE(_tilewave, m) {
  m.doc() = "Tilewave's engine: slides, registered ops and whole-slide jobs (see docs/python.md)";
  m.attr("__version__") = "0.1.0";
  tw::python::bind_errors(m);
  tw::python::bind_slide(m);
  tw::python::bind_device_arrays(m);
  tw::python::bind_ops(m);
  tw::python::bind_jobs(m);
}
