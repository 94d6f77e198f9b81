#include "tools/python/errors.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "engine/error.hpp"
#include "engine/op_params.hpp"
#include "engine/progress.hpp"
#include "engine/warnings.hpp"
#include "io/open_source.hpp"
#include "tools/python/bindings.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

// Thrown by open_for_python: carries the errno class of the failure to the
// translator, which makes it the matching OSError subclass.
struct OpenError : std::runtime_error {
  OpenError(const std::string& what, bool missing) : std::runtime_error(what), missing(missing) {}
  bool missing;
};

}  // namespace

void require_text(const std::string& s, const std::string& what) {
  if (s.find('\0') != std::string::npos) throw pybind11::value_error(what + ": embedded null byte");
}

SourcePtr open_for_python(const std::string& spec) {
  require_text(spec, "path");
  try {
    return open_source(spec);
  } catch (const ParamError&) {
    throw;
  } catch (const InputError& e) {
    if (spec.rfind("synthetic:", 0) == 0) throw;  // a bad spec, not a file
    struct stat st {};
    const bool missing = ::stat(spec.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
    throw OpenError(e.what(), missing);
  }
}

void warn_in_python() {
  const std::vector<std::string> lines = take_warnings();
  if (lines.empty()) return;
  py::object warn = py::module_::import("warnings").attr("warn");
  for (const std::string& w : lines) warn(w, py::handle(PyExc_UserWarning), 2);
}

void bind_errors(py::module_& m) {
  (void)m;
  // Most specific first: pybind11 tries translators newest first, and each
  // rethrows what it does not handle.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const OpenError& e) {
      PyErr_SetString(e.missing ? PyExc_FileNotFoundError : PyExc_OSError, e.what());
    } catch (const Cancelled& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const ParamError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const CudaError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("internal error: ") + e.what()).c_str());
    }
  });
}

}  // namespace tw::python
