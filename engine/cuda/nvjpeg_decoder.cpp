#include "engine/cuda/nvjpeg_decoder.hpp"

#include <nvjpeg.h>

#include "engine/cuda/cuda_check.hpp"

namespace tw::cuda {
namespace {

void check(nvjpegStatus_t st, const char* call) {
  if (st != NVJPEG_STATUS_SUCCESS)
    throw CudaError(std::string(call) + " failed: nvJPEG status " + std::to_string(int(st)));
}

}  // namespace

struct NvJpegDecoder::Impl {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;
  int batch = 0;
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<nvjpegImage_t> dests;
  ~Impl() {
    if (state) nvjpegJpegStateDestroy(state);
    if (handle) nvjpegDestroy(handle);
  }
};

NvJpegDecoder::NvJpegDecoder(int channels) : impl_(std::make_unique<Impl>()) {
  impl_->format = channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  // The hardware engine first; nvJPEG reports it unsupported on GPUs without one.
  if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &impl_->handle) ==
      NVJPEG_STATUS_SUCCESS) {
    backend_ = "hardware";
  } else {
    impl_->handle = nullptr;
    check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &impl_->handle),
          "nvjpegCreateEx");
    backend_ = "cuda";
  }
  check(nvjpegJpegStateCreate(impl_->handle, &impl_->state), "nvjpegJpegStateCreate");
}

NvJpegDecoder::~NvJpegDecoder() = default;

void NvJpegDecoder::decode(const std::vector<JpegStream>& streams, uint8_t* dst, size_t pitch,
                           const std::vector<size_t>& offsets, cudaStream_t s, const std::string& what) {
  auto& im = *impl_;
  const int n = static_cast<int>(streams.size());
  if (n == 0) return;
  if (n != im.batch) {
    check(nvjpegDecodeBatchedInitialize(im.handle, im.state, n, 1, im.format), "nvjpegDecodeBatchedInitialize");
    im.batch = n;
  }
  im.data.resize(n);
  im.lengths.resize(n);
  im.dests.assign(n, nvjpegImage_t{});
  for (int i = 0; i < n; ++i) {
    im.data[i] = streams[i].data;
    im.lengths[i] = streams[i].size;
    im.dests[i].channel[0] = dst + offsets[i];
    im.dests[i].pitch[0] = pitch;
  }
  const nvjpegStatus_t st =
      nvjpegDecodeBatched(im.handle, im.state, im.data.data(), im.lengths.data(), im.dests.data(), s);
  if (st != NVJPEG_STATUS_SUCCESS) {
    im.batch = 0;  // a failed batch needs re-initialising
    throw InputError("corrupt or unsupported JPEG data in " + what + " (nvJPEG status " + std::to_string(int(st)) +
                     ")");
  }
}

}  // namespace tw::cuda
