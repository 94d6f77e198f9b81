#pragma once
// Batched JPEG decoding on the GPU with nvJPEG: the hardware decoder where
// the GPU has one (A100, H100), nvJPEG's CUDA decoder elsewhere. Decoded
// pixels land directly in device memory, at offsets the caller chooses (the
// tiles of a band side by side), and never visit the host.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tw::cuda {

struct JpegStream {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

class NvJpegDecoder {
 public:
  // channels: 3 (YCbCr JPEG decoded to interleaved RGB) or 1 (gray).
  // Throws CudaError if nvJPEG cannot be set up.
  explicit NvJpegDecoder(int channels);
  ~NvJpegDecoder();
  NvJpegDecoder(const NvJpegDecoder&) = delete;
  NvJpegDecoder& operator=(const NvJpegDecoder&) = delete;

  // Enqueues the decoding of every stream on `s`; stream i's pixels go to
  // dst + offsets[i], rows `pitch` bytes apart. Throws InputError naming the
  // first stream nvJPEG rejects.
  void decode(const std::vector<JpegStream>& streams, uint8_t* dst, size_t pitch, const std::vector<size_t>& offsets,
              cudaStream_t s, const std::string& what);
  const std::string& backend() const { return backend_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string backend_;
};

}  // namespace tw::cuda
