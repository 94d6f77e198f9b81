// The math ops on a GPU (kernels/math/math_cuda.hpp): a two-input step of a
// GPU chain. A read stages both inputs' chains (or host reads) in order,
// makes each input in device memory — by the chain below it, or uploaded —
// and runs one kernel per sample with math.hpp's functions, so the samples
// are the CPU's bit for bit.
#include <cuda_runtime.h>

#include "engine/ops/op_cuda.cuh"
#include "engine/sample_dispatch.hpp"
#include "kernels/math/math.hpp"
#include "kernels/math/math_cuda.hpp"

namespace tw::ops {
namespace {

using cuda_detail::blocks;
using cuda_detail::read_chain_piece;
using cuda_detail::upload_staged;

template <MathOp kOp>
struct Binary {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return math_sample<kOp>(a, b);
  }
};
struct Mask {
  template <class T, class M>
  __device__ T operator()(T a, M m) const {
    return mask_sample(a, m);
  }
};

// The n = samples x h samples of a piece, A's and B's (B's of the pixel
// where it has 1 channel and A more) into dst, whose rows are `pitch` bytes
// apart; a and b are packed. A grid-stride loop: a piece may be taller
// than a grid's second dimension allows.
template <class F, class T, class M>
__global__ void binary_kernel(F f, const T* a, const M* b, uint8_t* dst, size_t pitch, int64_t samples, int64_t n,
                              int ca, int cb) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t y = i / samples, x = i - y * samples;
    reinterpret_cast<T*>(dst + static_cast<size_t>(y) * pitch)[x] = f(a[i], b[cb == ca ? i : i / ca]);
  }
}

template <class F, class T, class M>
class MathCudaSource final : public TileSource, public DeviceTiles {
 public:
  MathCudaSource(F f, std::shared_ptr<const TileSource> a, std::shared_ptr<const TileSource> b, int device,
                 const std::string& name)
      : f_(f), in_{std::move(a), std::move(b)}, pool_(cuda::shared_lanes(device)) {
    info_ = result_info(*in_[0], in_[0]->info().fmt, name);
  }

  const DeviceTiles* device_tiles() const override { return this; }
  int device() const override { return pool_.device(); }

  void stage(const Rect& r, StagedInputs& host) const override {
    for (const auto& in : in_) {
      if (fed_on_device(*in))
        in->device_tiles()->stage(r, host);
      else
        host.add() = in->read(0, r);
    }
  }

  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& c) const override {
    const uint8_t* d[2];
    for (size_t k = 0; k < 2; ++k) {
      const TileSource& in = *in_[k];
      const PixelFormat f = in.info().fmt;
      if (k == 1 && c.host->taken() > 0 && c.host->left() > 0) {
        // A's start uploaded through the lane's pinned buffer, which B's
        // start fills again: A's copies finish first.
        TW_CUDA_CHECK(cudaStreamSynchronize(c.stream));
      }
      if (!fed_on_device(in)) {
        d[k] = upload_staged(c, f, r);
        continue;
      }
      const size_t row = static_cast<size_t>(r.w) * f.bytes_per_pixel();
      uint8_t* buf = c.scratch.alloc(row * static_cast<size_t>(r.h));
      in.device_tiles()->compute(r, buf, row, c);
      d[k] = buf;
    }
    const int ca = in_[0]->info().fmt.channels, cb = in_[1]->info().fmt.channels;
    const int64_t samples = r.w * ca, n = samples * r.h;
    binary_kernel<<<static_cast<unsigned>(std::min<int64_t>(blocks(n, 256), 1 << 16)), 256, 0, c.stream>>>(
        f_, reinterpret_cast<const T*>(d[0]), reinterpret_cast<const M*>(d[1]), dst, pitch, samples, n, ca, cb);
    TW_CUDA_CHECK(cudaGetLastError());
  }

 protected:
  void read_inside(int, const ImageView& whole) const override {
    const size_t bpp = 2 * in_[0]->info().fmt.bytes_per_pixel() + in_[1]->info().fmt.bytes_per_pixel();
    for_each_read_piece(
        whole, bpp, 0, [&](const ImageView& piece) { read_chain_piece(*this, pool_, piece); }, gpu_read_piece_bytes());
  }

 private:
  bool fed_on_device(const TileSource& in) const { return made_on_device(in, pool_.device()); }

  F f_;
  std::shared_ptr<const TileSource> in_[2];
  cuda::LanePool& pool_;
};

template <class F, class T, class M>
std::shared_ptr<const TileSource> make(F f, std::shared_ptr<const TileSource> a, std::shared_ptr<const TileSource> b,
                                       int device, const std::string& name) {
  return std::make_shared<MathCudaSource<F, T, M>>(f, std::move(a), std::move(b), device, name);
}

}  // namespace

std::shared_ptr<const TileSource> make_math_cuda(MathKind kind, std::shared_ptr<const TileSource> a,
                                                 std::shared_ptr<const TileSource> b, int device,
                                                 const std::string& name) {
  const SampleType ta = a->info().fmt.type, tb = b->info().fmt.type;
  return with_sample_type(ta, [&](auto t) {
    using T = decltype(t);
    switch (kind) {
      case MathKind::kSubtract:
        return make<Binary<MathOp::kSubtract>, T, T>({}, a, b, device, name);
      case MathKind::kMin:
        return make<Binary<MathOp::kMin>, T, T>({}, a, b, device, name);
      case MathKind::kMax:
        return make<Binary<MathOp::kMax>, T, T>({}, a, b, device, name);
      case MathKind::kMask:
        break;
    }
    return with_sample_type(tb, [&](auto m) { return make<Mask, T, decltype(m)>({}, a, b, device, name); });
  });
}

}  // namespace tw::ops
