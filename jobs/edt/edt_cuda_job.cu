// The banded GPU EDT driver (edt_cuda.hpp): host chunks through pinned
// staging buffers, the kernels of edt_cuda_kernels.hpp band by band.
#include <cuda_runtime.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "engine/bit_plane.hpp"
#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "jobs/edt/edt_cuda_job.hpp"
#include "jobs/edt/edt_support.hpp"
#include "kernels/edt/edt_cuda_kernels.hpp"

namespace tw {
namespace {

// Chunked copies between host rasters and a band on the device, through two
// pinned staging buffers so that preparing one chunk overlaps copying the
// other.
class Staging {
 public:
  Staging(int64_t w, int64_t chunk_rows, cudaStream_t s) : w_(w), chunk_(chunk_rows), s_(s) {
    for (auto& b : buf_) b = cuda::PinnedBuffer<uint8_t>(static_cast<size_t>(w * chunk_rows * 4));
    slots_[1].index = 1;
  }

  // fill(view) writes rows view.rect of the host side into the staging view.
  template <class Fill>
  void upload(PixelFormat fmt, int64_t y0, int64_t rows, void* dev, Fill&& fill) {
    const size_t px = fmt.bytes_per_pixel();
    for (int64_t cy = y0; cy < y0 + rows; cy += chunk_) {
      const int64_t cr = std::min(chunk_, y0 + rows - cy);
      Slot& sl = take();
      const ImageView v{fmt, Rect(0, cy, w_, cr), static_cast<size_t>(w_) * px, buf_[sl.index].get()};
      fill(v);
      sl.t0.record(s_);
      TW_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(dev) + (cy - y0) * w_ * px, v.data, cr * w_ * px,
                                    cudaMemcpyHostToDevice, s_));
      count_uploaded(cr * w_ * px);
      sl.t1.record(s_);
      sl.busy = true;
    }
  }

  // sink(view) consumes each chunk of rows once it is on the host.
  template <class Sink>
  void download(PixelFormat fmt, int64_t y0, int64_t rows, const void* dev, Sink&& sink) {
    const size_t px = fmt.bytes_per_pixel();
    ImageView pending{};
    int pending_slot = -1;
    for (int64_t cy = y0; cy < y0 + rows; cy += chunk_) {
      const int64_t cr = std::min(chunk_, y0 + rows - cy);
      Slot& sl = take();
      const ImageView v{fmt, Rect(0, cy, w_, cr), static_cast<size_t>(w_) * px, buf_[sl.index].get()};
      sl.t0.record(s_);
      TW_CUDA_CHECK(cudaMemcpyAsync(v.data, static_cast<const uint8_t*>(dev) + (cy - y0) * w_ * px, cr * w_ * px,
                                    cudaMemcpyDeviceToHost, s_));
      count_downloaded(cr * w_ * px);
      sl.t1.record(s_);
      sl.busy = true;
      if (pending_slot >= 0) finish(pending_slot), sink(pending);
      pending = v, pending_slot = sl.index;
    }
    if (pending_slot >= 0) finish(pending_slot), sink(pending);
  }

  void drain() {
    for (int k = 0; k < 2; ++k) finish(k);
  }
  double seconds() const { return ms_ * 1e-3; }

 private:
  struct Slot {
    int index = 0;
    bool busy = false;
    cuda::Event t0, t1;
  };
  Slot& take() {
    next_ ^= 1;
    finish(next_);
    return slots_[next_];
  }
  void finish(int k) {
    Slot& sl = slots_[k];
    if (!sl.busy) return;
    sl.t1.sync();
    ms_ += sl.t1.ms_since(sl.t0);
    sl.busy = false;
  }

  int64_t w_, chunk_;
  cudaStream_t s_;
  cuda::PinnedBuffer<uint8_t> buf_[2];
  Slot slots_[2];
  int next_ = 1;
  double ms_ = 0;
};

// Foreground pixels of rows y0 .. y0 + rows - 1 of a bit plane whose set
// bits are foreground where `set` is 1 and clear bits where `clear` is 1.
int64_t foreground_in_bits(const BitPlane& b, int64_t y0, int64_t rows, bool set, bool clear) {
  if (set == clear) return set ? rows * b.width : 0;
  std::atomic<int64_t> ones{0};
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t r) {
    const uint32_t* row = b.words + (y0 + r + 1) * b.pitch;
    int64_t n = 0;
    for (int64_t k = 1; k < b.pitch; ++k) n += __builtin_popcount(row[k]);  // bits past the width are zero
    ones += n;
  });
  return set ? ones.load() : rows * b.width - ones.load();
}

}  // namespace

std::shared_ptr<const TileSource> euclidean_distance_cuda(const TileSource& src, const EdtCudaJob& job,
                                                          EdtStats* stats) {
  const auto t_start = std::chrono::steady_clock::now();
  const LevelInfo& l0 = src.level(0);
  const int64_t W = l0.width, H = l0.height;
  if (W >= (int64_t{1} << 20) || H >= (int64_t{1} << 20))
    throw InputError("the GPU distance transform handles sides below 1048576 pixels; this image is " +
                     std::to_string(W) + "x" + std::to_string(H) + " (use --device cpu)");
  cuda::DeviceScope scope(job.device);
  size_t free_bytes = 0, total_bytes = 0;
  TW_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t budget = gpu_memory_budget(job.gpu_memory, free_bytes);

  // Device memory: a band of rows (input flags, distances below, column
  // distances that become the result in place), the segment summaries, the
  // carries, and row scratch where rows are too wide for shared memory.
  const edt_gpu::RowPlan plan = edt_gpu::plan_rows(W, H, job.device);
  // A binary image held as bits (a whole-image reconstruction's result) goes
  // up as its bits, an eighth of its bytes, and is expanded on the device.
  const BitPlane* bits = src.bit_plane();
  if (bits && (bits->width != W || bits->height != H || !bits->words)) bits = nullptr;
  const int64_t bit_pitch = bits ? bits->pitch : 0;
  const size_t fixed = edt_gpu::fixed_bytes(W, plan),
               per_row = edt_gpu::bytes_per_band_row(W) + static_cast<size_t>(bit_pitch) * 4;
  const int64_t kSeg = edt_gpu::kSeg;
  if (budget < fixed + per_row * kSeg)
    throw InputError("--gpu-memory " + format_bytes(budget) + " is too small for a distance transform " +
                     std::to_string(W) + " pixels wide (it needs " + format_bytes(fixed + per_row * kSeg) + ")");
  int64_t band = static_cast<int64_t>((budget - fixed) / per_row);
  band = band >= H ? H : band / kSeg * kSeg;
  const bool single = band == H;
  const int64_t nseg_max = (band + kSeg - 1) / kSeg;
  const size_t cells = static_cast<size_t>(band * W);
  cuda::DeviceBuffer<uint8_t> fg(cells);
  cuda::DeviceBuffer<uint32_t> band_bits(bits ? static_cast<size_t>(band * bit_pitch) : 0);
  cuda::DeviceBuffer<int32_t> below(cells), g(cells), seg_a(static_cast<size_t>(nseg_max * W)),
      seg_b(static_cast<size_t>(nseg_max * W)), carry_down(static_cast<size_t>(W)), carry_up(static_cast<size_t>(W)),
      scratch(static_cast<size_t>(plan.scratch_blocks) * plan.row_bytes / 4);
  edt_gpu::Workspace ws;
  ws.w = W, ws.below = below.get(), ws.g = g.get(), ws.seg_a = seg_a.get(), ws.seg_b = seg_b.get();
  ws.carry_down = carry_down.get(), ws.carry_up = carry_up.get(), ws.scratch = scratch.get(), ws.plan = plan;
  cuda::Stream stream;
  cudaStream_t s = stream.get();
  edt_gpu::reset_carries(ws, s);

  // Host side: chunks of rows within a quarter of the budget.
  const PixelFormat in_fmt = src.info().fmt;
  const int64_t host_row = W * static_cast<int64_t>(in_fmt.bytes_per_pixel() + 4 + 4);
  const int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(job.memory / 4) / std::max<int64_t>(host_row, 1), 1,
                                            std::min<int64_t>(band, 1024));
  Staging stage(W, chunk, s);
  const size_t pixels = static_cast<size_t>(W) * static_cast<size_t>(H);
  const PixelFormat i32{SampleType::kI32, 1}, f32{SampleType::kF32, 1};
  std::unique_ptr<Spillable> below_host;
  if (!single) below_host = std::make_unique<Spillable>(i32, W, H, pixels * 4 <= job.memory / 4, job.scratch_near);
  const bool keep = single && job.keep_on_device;
  std::unique_ptr<Spillable> out;
  if (!keep) out = std::make_unique<Spillable>(f32, W, H, pixels * 4 <= job.memory / 4, job.scratch_near);
  std::atomic<int64_t> n_fg{0};
  double kernel_ms = 0, bits_ms = 0;
  cuda::Event k0, k1;
  auto timed = [&](auto&& launch) {
    k0.record(s);
    launch();
    k1.record(s);
    k1.sync();
    kernel_ms += k1.ms_since(k0);
  };

  // Pass 1, bottom-up: distances to the nearest background at or below.
  for (int64_t y1 = H; y1 > 0; y1 -= band) {
    const int64_t y0 = std::max<int64_t>(0, y1 - band), rows = y1 - y0;
    if (bits) {
      // Row y of the plane is y + 1; pixels read as bits->on or ->off, and
      // are foreground where that value is above the threshold.
      const uint8_t set = bits->on > job.params.threshold, clear = bits->off > job.params.threshold;
      const size_t bytes = static_cast<size_t>(rows * bit_pitch) * 4;
      cuda::Event b0, b1;
      b0.record(s);
      TW_CUDA_CHECK(
          cudaMemcpyAsync(band_bits.get(), bits->words + (y0 + 1) * bit_pitch, bytes, cudaMemcpyHostToDevice, s));
      count_uploaded(bytes);
      b1.record(s);
      b1.sync();
      bits_ms += b1.ms_since(b0);
      timed([&] { edt_gpu::bits_to_flags(band_bits.get(), bit_pitch, int(rows), ws, set, clear, fg.get(), s); });
      n_fg += foreground_in_bits(*bits, y0, rows, set, clear);
    } else {
      stage.upload(kGray8, y0, rows, fg.get(), [&](const ImageView& v) {
        // Bands of rows read in parallel: one read of a chunk across a
        // 45056-wide store took a thread 1.4 s of a 2-GP chain's EDT.
        constexpr int64_t kRows = 64;
        tbb::parallel_for(int64_t{0}, (v.rect.h + kRows - 1) / kRows, [&](int64_t b) {
          const Rect br(v.rect.x, v.rect.y + b * kRows, v.rect.w, std::min(kRows, v.rect.h - b * kRows));
          const Image in = src.read(0, br);
          int64_t n = 0;
          for (int64_t r = 0; r < br.h; ++r) n += foreground_row(in, job.params.threshold, v.row<uint8_t>(br.y + r), r);
          n_fg += n;
        });
      });
    }
    timed([&] { edt_gpu::band_below(fg.get(), int(rows), int(y0), ws, s); });
    if (!single) stage.download(i32, y0, rows, below.get(), [&](const ImageView& v) { below_host->write(v); });
  }
  // Pass 2, top-down: column distances, then the row pass, band by band.
  std::shared_ptr<const TileSource> result;
  if (keep) {
    // The distances are computed into g in place; g outlives this call as
    // the result (the other buffers go now).
    float* dist = nullptr;
    timed([&] { dist = edt_gpu::band_distance(int(H), 0, ws, s); });
    const int dev = job.device;
    std::shared_ptr<void> owner(new cuda::DeviceBuffer<int32_t>(std::move(g)), [dev](void* b) {
      cuda::DeviceScope scope(dev);
      delete static_cast<cuda::DeviceBuffer<int32_t>*>(b);
    });
    DeviceImage img;
    img.device = dev, img.data = reinterpret_cast<uint8_t*>(dist), img.pitch = static_cast<size_t>(W) * 4;
    img.fmt = f32, img.width = W, img.height = H;
    result = make_device_image_source(img, std::move(owner), "distances (device)");
  }
  for (int64_t y0 = 0; y0 < H && !result; y0 += band) {
    const int64_t rows = std::min(band, H - y0);
    if (!single)
      stage.upload(i32, y0, rows, below.get(),
                   [&](const ImageView& v) { copy_overlap(below_host->read(v.rect).view(), v); });
    float* dist = nullptr;
    timed([&] { dist = edt_gpu::band_distance(int(rows), int(y0), ws, s); });
    stage.download(f32, y0, rows, dist, [&](const ImageView& v) { out->write(v); });
  }
  stage.drain();
  stream.sync();  // the result's readers use streams of their own
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    stats->foreground = static_cast<uint64_t>(n_fg.load());
    stats->background = static_cast<uint64_t>(W * H - n_fg.load());
    stats->gpu_kernel_seconds = kernel_ms * 1e-3;
    stats->gpu_transfer_seconds = stage.seconds() + bits_ms * 1e-3;
    stats->gpu_bands = (H + band - 1) / band;
    stats->on_device = result != nullptr;
    stats->bits_input = bits != nullptr;
  }
  return result ? result : out->source();
}

}  // namespace tw
