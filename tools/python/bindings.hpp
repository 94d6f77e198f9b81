#pragma once
// The parts of the `tilewave` extension module (docs/python.md), each bound
// by its own file: errors, slides, ops, whole-slide jobs.
#include <pybind11/pybind11.h>

namespace tw::python {

void bind_errors(pybind11::module_& m);         // errors.cpp
void bind_slide(pybind11::module_& m);          // slide_bindings.cpp
void bind_ops(pybind11::module_& m);            // op_bindings.cpp
void bind_device_arrays(pybind11::module_& m);  // device_arrays.cpp
void bind_jobs(pybind11::module_& m);           // job_bindings.cpp

}  // namespace tw::python
