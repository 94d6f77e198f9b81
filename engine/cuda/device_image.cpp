#include "engine/cuda/device_image.hpp"

#include <cuda_runtime.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/error.hpp"
#include "engine/ops/device_chain.hpp"
#include "engine/ops/device_tiles.hpp"

namespace tw {
namespace {

// Pieces of about this many pixels: enough to fill the GPU with one kernel
// each, small enough that several overlap their copies and kernels.
constexpr int64_t kPieceSide = 2048;
constexpr int64_t kResidentPieceSide = 8192;

class DeviceImageSource final : public TileSource, public DeviceTiles {
 public:
  DeviceImageSource(const DeviceImage& img, std::shared_ptr<void> owner, const std::string& name)
      : img_(img), owner_(std::move(owner)) {
    info_.path = name;
    info_.format = "device array";
    info_.fmt = img.fmt;
    LevelInfo li;
    li.width = img.width, li.height = img.height;
    li.compression = "none";
    info_.levels.push_back(li);
  }

  const DeviceTiles* device_tiles() const override { return this; }
  int device() const override { return img_.device; }

  // The chain's first op finds its input here already on the device.
  void stage(const Rect&, StagedInputs&) const override {}

  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& c) const override {
    const size_t row = static_cast<size_t>(r.w) * img_.fmt.bytes_per_pixel();
    TW_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch, at(r.x, r.y), img_.pitch, row, static_cast<size_t>(r.h),
                                    cudaMemcpyDefault, c.stream));
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const Rect& r = dst.rect;
    const size_t row = dst.row_length_bytes();
    cuda::DeviceScope scope(img_.device);
    TW_CUDA_CHECK(cudaMemcpy2D(dst.row_bytes(r.y), dst.stride, at(r.x, r.y), img_.pitch, row, static_cast<size_t>(r.h),
                               cudaMemcpyDefault));
    count_downloaded(row * static_cast<size_t>(r.h));
  }

 private:
  const uint8_t* at(int64_t x, int64_t y) const {
    return img_.data + static_cast<size_t>(y) * img_.pitch + static_cast<size_t>(x) * img_.fmt.bytes_per_pixel();
  }

  DeviceImage img_;
  std::shared_ptr<void> owner_;
};

// The side of the pieces: kPieceSide, or smaller where `memory` is given.
// Each piece in work holds its chain's input on the host (read, then staged
// in a lane's pinned buffer), which is up to 4 bytes a pixel of RGBA, more
// with halos: all threads' pieces and the lanes' copies together within a
// quarter of `memory` (a 3400^2 chain at --memory 4M held 50 MB in four
// 2048^2 pieces of RGB).
int64_t piece_side(size_t memory) {
  if (memory == 0) return kPieceSide;
  const size_t threads =
      static_cast<size_t>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  constexpr size_t kLanes = 4, kBytes = 8;
  int64_t side = kPieceSide;
  while (side > 128 && (threads + kLanes) * static_cast<size_t>(side * side) * kBytes > memory / 4) side /= 2;
  return side;
}

template <class F>
void for_each_piece(int64_t w, int64_t h, int64_t side, F&& f) {
  const int64_t nx = (w + side - 1) / side, ny = (h + side - 1) / side;
  tbb::parallel_for(int64_t{0}, nx * ny, [&](int64_t k) {
    const Rect r(k % nx * side, k / nx * side, side, side);
    f(r.intersect(Rect(0, 0, w, h)));
  });
}

}  // namespace

int device_of_pointer(const void* p) {
  if (cuda_devices().empty()) throw CudaError("a GPU array was given, but " + cuda_unavailable_reason());
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it: the answer is "not device memory"
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

void synchronize_device(int device) {
  cuda::DeviceScope scope(device);
  TW_CUDA_CHECK(cudaDeviceSynchronize());
}

SourcePtr make_device_image_source(const DeviceImage& img, std::shared_ptr<void> owner, const std::string& name) {
  return std::make_shared<DeviceImageSource>(img, std::move(owner), name);
}

std::shared_ptr<uint8_t> allocate_device_bytes(int device, size_t bytes) {
  cuda::DeviceScope scope(device);
  void* p = nullptr;
  TW_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [device](uint8_t* q) {
    cuda::DeviceScope s(device);
    cudaFree(q);
  });
}

bool compute_into_device(const TileSource& src, const DeviceImage& dst, size_t memory) {
  const LevelInfo& l0 = src.level(0);
  if (l0.width != dst.width || l0.height != dst.height)
    throw InternalError("compute_into_device: the destination does not match the result");
  return compute_rect_into_device(src, Rect(0, 0, dst.width, dst.height), dst, memory);
}

bool compute_rect_into_device(const TileSource& src, const Rect& rect, const DeviceImage& dst, size_t memory) {
  const LevelInfo& l0 = src.level(0);
  if (rect.w != dst.width || rect.h != dst.height || !Rect(0, 0, l0.width, l0.height).contains(rect) ||
      !(src.info().fmt == dst.fmt))
    throw InternalError("compute_into_device: the destination does not match the result");
  const size_t bpp = dst.fmt.bytes_per_pixel();
  const DeviceTiles* chain = src.device_tiles();
  const bool on_device = chain && chain->device() == dst.device;
  cuda::LanePool& pool = cuda::shared_lanes(dst.device);
  int64_t side = piece_side(memory);
  if (on_device) {
    // A chain whose first input lies in device memory too (Otsu's stored
    // input) stages nothing on the host: pieces as large as a kernel can
    // use, each one lane's round trip (a 2-GP threshold-invert chain took
    // 0.12 s in 2048^2 pieces).
    StagedInputs probe;
    chain->stage(Rect(rect.x, rect.y, 1, 1), probe);
    if (probe.empty()) side = kResidentPieceSide;
  }
  for_each_piece(dst.width, dst.height, side, [&](const Rect& at) {
    const Rect r(rect.x + at.x, rect.y + at.y, at.w, at.h);
    uint8_t* out = dst.data + static_cast<size_t>(at.y) * dst.pitch + static_cast<size_t>(at.x) * bpp;
    const size_t row = static_cast<size_t>(r.w) * bpp;
    if (on_device) {
      // As a GPU op's own read does (engine/ops/op_cuda.cuh), but the last
      // op writes into dst instead of a lane's buffer bound for the host.
      StagedInputs host;
      chain->stage(r, host);
      cuda::DeviceScope scope(dst.device);
      auto lane = pool.acquire();
      const cudaStream_t s = lane->stream.get();
      {
        DeviceChain c{s, &*lane, &host, cuda::StreamScratch(s)};
        chain->compute(r, out, dst.pitch, c);
      }
      lane->stream.sync();
      return;
    }
    Image host = src.read(0, r);
    cuda::DeviceScope scope(dst.device);
    TW_CUDA_CHECK(cudaMemcpy2D(out, dst.pitch, host.view().row_bytes(r.y), host.view().stride, row,
                               static_cast<size_t>(r.h), cudaMemcpyHostToDevice));
    count_uploaded(row * static_cast<size_t>(r.h));
  });
  return on_device;
}

void for_each_band_from_device(const DeviceImage& img, int64_t rows, const std::function<void(const ImageView&)>& fn) {
  if (img.width <= 0 || img.height <= 0) return;
  rows = std::clamp<int64_t>(rows, 1, img.height);
  const size_t bpp = img.fmt.bytes_per_pixel(), row = static_cast<size_t>(img.width) * bpp;
  cuda::DeviceScope scope(img.device);
  cuda::PinnedBuffer<uint8_t> buf[2] = {cuda::PinnedBuffer<uint8_t>(row * static_cast<size_t>(rows)),
                                        cuda::PinnedBuffer<uint8_t>(row * static_cast<size_t>(rows))};
  cuda::Stream stream;
  cuda::Event done[2];
  auto start = [&](int64_t y0, int k) {
    const int64_t n = std::min(rows, img.height - y0);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(buf[k].get(), row, img.data + static_cast<size_t>(y0) * img.pitch, img.pitch, row,
                                    static_cast<size_t>(n), cudaMemcpyDeviceToHost, stream.get()));
    done[k].record(stream.get());
    count_downloaded(row * static_cast<size_t>(n));
  };
  start(0, 0);
  for (int64_t y0 = 0, k = 0; y0 < img.height; y0 += rows, k ^= 1) {
    if (y0 + rows < img.height) start(y0 + rows, static_cast<int>(k ^ 1));  // the next band comes down meanwhile
    done[k].sync();
    const int64_t n = std::min(rows, img.height - y0);
    fn(ImageView{img.fmt, Rect(0, y0, img.width, n), row, buf[k].get()});
  }
}

}  // namespace tw
