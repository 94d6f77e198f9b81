#pragma once
// Arrays in GPU memory from Python, read where they lie: anything with
// __cuda_array_interface__ (CuPy, Numba, PyTorch) or a DLPack tensor on a
// CUDA device. Results come back as tilewave.DeviceArray, which exports
// both protocols, so CuPy or PyTorch wraps it without a copy.
#include <pybind11/pybind11.h>

#include <string>

#include "engine/tile_source.hpp"

namespace tw::python {

// Whether obj's pixels are in GPU memory (it has __cuda_array_interface__,
// or its __dlpack_device__ is CUDA).
bool is_device_array(const pybind11::handle& obj);

struct DeviceInput {
  SourcePtr source;
  int device = 0;
};
// obj (is_device_array) as a source, no copy made; waits for the work its
// producer queued on that device. ValueError naming `name` for a shape,
// dtype or layout the engine cannot read in place.
DeviceInput device_array_source(const pybind11::object& obj, const std::string& name);

// A new tilewave.DeviceArray on `device` holding level 0 of src (H x W when
// `squeeze` and it has one channel, else H x W x C). Call without the GIL.
pybind11::object compute_device_array(const TileSource& src, int device, bool squeeze);

void bind_device_arrays(pybind11::module_& m);

}  // namespace tw::python
