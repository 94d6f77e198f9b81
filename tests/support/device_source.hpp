#pragma once
// A test image put in device memory (copied up by the engine's host path),
// as a source that GPU ops take on the device: the start of a GPU chain
// without a GPU op before it.
#include <memory>

#include "engine/cuda/device_image.hpp"
#include "engine/memory_source.hpp"

namespace tw::test {

inline std::shared_ptr<const TileSource> on_device(const Image& img) {
  DeviceImage d;
  d.fmt = img.fmt();
  d.width = img.rect().w, d.height = img.rect().h;
  d.pitch = static_cast<size_t>(d.width) * d.fmt.bytes_per_pixel();
  std::shared_ptr<uint8_t> mem = allocate_device_bytes(0, d.pitch * static_cast<size_t>(d.height));
  d.data = mem.get();
  Image copy(img.fmt(), img.rect());
  copy_overlap(img.view(), copy.view());
  compute_into_device(MemorySource(std::move(copy)), d);
  return make_device_image_source(d, mem, "device");
}

}  // namespace tw::test
