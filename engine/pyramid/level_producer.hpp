#pragma once
// What the pyramid job's reduce stage calls: it takes the next band of level
// 0 and hands back the bands of levels >= 1 that it finished. The CPU
// producer wraps PyramidCascade; the CUDA producer keeps the cascade in
// device memory and returns bands whose copy back may still be in flight.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/codec_kind.hpp"
#include "engine/image_pool.hpp"
#include "engine/pyramid/cascade.hpp"

namespace tw {

struct FinishedBand {
  int level = 0;                      // -1: nothing to encode, only something to wait for
  std::shared_ptr<const Image> band;  // host pixels, rows [y, y + h), the level's computed columns
  std::function<void()> wait;         // blocks until `band` holds its pixels (null: ready now)
};

// Seconds each GPU stage was busy (device time from events), and bytes moved.
struct DeviceTimes {
  double upload = 0, kernel = 0, download = 0, decode = 0;
  uint64_t bytes_up = 0, bytes_down = 0;
};

// One compressed tile of a band of level 0, complete (tables included).
struct JpegTile {
  int64_t x0 = 0;  // level-0 column of the tile's left edge
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// A band handed to the GPU's JPEG decoder (opaque outside the producer).
class JpegTicket {
 public:
  virtual ~JpegTicket() = default;
};

class LevelProducer {
 public:
  virtual ~LevelProducer() = default;
  // The next rows of level 0, in order. Appends the finished bands.
  virtual void push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) = 0;
  // GPU JPEG decoding of level 0 (where jpeg_decoder() is not empty), in two
  // steps: submit_jpeg from any thread hands a band's tiles to the device's
  // decoder without waiting (null: it is busy, decode on the CPU instead);
  // push_submitted, in band order like push, feeds the decoded band on.
  virtual std::shared_ptr<JpegTicket> submit_jpeg(int64_t y, int64_t rows, const std::vector<JpegTile>& tiles);
  virtual void push_submitted(const std::shared_ptr<JpegTicket>& ticket, std::vector<FinishedBand>& out);
  virtual std::string jpeg_decoder() const { return ""; }
  // Starts GPU JPEG decoding (tiles of `tile` pixels) in a producer made
  // without it; may run on another thread while the pipeline pushes bands:
  // until it returns, submit_jpeg declines. Throws where it cannot.
  virtual void enable_jpeg(int64_t tile);
  // Device time so far (zero for the CPU); call after every band was waited for.
  virtual DeviceTimes device_times() const { return {}; }
  // Moving a cascade from one producer to another between two pushes: the
  // state after the last push (the CPU's), and taking it up before the first
  // (the GPU's). Others throw InternalError.
  virtual CascadeSnapshot snapshot() const;
  virtual void adopt(const CascadeSnapshot& state);
};

std::unique_ptr<LevelProducer> make_cpu_producer(PixelFormat fmt, std::vector<CascadeLevel> levels,
                                                 int64_t band_rows, ImagePool& pool);

// Pinned host memory for bands the GPU copies from or into (null without CUDA).
const HostAllocator* gpu_host_allocator();

// Device bytes a CUDA producer needs for this geometry.
size_t cuda_producer_bytes(PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows);

// Whether the CUDA producer can decode level-0 tiles of this format itself
// (a build with nvJPEG; baseline YCbCr or gray JPEG).
bool cuda_can_decode(const RawTileFormat& f);

// Device bytes the GPU JPEG decoder's band buffers take.
size_t cuda_jpeg_bytes(PixelFormat fmt, const CascadeLevel& level0, int64_t band_rows, int64_t tile);

// Throws InputError in builds without CUDA, CudaError if nvJPEG cannot be
// set up. jpeg_tile > 0: level-0 bands may also come as JPEG tiles of that
// size (submit_jpeg / push_submitted).
std::unique_ptr<LevelProducer> make_cuda_producer(int device, PixelFormat fmt, std::vector<CascadeLevel> levels,
                                                  int64_t band_rows, ImagePool& host_pool, int64_t jpeg_tile = 0);

}  // namespace tw
