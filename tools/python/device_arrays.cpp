#include "tools/python/device_arrays.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>

#include <memory>
#include <vector>

#include "engine/cuda/device_image.hpp"
#include "tools/python/arrays.hpp"
#include "tools/python/gil.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

// Device memory the engine made, as Python sees it.
struct DeviceArray {
  std::shared_ptr<uint8_t> memory;
  DeviceImage image;
  bool squeeze = true;

  py::tuple shape() const {
    if (squeeze && image.fmt.channels == 1) return py::make_tuple(image.height, image.width);
    return py::make_tuple(image.height, image.width, image.fmt.channels);
  }
};

// What a DLPack capsule of a DeviceArray owns: the tensor's description and
// a reference to the array, given up by the consumer through the deleter.
struct Exported {
  DLManagedTensor tensor{};
  std::vector<int64_t> shape;
  py::object array;
};

void delete_exported(DLManagedTensor* t) {
  AcquireGil gil;  // the consumer may call this from any thread
  delete static_cast<Exported*>(t->manager_ctx);
}

// Checks that the pixels lie as the engine reads them (each pixel's
// channels together, pixels of a row together, rows in order) and returns
// the row pitch. Strides in bytes; empty for C-contiguous.
size_t row_pitch(const std::vector<int64_t>& strides, size_t ndim, int64_t h, int64_t w, int64_t c, size_t item,
                 const std::string& name) {
  const size_t bpp = item * static_cast<size_t>(c);
  if (strides.empty()) return static_cast<size_t>(w) * bpp;
  if (strides.size() != ndim)
    throw py::value_error(name + " gives " + std::to_string(strides.size()) + " strides for " + std::to_string(ndim) +
                          " dimensions");
  const bool channels_ok = c == 1 || strides[2] == static_cast<int64_t>(item);
  const bool pixels_ok = w == 1 || strides[1] == static_cast<int64_t>(bpp);
  const bool rows_ok = h == 1 || strides[0] >= static_cast<int64_t>(static_cast<size_t>(w) * bpp);
  if (!channels_ok || !pixels_ok || !rows_ok)
    throw py::value_error(name +
                          " is a strided view on the GPU that tilewave cannot read in place; pass a "
                          "contiguous array (cupy.ascontiguousarray)");
  return h == 1 ? static_cast<size_t>(w) * bpp : static_cast<size_t>(strides[0]);
}

DeviceInput make_input(const std::string& name, const void* data, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& strides, const py::dtype& dt, std::shared_ptr<void> owner) {
  if (shape.size() != 2 && shape.size() != 3)
    throw py::value_error(name + " has " + std::to_string(shape.size()) +
                          " dimensions; tilewave takes H x W or H x W x C arrays");
  const SampleType type = sample_type_of(dt, name);
  const int64_t h = shape[0], w = shape[1], c = shape.size() == 3 ? shape[2] : 1;
  if (h <= 0 || w <= 0 || c <= 0) throw py::value_error(name + " is empty");
  if (c > 64) throw py::value_error(name + " has " + std::to_string(c) + " channels; tilewave takes at most 64");
  DeviceImage img;
  img.fmt = PixelFormat{type, static_cast<int>(c)};
  img.width = w, img.height = h;
  img.pitch = row_pitch(strides, shape.size(), h, w, c, static_cast<size_t>(dt.itemsize()), name);
  img.data = static_cast<uint8_t*>(const_cast<void*>(data));
  img.device = device_of_pointer(data);
  if (img.device < 0) throw py::value_error(name + " says it is a GPU array, but its memory is not on a CUDA device");
  {
    // What the array's producer queued on its own streams must be done
    // before the engine's streams read it.
    ReleaseGil nogil;
    synchronize_device(img.device);
  }
  return {make_device_image_source(img, std::move(owner), name), img.device};
}

std::shared_ptr<void> hold(py::object obj) {
  return std::shared_ptr<void>(obj.release().ptr(), [](void* p) {
    AcquireGil gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

DeviceInput from_cuda_array_interface(const py::object& obj, const std::string& name) {
  // The interface is the producer's dict: any key missing or of the wrong
  // type is the producer's error, said as a ValueError naming it.
  std::vector<int64_t> shape, strides;
  uintptr_t ptr = 0;
  py::dtype dt;
  try {
    const py::dict cai = obj.attr("__cuda_array_interface__");
    if (cai.contains("mask") && !cai["mask"].is_none())
      throw py::value_error(name + " is a masked GPU array; tilewave takes plain ones");
    for (auto d : cai["shape"].cast<py::tuple>()) shape.push_back(d.cast<int64_t>());
    if (cai.contains("strides") && !cai["strides"].is_none())
      for (auto s : cai["strides"].cast<py::tuple>()) strides.push_back(s.cast<int64_t>());
    ptr = static_cast<uintptr_t>(cai["data"].cast<py::tuple>()[0].cast<size_t>());
    dt = py::dtype(cai["typestr"].cast<std::string>());
  } catch (const py::cast_error&) {
    throw py::value_error(name +
                          ": its __cuda_array_interface__ is malformed (shape and strides must be tuples of "
                          "integers, data a tuple (pointer, read-only), typestr a string)");
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_ValueError)) throw;
    throw py::value_error(name + ": its __cuda_array_interface__ is malformed (" + e.what() + ")");
  }
  return make_input(name, reinterpret_cast<const void*>(ptr), shape, strides, dt, hold(obj));
}

py::dtype dtype_of_dl(const DLDataType& t, const std::string& name) {
  const char kinds[] = {'i', 'u', 'f'};  // kDLInt, kDLUInt, kDLFloat
  if (t.lanes != 1 || t.code > kDLFloat || t.bits % 8)
    throw py::value_error(name + " has a DLPack type tilewave does not take (code " + std::to_string(t.code) + ", " +
                          std::to_string(t.bits) + " bits); it takes uint8, uint16, int32, uint32 or float32");
  return py::dtype(std::string(1, kinds[t.code]) + std::to_string(t.bits / 8));
}

DeviceInput from_dlpack(const py::object& obj, const std::string& name) {
  py::object capsule = obj.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!managed) throw py::error_already_set();
  // The protocol: a consumer renames the capsule it takes, so the capsule's
  // own destructor leaves the tensor alone, and calls the deleter when done.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  std::shared_ptr<void> owner(managed, [](void* p) {
    AcquireGil gil;
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  const py::dtype dt = dtype_of_dl(t.dtype, name);
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim), strides;
  if (t.strides)
    for (int k = 0; k < t.ndim; ++k) strides.push_back(t.strides[k] * static_cast<int64_t>(dt.itemsize()));
  return make_input(name, static_cast<const uint8_t*>(t.data) + t.byte_offset, shape, strides, dt, std::move(owner));
}

py::dict cuda_array_interface(const DeviceArray& a) {
  // Version 3 without "stream": the engine finished writing before it
  // returned the array, so a consumer need not wait for anything.
  return py::dict(py::arg("shape") = a.shape(), py::arg("typestr") = dtype_of(a.image.fmt.type).attr("str"),
                  py::arg("data") = py::make_tuple(reinterpret_cast<uintptr_t>(a.image.data), false),
                  py::arg("strides") = py::none(), py::arg("version") = 3);
}

py::capsule to_dlpack(py::object self) {
  const DeviceArray& a = self.cast<const DeviceArray&>();
  auto* ex = new Exported;
  for (auto d : a.shape()) ex->shape.push_back(d.cast<int64_t>());
  ex->array = self;
  const py::dtype dt = dtype_of(a.image.fmt.type);
  DLTensor& t = ex->tensor.dl_tensor;
  t.data = a.image.data;
  t.device = DLDevice{kDLCUDA, a.image.device};
  t.ndim = static_cast<int>(ex->shape.size());
  const char kind = dt.kind();
  t.dtype = DLDataType{static_cast<uint8_t>(kind == 'f'   ? kDLFloat
                                            : kind == 'i' ? kDLInt
                                                          : kDLUInt),
                       static_cast<uint8_t>(dt.itemsize() * 8), 1};
  t.shape = ex->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  ex->tensor.manager_ctx = ex;
  ex->tensor.deleter = delete_exported;
  PyObject* cap = PyCapsule_New(&ex->tensor, "dltensor", [](PyObject* c) {
    // Never taken by a consumer: the capsule still owns the tensor.
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (!cap) {
    delete ex;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

}  // namespace

bool is_device_array(const py::handle& obj) {
  // The same test as tilewave/ops.py's _on_gpu: what it passed on as a GPU
  // array is read as one here.
  if (py::hasattr(obj, "__cuda_array_interface__")) return true;
  if (!py::hasattr(obj, "__dlpack_device__")) return false;
  const py::object type = obj.attr("__dlpack_device__")()[py::int_(0)];
  return type.equal(py::int_(int{kDLCUDA})) || type.equal(py::int_(int{kDLCUDAManaged}));
}

DeviceInput device_array_source(const py::object& obj, const std::string& name) {
  if (py::hasattr(obj, "__cuda_array_interface__")) return from_cuda_array_interface(obj, name);
  return from_dlpack(obj, name);
}

py::object compute_device_array(const TileSource& src, int device, bool squeeze) {
  DeviceArray a;
  a.squeeze = squeeze;
  a.image.device = device;
  a.image.fmt = src.info().fmt;
  a.image.width = src.level(0).width, a.image.height = src.level(0).height;
  a.image.pitch = static_cast<size_t>(a.image.width) * a.image.fmt.bytes_per_pixel();
  a.memory = allocate_device_bytes(device, a.image.pitch * static_cast<size_t>(a.image.height));
  a.image.data = a.memory.get();
  compute_into_device(src, a.image);
  AcquireGil gil;
  return py::cast(std::move(a));
}

void bind_device_arrays(py::module_& m) {
  py::class_<DeviceArray>(m, "DeviceArray",
                          "An op's result in GPU memory. It exports __cuda_array_interface__ and DLPack, so "
                          "cupy.asarray(a) or torch.from_dlpack(a) wrap it without a copy; .get() copies it to a "
                          "numpy array.")
      .def_property_readonly("shape", &DeviceArray::shape)
      .def_property_readonly("dtype", [](const DeviceArray& a) { return dtype_of(a.image.fmt.type); })
      .def_property_readonly("device", [](const DeviceArray& a) { return a.image.device; })
      .def_property_readonly("ptr", [](const DeviceArray& a) { return reinterpret_cast<uintptr_t>(a.image.data); })
      .def_property_readonly("__cuda_array_interface__", &cuda_array_interface)
      .def("__dlpack__", [](py::object self, py::kwargs) { return to_dlpack(std::move(self)); })
      .def("__dlpack_device__", [](const DeviceArray& a) { return py::make_tuple(int{kDLCUDA}, a.image.device); })
      .def("get",
           [](const DeviceArray& a) {
             py::array out = new_image_array(a.image.fmt, a.image.width, a.image.height, a.squeeze);
             ImageView v = view_of(out, a.image.fmt);
             const SourcePtr src = make_device_image_source(a.image, a.memory, "array");
             {
               ReleaseGil nogil;
               src->read(0, v);
             }
             return out;
           })
      .def("__repr__", [](const DeviceArray& a) {
        return "tilewave.DeviceArray(shape=" + py::str(a.shape()).cast<std::string>() +
               ", dtype=" + py::str(dtype_of(a.image.fmt.type)).cast<std::string>() +
               ", device=" + std::to_string(a.image.device) + ")";
      });
}

}  // namespace tw::python
