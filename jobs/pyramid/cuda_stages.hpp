#pragma once
// The device-side pieces of the CUDA producer (jobs/pyramid/cuda_producer.cpp)
// that are not the cascade itself: the slots of level-0 JPEG coefficients
// the GPU finishes decoding, the nvJPEG worker thread and its tickets, the
// device-time log. Included by cuda_producer.cpp only.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine/cuda/resources.hpp"
#include "engine/memory.hpp"
#include "io/codec/jpeg_transform/jpeg_idct_cuda.hpp"
#include "jobs/pyramid/level_producer.hpp"
#ifdef TW_HAVE_NVJPEG
#include "engine/cuda/nvjpeg_decoder.hpp"
#endif

namespace tw::cuda_pyramid {

constexpr int64_t kCarryRows = 4;

inline size_t pitch_of(PixelFormat fmt, int64_t cols) {
  return ((static_cast<size_t>(cols) * fmt.bytes_per_pixel()) + 255) & ~size_t{255};
}

inline int64_t floor_div2(int64_t a) {
  return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

enum class Stage { kUpload, kKernel, kDownload, kDecode };

struct TimedSpan {
  std::shared_ptr<cuda::Event> start, end;
  Stage stage;
};

// Device times from pairs of events, summed once they have completed.
class SpanLog {
 public:
  std::shared_ptr<cuda::Event> record(cudaStream_t s) {
    auto e = std::make_shared<cuda::Event>(true);
    e->record(s);
    return e;
  }
  void add(std::shared_ptr<cuda::Event> a, std::shared_ptr<cuda::Event> b, Stage stage) {
    std::lock_guard<std::mutex> l(mu_);
    spans_.push_back({std::move(a), std::move(b), stage});
  }
  void sum_into(DeviceTimes& t) const {
    std::lock_guard<std::mutex> l(mu_);
    for (const TimedSpan& sp : spans_) {
      sp.end->sync();
      const double sec = sp.end->ms_since(*sp.start) * 1e-3;
      (sp.stage == Stage::kUpload   ? t.upload
       : sp.stage == Stage::kKernel ? t.kernel
       : sp.stage == Stage::kDecode ? t.decode
                                    : t.download) += sec;
    }
  }

 private:
  mutable std::mutex mu_;
  std::vector<TimedSpan> spans_;
};

// Which of n band buffers are lent: one is busy from acquire until the
// cascade has read its band (the event given back with it).
class BusySlots {
 public:
  explicit BusySlots(int n) : busy_(static_cast<size_t>(n), false), free_after_(static_cast<size_t>(n)) {}
  // A free one that the GPU no longer reads (waiting for that); -1 if none.
  int acquire() {
    std::shared_ptr<cuda::Event> wait;
    int got = -1;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t i = 0; i < busy_.size() && got < 0; ++i)
        if (!busy_[i]) {
          busy_[i] = true;
          got = static_cast<int>(i);
          wait = free_after_[i];
        }
    }
    if (wait) wait->sync();
    return got;
  }
  void release(int i, std::shared_ptr<cuda::Event> free_after) {
    std::lock_guard<std::mutex> l(mu_);
    free_after_[static_cast<size_t>(i)] = std::move(free_after);
    busy_[static_cast<size_t>(i)] = false;
  }

 private:
  std::vector<bool> busy_;
  std::vector<std::shared_ptr<cuda::Event>> free_after_;
  std::mutex mu_;
};

// Buffers for bands decoded the split way (engine/jpeg_coefs.hpp): per
// slot, the pinned coefficients the CPU fills, their device copy, the
// component planes, and the decoded band the cascade reads.
class CoefSlots : public BusySlots {
 public:
  struct Slot {
    std::unique_ptr<Image> host;  // pinned bytes: coefficients, then quantisation tables
    cuda::DeviceBuffer<uint8_t> coefs, planes, pixels;
    cuda::Stream stream;
  };

  CoefSlots(const JpegCoefLayout& layout, int tiles, size_t pixels_bytes, int n)
      : BusySlots(n), layout_(layout), tiles_(tiles) {
    coef_bytes_ = static_cast<size_t>(tiles) * layout.coefs_per_tile() * sizeof(int16_t);
    const size_t quant_bytes = static_cast<size_t>(tiles) * layout.quant_per_tile() * sizeof(uint16_t);
    slots_.resize(static_cast<size_t>(n));
    for (Slot& s : slots_) {
      // One row of bytes: Image only for its allocator (pinned, 2 MB pages).
      s.host = std::make_unique<Image>(PixelFormat{SampleType::kU8, 1},
                                       Rect(0, 0, static_cast<int64_t>(coef_bytes_ + quant_bytes), 1),
                                       &cuda::pinned_allocator());
      s.coefs = cuda::DeviceBuffer<uint8_t>(coef_bytes_ + quant_bytes);
      s.planes = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(tiles) * jpeg_idct_plane_bytes(layout));
      s.pixels = cuda::DeviceBuffer<uint8_t>(pixels_bytes);
    }
  }

  static size_t device_bytes(const JpegCoefLayout& layout, int tiles, size_t pixels_bytes, int n) {
    const size_t per =
        static_cast<size_t>(tiles) * (layout.coefs_per_tile() * sizeof(int16_t) +
                                      layout.quant_per_tile() * sizeof(uint16_t) + jpeg_idct_plane_bytes(layout)) +
        pixels_bytes;
    return per * static_cast<size_t>(n);
  }

  const JpegCoefLayout& layout() const { return layout_; }
  int tiles() const { return tiles_; }
  size_t coef_bytes() const { return coef_bytes_; }
  Slot& slot(int i) { return slots_[static_cast<size_t>(i)]; }

  // Waits for every slot's copies and kernels (before freeing anything).
  void sync() {
    for (Slot& s : slots_) cudaStreamSynchronize(s.stream.get());
  }

 private:
  JpegCoefLayout layout_;
  int tiles_;
  size_t coef_bytes_ = 0;
  std::vector<Slot> slots_;
};

// Level-0 bands a GPU chain computes into device memory (JpegCoding::
// compute_on_device), level 0's computed columns at pitch0 a row.
class DeviceBandSlots : public BusySlots {
 public:
  DeviceBandSlots(size_t band_bytes, int n) : BusySlots(n), pixels_(static_cast<size_t>(n)) {
    for (auto& p : pixels_) p = cuda::DeviceBuffer<uint8_t>(band_bytes);
  }
  uint8_t* pixels(int i) { return pixels_[static_cast<size_t>(i)].get(); }

 private:
  std::vector<cuda::DeviceBuffer<uint8_t>> pixels_;
};

// A band a GPU chain computed into one of them.
class DeviceBandTicket : public JpegTicket {
 public:
  int slot = -1;
  int64_t rows = 0;
};

#ifdef TW_HAVE_NVJPEG
// Bands waiting for (or in) the GPU decoder: one. The band a free decoder
// takes is still ahead of the cascade; a longer queue made bands wait for
// the JPEG engines that CPU threads would have decoded sooner (measured).
constexpr int kJpegQueue = 1;
// Device buffers for decoded bands: the queue, the band in the cascade, one spare.
constexpr int kJpegBuffers = kJpegQueue + 2;

class CudaTicket : public JpegTicket {
 public:
  int buffer = -1;
  int64_t rows = 0;
  std::vector<cuda::JpegStream> streams;
  std::vector<size_t> offsets;
  std::shared_ptr<cuda::Event> ready;
  std::string error;
  bool done = false;
};

// One thread owns the one nvJPEG decoder: nvjpegDecodeBatched blocks its
// caller while the JPEG engines work, and it must block neither the
// pipeline's serial stage nor the CPU decoders. (Two decoders driven from
// pool threads at once hung the hardware backend in our runs.)
class JpegWorker {
 public:
  JpegWorker(int device, int channels, size_t pitch, int64_t rows, SpanLog& log)
      : device_(device), pitch_(pitch), log_(log), stream_(cuda::Stream::on_device(device)) {
    cuda::DeviceScope scope(device_);
    decoder_ = std::make_unique<cuda::NvJpegDecoder>(channels);
    for (auto& b : buffers_) b.buf = cuda::DeviceBuffer<uint8_t>(pitch * static_cast<size_t>(rows));
    thread_ = std::thread([this] { loop(); });
  }

  ~JpegWorker() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    cuda::DeviceScope scope(device_);
    stream_.sync();
  }

  std::string name() const { return "nvjpeg-" + decoder_->backend(); }
  uint8_t* buffer(int i) const { return buffers_[i].buf.get(); }
  size_t pitch() const { return pitch_; }

  std::shared_ptr<CudaTicket> submit(int64_t y, int64_t rows, const std::vector<JpegTile>& tiles, int64_t col0,
                                     size_t bpp) {
    std::unique_lock<std::mutex> l(mu_);
    if (static_cast<int>(queue_.size()) >= kJpegQueue) return nullptr;
    int free = -1;
    for (int i = 0; i < kJpegBuffers; ++i)
      if (!buffers_[i].busy) free = i;
    if (free < 0) return nullptr;
    buffers_[free].busy = true;
    l.unlock();
    auto t = std::make_shared<CudaTicket>();
    t->buffer = free;
    t->y = y, t->rows = rows;
    for (const JpegTile& tile : tiles) {
      t->streams.push_back({tile.data, tile.size});
      t->offsets.push_back(static_cast<size_t>(tile.x0 - col0) * bpp);
    }
    l.lock();
    queue_.push_back(t);
    l.unlock();
    cv_.notify_all();
    return t;
  }

  // Blocks until the worker has enqueued the ticket's decode.
  void wait(CudaTicket& t) {
    std::unique_lock<std::mutex> l(mu_);
    if (!done_cv_.wait_for(l, std::chrono::minutes(2), [&] { return t.done; }))
      throw InternalError("the GPU JPEG decoder made no progress for 2 minutes");
    if (!t.error.empty()) throw InputError(t.error);
  }

  // The cascade has read the buffer once free_after completes.
  void release(int buffer, std::shared_ptr<cuda::Event> free_after) {
    std::lock_guard<std::mutex> l(mu_);
    buffers_[buffer].free_after = std::move(free_after);
    buffers_[buffer].busy = false;
  }

 private:
  struct Buffer {
    cuda::DeviceBuffer<uint8_t> buf;
    std::shared_ptr<cuda::Event> free_after;
    bool busy = false;
  };

  void loop() {
    cudaSetDevice(device_);
    for (;;) {
      std::shared_ptr<CudaTicket> t;
      std::shared_ptr<cuda::Event> wait_for;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
        // Stopping drops what is queued: on an error path its bytes may be gone.
        if (stop_) return;
        t = queue_.front();
        wait_for = buffers_[t->buffer].free_after;
      }
      try {
        cudaStream_t s = stream_.get();
        if (wait_for) TW_CUDA_CHECK(cudaStreamWaitEvent(s, wait_for->get(), 0));
        auto d0 = log_.record(s);
        decoder_->decode(t->streams, buffers_[t->buffer].buf.get(), pitch_, t->offsets, s,
                         "level-0 tiles at row " + std::to_string(t->y));
        t->ready = log_.record(s);
        log_.add(d0, t->ready, Stage::kDecode);
      } catch (const std::exception& e) {
        t->error = e.what();
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        queue_.pop_front();
        t->done = true;
      }
      done_cv_.notify_all();
    }
  }

  int device_;
  size_t pitch_;
  SpanLog& log_;
  std::unique_ptr<cuda::NvJpegDecoder> decoder_;
  cuda::Stream stream_;
  Buffer buffers_[kJpegBuffers];
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::shared_ptr<CudaTicket>> queue_;
  bool stop_ = false;
  std::thread thread_;
};
#endif

// A band being decoded the split way.
class CoefTicket : public JpegTicket {
 public:
  int slot = -1;
  int64_t rows = 0;
  std::shared_ptr<cuda::Event> ready;
};

}  // namespace tw::cuda_pyramid
