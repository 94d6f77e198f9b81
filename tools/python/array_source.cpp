#include "tools/python/array_source.hpp"

#include <cstring>

#include "tools/python/arrays.hpp"
#include "tools/python/gil.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

// Pixels contiguous (channels, then pixels of a row) and rows in order: what
// read_inside copies row by row.
bool rows_readable(const py::array& a, size_t bpp) {
  const auto item = static_cast<py::ssize_t>(a.itemsize());
  if (a.ndim() == 3 && a.strides(2) != item && a.shape(2) > 1) return false;
  if (a.strides(1) != static_cast<py::ssize_t>(bpp) && a.shape(1) > 1) return false;
  return a.shape(0) == 1 || a.strides(0) >= static_cast<py::ssize_t>(bpp) * a.shape(1);
}

}  // namespace

ArraySource::ArraySource(py::array a, const std::string& name) {
  if (a.ndim() != 2 && a.ndim() != 3)
    throw py::value_error(name + " has " + std::to_string(a.ndim()) +
                          " dimensions; tilewave takes H x W or H x W x C arrays");
  const SampleType type = sample_type_of(a.dtype(), name);
  const int64_t h = a.shape(0), w = a.shape(1), c = a.ndim() == 3 ? a.shape(2) : 1;
  if (h <= 0 || w <= 0 || c <= 0)
    throw py::value_error(name + " is empty (shape " + py::str(a.attr("shape")).cast<std::string>() + ")");
  if (c > 64) throw py::value_error(name + " has " + std::to_string(c) + " channels; tilewave takes at most 64");
  const PixelFormat fmt{type, static_cast<int>(c)};
  if (!rows_readable(a, fmt.bytes_per_pixel())) {
    a = py::array::ensure(a, py::array::c_style);
    if (!a) throw py::error_already_set();
    zero_copy_ = false;
  }
  data_ = static_cast<const uint8_t*>(a.data());
  row_stride_ = h > 1 ? static_cast<size_t>(a.strides(0)) : static_cast<size_t>(w) * fmt.bytes_per_pixel();
  owner_ = std::shared_ptr<void>(a.release().ptr(), [](void* p) {
    AcquireGil gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
  info_.path = name;
  info_.format = "numpy";
  info_.fmt = fmt;
  LevelInfo li;
  li.width = w, li.height = h;
  li.compression = "none";
  info_.levels.push_back(li);
}

void ArraySource::read_inside(int, const ImageView& dst) const {
  const size_t bpp = info_.fmt.bytes_per_pixel();
  for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y)
    std::memcpy(dst.row_bytes(y), data_ + static_cast<size_t>(y) * row_stride_ + static_cast<size_t>(dst.rect.x) * bpp,
                dst.row_length_bytes());
}

}  // namespace tw::python
