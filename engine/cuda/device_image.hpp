#pragma once
// Images in device memory that the caller owns — a CuPy array, a DLPack
// tensor handed in from Python — as sources the GPU ops read where they
// lie, and as destinations a result is computed straight into. Safe to
// include in any build: without CUDA, each entry point throws.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/image.hpp"
#include "engine/tile_source.hpp"

namespace tw {

// width x height pixels of fmt at data, rows `pitch` bytes apart, on `device`.
struct DeviceImage {
  int device = 0;
  uint8_t* data = nullptr;
  size_t pitch = 0;
  PixelFormat fmt{};
  int64_t width = 0, height = 0;
};

// The device a pointer's memory belongs to; -1 for memory the CUDA driver
// does not know (plain host memory). Every entry point throws CudaError
// where the build or the machine has no CUDA, or a call fails.
int device_of_pointer(const void* p);

// Waits for all work on `device` (what the array's producer queued on its
// own streams must be done before the engine's streams read it).
void synchronize_device(int device);

// A source over img (level 0 only). A GPU op on img.device takes it on the
// device, tile by tile, with no copy through the host; any other reader
// gets its pixels copied down (counted as downloaded bytes). `owner` keeps
// the memory alive for as long as the source lives.
SourcePtr make_device_image_source(const DeviceImage& img, std::shared_ptr<void> owner, const std::string& name);

// New device memory of `bytes` on `device`, freed when the last owner goes.
std::shared_ptr<uint8_t> allocate_device_bytes(int device, size_t bytes);

// Computes level 0 of src into dst (same size and format), pieces in
// parallel. Where src is a GPU chain on dst.device, each piece is computed
// into dst in device memory; otherwise it is read on the host and copied up
// (counted as uploaded bytes). Returns whether the pixels stayed on the
// device throughout. Returns once dst is complete. `memory` (0: no bound)
// caps the host memory the pieces in work hold: a run's --memory.
bool compute_into_device(const TileSource& src, const DeviceImage& dst, size_t memory = 0);
// The same for the pixels `rect` of level 0 (dst: rect's size).
bool compute_rect_into_device(const TileSource& src, const Rect& rect, const DeviceImage& dst, size_t memory = 0);

// Brings img down in bands of `rows` rows, in order: each band is copied
// into one of two pinned buffers while fn(band) takes the one before (a
// pinned copy runs at the bus's speed; piecewise copies into pageable memory
// took 2 s for 2 GB). fn gets a view of the band's pixels (rows y0 .. y0 +
// rows - 1, the whole width) valid until it returns. Counted as downloaded
// bytes. Host memory: two bands.
void for_each_band_from_device(const DeviceImage& img, int64_t rows, const std::function<void(const ImageView&)>& fn);

}  // namespace tw
