#pragma once
// Morphological reconstruction on the GPU: the IWPP-MP algorithm of seed 001
// (a global queue of 32x32 "megapixels" processed in shared memory), made
// exact for 4- and 8-connectivity. Solves one tile (with its one-pixel halo
// of fixed neighbour values) per call; the tile-level wavefront engine does
// the rest, so images of any size work.
#include <cstdint>
#include <memory>

#include "engine/wavefront/wavefront.hpp"
#include "kernels/reconstruct/reconstruct.hpp"

namespace tw {

struct GpuWavefrontStats {
  int64_t megapixel_visits = 0;
  double kernel_seconds = 0;    // device time of the propagation kernels
  double transfer_seconds = 0;  // device time of the copies (and conversions)
  double host_seconds = 0;      // staging tiles on the host (bit planes for the binary rule), taking results back
};

// A TilePropagator that runs each tile on CUDA device `device`. Calls are
// serialised (the GPU is filled by one tile); use large tiles.
std::unique_ptr<TilePropagator> make_cuda_reconstruct_rule(int device, PixelFormat fmt, const ReconstructParams& p,
                                                           GpuWavefrontStats* stats);

// The same for a binary image: marker and mask 8-bit, every sample 0 or 255
// (nonzero is read as 255), by dilation or (dilate = false) by erosion. Bit
// planes instead of 32-bit values: far less to move and compare per
// megapixel (Canny's hysteresis, filling holes of masks). reconstruct()
// picks it by itself when the input is binary.
std::unique_ptr<TilePropagator> make_cuda_binary_reconstruct_rule(int device, int connectivity,
                                                                  GpuWavefrontStats* stats, bool dilate = true);

// A whole image's binary reconstruction by dilation in one go, its bit
// planes (bit_planes.hpp's layout for a core at the origin; the ring and the
// words past the image zero in both) held by the caller: `on` goes up with
// `allowed`, and comes back as the result. For erosion, pass the planes of
// the complements (the zero bytes). Device memory: both planes.
void reconstruct_binary_planes(int device, int connectivity, uint32_t* on, const uint32_t* allowed, int64_t w,
                               int64_t h, GpuWavefrontStats* stats);

// Fill-holes of a whole binary image (bytes 0 and 255) already in device
// memory on `device` (rows `byte_pitch` bytes apart): its planes are packed
// there, solved, and the result's plane (bit_planes.hpp's layout for a core
// at the origin, set bits the pixels that turned 0) comes back into `result`
// (bit_plane_pitch(w) * (h + 2) words). Returns false where a byte is
// neither 0 nor 255 (`result` is then meaningless). Device memory: both
// planes beside the image.
bool fill_holes_binary_on_device(int device, int connectivity, const uint8_t* bytes, size_t byte_pitch, int64_t w,
                                 int64_t h, uint32_t* result, GpuWavefrontStats* stats);

// A whole grey image's reconstruction, its images already in device memory
// on one device: no tiles, no visits, nothing over PCIe. The marker is given,
// or made from the mask on the device (h-dome's mask - h; fill-holes' mask on
// the border and the type's maximum inside), so it need not exist as an
// image. Every image is `fmt` (8- or 16-bit gray), rows `pitch` bytes apart.
struct GreyWholeImage {
  PixelFormat fmt;
  ReconstructParams params;
  int64_t width = 0, height = 0;
  size_t pitch = 0;
  const uint8_t* mask = nullptr;
  const uint8_t* marker = nullptr;  // null: made from the mask as below
  int64_t mask_minus = 0;           // marker = max(mask - mask_minus, 0)
  bool mask_border = false;         // marker = mask on the border, the maximum inside
  bool clip = false;                // clip a given marker to the mask instead of declining
  uint8_t* out = nullptr;           // the result (may be the marker's memory)
  bool dome = false;                // out = max(mask - reconstruction, 0): h-dome's, made where it lies
};

// Device memory it takes beside the images: two 32-bit words a pixel.
size_t grey_whole_image_device_bytes(int64_t width, int64_t height);

// Runs it. Returns false, with `out` unchanged, where a given marker is out of
// order (above the mask by dilation, below by erosion) and clip is off: the
// tile path then gives its error. Throws CudaError where device memory runs
// out.
bool reconstruct_grey_on_device(int device, const GreyWholeImage& a, GpuWavefrontStats* stats);

}  // namespace tw
