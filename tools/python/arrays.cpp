#include "tools/python/arrays.hpp"

namespace py = pybind11;

namespace tw::python {

SampleType sample_type_of(const py::dtype& dt, const std::string& what) {
  // Native byte order only: a big-endian array would be read as garbage.
  const bool native = dt.attr("isnative").cast<bool>();
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  if (native) {
    if (kind == 'u' && size == 1) return SampleType::kU8;
    if (kind == 'u' && size == 2) return SampleType::kU16;
    if (kind == 'u' && size == 4) return SampleType::kU32;
    if (kind == 'i' && size == 4) return SampleType::kI32;
    if (kind == 'f' && size == 4) return SampleType::kF32;
  }
  throw py::value_error(what + " has dtype " + dt.attr("name").cast<std::string>() + (native ? "" : " (byte-swapped)") +
                        "; tilewave takes uint8, uint16, int32, uint32 or float32 (in native byte order): "
                        "convert it with .astype()");
}

py::dtype dtype_of(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return py::dtype::of<uint8_t>();
    case SampleType::kU16:
      return py::dtype::of<uint16_t>();
    case SampleType::kI32:
      return py::dtype::of<int32_t>();
    case SampleType::kF32:
      return py::dtype::of<float>();
    case SampleType::kU32:
      return py::dtype::of<uint32_t>();
  }
  throw InternalError("dtype_of: unknown sample type");
}

py::array new_image_array(PixelFormat fmt, int64_t w, int64_t h, bool squeeze) {
  std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(h), static_cast<py::ssize_t>(w)};
  if (!(squeeze && fmt.channels == 1)) shape.push_back(fmt.channels);
  return py::array(dtype_of(fmt.type), shape);
}

ImageView view_of(py::array& a, PixelFormat fmt) {
  TW_ASSERT(a.flags() & py::array::c_style);
  ImageView v;
  v.fmt = fmt;
  v.rect = Rect(0, 0, a.shape(1), a.shape(0));
  v.stride = static_cast<size_t>(a.shape(1)) * fmt.bytes_per_pixel();
  v.data = static_cast<uint8_t*>(a.mutable_data());
  return v;
}

}  // namespace tw::python
