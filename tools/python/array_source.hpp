#pragma once
// A numpy array as a TileSource, without a copy: the source reads rows
// straight from the array's buffer, and holds a reference to the array (let
// go with the GIL taken) for as long as any op's result still reads it.
#include <pybind11/numpy.h>

#include <memory>
#include <string>

#include "engine/tile_source.hpp"

namespace tw::python {

class ArraySource : public TileSource {
 public:
  // H x W (one channel) or H x W x C. An array whose pixels are not each
  // contiguous, or whose rows are not in order (a transposed or reversed
  // view), is copied once into a C-contiguous one. ValueError naming `name`
  // for a wrong ndim, an empty array or an unsupported dtype.
  ArraySource(pybind11::array a, const std::string& name);

  // Whether the source reads the caller's own buffer (no copy was needed).
  bool zero_copy() const { return zero_copy_; }

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  std::shared_ptr<void> owner_;  // the array; its last reference dropped with the GIL
  const uint8_t* data_ = nullptr;
  size_t row_stride_ = 0;
  bool zero_copy_ = true;
};

}  // namespace tw::python
