#pragma once
// numpy arrays and the engine's pixel formats: which dtypes map to which
// sample types, and new arrays shaped for an image of a format.
#include <pybind11/numpy.h>

#include <string>

#include "engine/image.hpp"

namespace tw::python {

// The sample type of a numpy dtype (uint8, uint16, int32, uint32, float32 in
// the machine's byte order); ValueError naming `what` for any other.
SampleType sample_type_of(const pybind11::dtype& dt, const std::string& what);
pybind11::dtype dtype_of(SampleType t);

// A new C-contiguous array for h x w pixels of fmt: H x W x C, or H x W when
// `squeeze` and the format has one channel.
pybind11::array new_image_array(PixelFormat fmt, int64_t w, int64_t h, bool squeeze);

// The array as a view the engine can write (it must be C-contiguous, as
// new_image_array's are), with rect (0, 0, w, h).
ImageView view_of(pybind11::array& a, PixelFormat fmt);

}  // namespace tw::python
