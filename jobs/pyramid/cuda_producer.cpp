// The pyramid cascade in device memory. Each band of level 0 reaches the
// device on one of two streams (alternating): uploaded from the host, or
// decoded there by nvJPEG. Every lower level computes its rows on the device
// as soon as their inputs exist, and only finished bands (whole rows of
// output tiles) come back, asynchronously, into pinned host buffers.
//
// Ordering: a band's kernels wait for the previous band's kernels (the carry
// rows of each level pass from one to the next), so kernels run one band after
// another while the other stream uploads the next band and downloads the last
// one's results. A device band buffer is rewritten only after its download
// (two bands of that level later, double-buffered) has finished.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine/cuda/resources.hpp"
#include "engine/memory.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct_cuda.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_cuda.hpp"
#include "io/codec/jpeg_transform/jpeg_idct_cuda.hpp"
#include "io/codec/jpeg_transform/jpeg_segments_cuda.hpp"
#include "jobs/pyramid/cuda_stages.hpp"
#include "jobs/pyramid/level_producer.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce_cuda.hpp"
#ifdef TW_HAVE_NVJPEG
#include "engine/cuda/nvjpeg_decoder.hpp"
#endif

namespace tw {
namespace {

using namespace cuda_pyramid;

class CudaProducer;

// A level's split JPEG encode on the device: per band buffer, its tiles'
// coefficients (then their entropy-coded segments) and the entropy coder's
// scratch; the quantisation divisors and the Huffman codes.
struct SplitEncode {
  JpegCoefSpec spec;
  cuda::DeviceBuffer<uint8_t> coefs[2], divisors, huff[2], codes;
};

class CudaCoefBand : public CoefBand {
 public:
  CudaCoefBand(CoefSlots& slots, int slot) : slots_(slots), slot_(slot) {}
  ~CudaCoefBand() override {
    if (slot_ >= 0) slots_.release(slot_, nullptr);
  }
  int take() { return std::exchange(slot_, -1); }

 private:
  CoefSlots& slots_;
  int slot_;
};

class CudaProducer : public LevelProducer, public JpegCoding {
 public:
  CudaProducer(int device, PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows, ImagePool& pool,
               int64_t jpeg_tile)
      : device_(device),
        fmt_(fmt),
        levels_(std::move(levels)),
        T_(band_rows),
        pool_(pool),
        streams_{cuda::Stream::on_device(device), cuda::Stream::on_device(device)} {
    cuda::DeviceScope scope(device_);
    const CascadeLevel& l0 = levels_[0];
    pitch0_ = pitch_of(fmt_, l0.col1 - l0.col0);
    for (auto& b : in_) b = cuda::DeviceBuffer<uint8_t>(pitch0_ * static_cast<size_t>(T_));
    state_.resize(levels_.size());
    for (size_t k = 1; k < levels_.size(); ++k) {
      Level& L = state_[k];
      L.carry_pitch = pitch_of(fmt_, levels_[k - 1].col1 - levels_[k - 1].col0);
      L.band_pitch = pitch_of(fmt_, levels_[k].col1 - levels_[k].col0);
      for (auto& c : L.carry) c = cuda::DeviceBuffer<uint8_t>(L.carry_pitch * kCarryRows);
      const int64_t rows = std::min(T_, levels_[k].height);
      for (auto& b : L.band) b = cuda::DeviceBuffer<uint8_t>(L.band_pitch * static_cast<size_t>(rows));
      // A share of a slide split by rows starts each level at its first row
      // (jobs/pyramid/cascade.hpp, CascadeLevel::row0).
      L.next_out = levels_[k].row0;
      L.band_y0 = levels_[k].row0 / T_ * T_;
    }
    if (jpeg_tile > 0) enable_jpeg(jpeg_tile);
  }

  void enable_jpeg(int64_t jpeg_tile) override {
#ifdef TW_HAVE_NVJPEG
    // Tiles decoded in place are whole tiles: rows hold the last one's padding.
    const CascadeLevel& l0 = levels_[0];
    worker_ = std::make_unique<JpegWorker>(
        device_, fmt_.channels, pitch_of(fmt_, ceil_div(l0.col1 - l0.col0, jpeg_tile) * jpeg_tile), T_, log_);
    live_worker_.store(worker_.get(), std::memory_order_release);
#else
    (void)jpeg_tile;
    throw InputError("this build has no nvJPEG");
#endif
  }

  ~CudaProducer() override {
    // Nothing may still write into buffers we free (or into pinned host bands).
    cuda::DeviceScope scope(device_);
    for (auto& s : streams_) cudaStreamSynchronize(s.get());
    if (coef_slots_) coef_slots_->sync();
  }

  void enable_coefs(const JpegCoefLayout& layout, int slots) override {
    cuda::DeviceScope scope(device_);
    const CascadeLevel& l0 = levels_[0];
    const int tiles = static_cast<int>(ceil_div(l0.col1 - l0.col0, layout.tile));
    auto c = std::make_unique<CoefSlots>(layout, tiles, pitch0_ * static_cast<size_t>(T_), slots);
    coef_slots_ = std::move(c);
    live_coefs_.store(coef_slots_.get(), std::memory_order_release);
  }

  std::shared_ptr<CoefBand> acquire_coefs(int64_t y, int64_t rows) override {
    CoefSlots* cs = live_coefs_.load(std::memory_order_acquire);
    if (!cs) return nullptr;
    const int i = cs->acquire();
    if (i < 0) return nullptr;
    auto b = std::make_shared<CudaCoefBand>(*cs, i);
    b->y = y, b->rows = rows;
    uint8_t* host = cs->slot(i).host->data();
    b->coefs = reinterpret_cast<int16_t*>(host);
    b->quant = reinterpret_cast<uint16_t*>(host + cs->coef_bytes());
    return b;
  }

  std::shared_ptr<JpegTicket> submit_coefs(const std::shared_ptr<CoefBand>& band) override {
    CoefSlots& cs = *live_coefs_.load(std::memory_order_acquire);
    auto& b = static_cast<CudaCoefBand&>(*band);
    auto t = std::make_shared<CoefTicket>();
    t->y = b.y, t->rows = b.rows;
    t->slot = b.take();
    try {
      cuda::DeviceScope scope(device_);
      CoefSlots::Slot& sl = cs.slot(t->slot);
      cudaStream_t s = sl.stream.get();
      const size_t bytes = sl.host->view().row_length_bytes();
      auto d0 = log_.record(s);
      TW_CUDA_CHECK(cudaMemcpyAsync(sl.coefs.get(), sl.host->data(), bytes, cudaMemcpyHostToDevice, s));
      bytes_up_ += bytes;
      JpegIdctLaunch k;
      k.layout = cs.layout();
      k.tiles = cs.tiles();
      k.coefs = reinterpret_cast<const int16_t*>(sl.coefs.get());
      k.quant = reinterpret_cast<const uint16_t*>(sl.coefs.get() + cs.coef_bytes());
      k.planes = sl.planes.get();
      k.out = sl.pixels.get();
      k.out_pitch = pitch0_;
      k.out_w = levels_[0].col1 - levels_[0].col0;
      k.rows = b.rows;
      jpeg_idct_cuda(k, s);
      t->ready = log_.record(s);
      log_.add(d0, t->ready, Stage::kDecode);
    } catch (...) {
      cs.release(t->slot, nullptr);
      throw;
    }
    return t;
  }

  void enable_jpeg_encode(const JpegEncodeSpecs& specs) override {
    TW_ASSERT(token_ == 0);
    cuda::DeviceScope scope(device_);
    for (size_t k = 1; k < levels_.size() && k < specs.size(); ++k) {
      if (!specs[k]) continue;
      state_[k].enc = make_split_encode(*specs[k], levels_[k]);
    }
    // Level 0 too, where the pass asks for it (its pixels computed, not
    // passed through): each band is on the device for the cascade anyway.
    if (!specs.empty() && specs[0]) enc0_ = make_split_encode(*specs[0], levels_[0]);
  }

  // Checked by the padded rows the buffers really take.
  bool enable_device_bands(int slots, size_t room) override {
    const size_t band = pitch0_ * static_cast<size_t>(T_);
    if (slots <= 0 || band * static_cast<size_t>(slots) > room) return false;
    cuda::DeviceScope scope(device_);
    band_slots_ = std::make_unique<DeviceBandSlots>(band, slots);
    return true;
  }

  // Called by the read stage's threads, several bands at once.
  std::shared_ptr<JpegTicket> compute_on_device(int64_t y, int64_t rows,
                                                const std::function<void(uint8_t*, size_t)>& compute) override {
    if (!band_slots_) return nullptr;
    const int i = band_slots_->acquire();
    if (i < 0) return nullptr;
    try {
      compute(band_slots_->pixels(i), pitch0_);
    } catch (...) {
      band_slots_->release(i, nullptr);
      throw;
    }
    auto t = std::make_shared<DeviceBandTicket>();
    t->y = y, t->rows = rows, t->slot = i;
    return t;
  }

  int device() const override {
    return device_;
  }

  std::string jpeg_decoder() const override {
#ifdef TW_HAVE_NVJPEG
    if (JpegWorker* w = live_worker_.load(std::memory_order_acquire)) return w->name();
#endif
    return "";
  }

  void push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) override {
    cuda::DeviceScope scope(device_);
    const int slot = next_slot();
    cudaStream_t s = streams_[slot].get();
    const Image& b = *band0;
    TW_ASSERT(b.rect().x == levels_[0].col0 && b.rect().h <= T_);
    auto up0 = log_.record(s);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(in_[slot].get(), pitch0_, b.data(), b.stride(), b.view().row_length_bytes(),
                                    static_cast<size_t>(b.rect().h), cudaMemcpyHostToDevice, s));
    bytes_up_ += b.view().row_length_bytes() * static_cast<size_t>(b.rect().h);
    auto uploaded = log_.record(s);
    log_.add(up0, uploaded, Stage::kUpload);
    // The caller's band goes back to its pool when its token is written,
    // and the next band is decoded into it: not before the copy has read
    // it. A token that finishes no band of its own would otherwise wait for
    // nothing (seen as a wrong tile of a share's first rows, whose first
    // token finishes nothing, with three shares on one GPU).
    out.push_back({-1, nullptr, [uploaded] { uploaded->sync(); }, nullptr, 0});
    // The band's own tiles transformed on this stream: in_[slot] and
    // enc0_'s buffers [slot] are next written by this stream's next band.
    if (enc0_) transform(*enc0_, slot, 0, in_[slot].get(), pitch0_, b.rect().y, b.rect().h, s, out);
    cascade(s, DeviceRows{in_[slot].get(), pitch0_, b.rect().y, b.rect().h}, out);
  }

  std::shared_ptr<JpegTicket> submit_jpeg(int64_t y, int64_t rows, const std::vector<JpegTile>& tiles) override {
#ifdef TW_HAVE_NVJPEG
    if (JpegWorker* w = live_worker_.load(std::memory_order_acquire))
      return w->submit(y, rows, tiles, levels_[0].col0, fmt_.bytes_per_pixel());
#endif
    return JpegCoding::submit_jpeg(y, rows, tiles);
  }

  void push_submitted(const std::shared_ptr<JpegTicket>& ticket, std::vector<FinishedBand>& out) override {
    if (auto* dt = dynamic_cast<DeviceBandTicket*>(ticket.get())) {
      // As push() after its upload: the band's own tiles, then the cascade;
      // the chain's lanes finished writing it before compute_on_device
      // returned.
      cuda::DeviceScope scope(device_);
      const int slot = next_slot();
      cudaStream_t s = streams_[slot].get();
      uint8_t* band = band_slots_->pixels(dt->slot);
      if (enc0_) transform(*enc0_, slot, 0, band, pitch0_, dt->y, dt->rows, s, out);
      cascade(s, DeviceRows{band, pitch0_, dt->y, dt->rows}, out);
      band_slots_->release(dt->slot, prev_done_);
      return;
    }
    if (auto* ct = dynamic_cast<CoefTicket*>(ticket.get())) {
      CoefSlots& cs = *live_coefs_.load(std::memory_order_acquire);
      cuda::DeviceScope scope(device_);
      cudaStream_t s = streams_[next_slot()].get();
      TW_CUDA_CHECK(cudaStreamWaitEvent(s, ct->ready->get(), 0));
      cascade(s, DeviceRows{cs.slot(ct->slot).pixels.get(), pitch0_, ct->y, ct->rows}, out);
      cs.release(ct->slot, prev_done_);
      return;
    }
#ifdef TW_HAVE_NVJPEG
    JpegWorker* worker = live_worker_.load(std::memory_order_acquire);
    TW_ASSERT(worker);
    auto& t = static_cast<CudaTicket&>(*ticket);
    worker->wait(t);
    cuda::DeviceScope scope(device_);
    cudaStream_t s = streams_[next_slot()].get();
    TW_CUDA_CHECK(cudaStreamWaitEvent(s, t.ready->get(), 0));
    // The compressed bytes stay with the caller's band until decoded.
    auto ready = t.ready;
    out.push_back({-1, nullptr, [ready] { ready->sync(); }});
    cascade(s, DeviceRows{worker->buffer(t.buffer), worker->pitch(), t.y, t.rows}, out);
    worker->release(t.buffer, prev_done_);
#else
    JpegCoding::push_submitted(ticket, out);
#endif
  }

  void adopt(const CascadeSnapshot& snap) override {
    TW_ASSERT(snap.levels.size() == levels_.size() && token_ == 0);
    cuda::DeviceScope scope(device_);
    cudaStream_t s = streams_[0].get();
    const size_t bpp = fmt_.bytes_per_pixel();
    for (size_t k = 1; k < levels_.size(); ++k) {
      const CascadeSnapshot::Level& from = snap.levels[k];
      Level& L = state_[k];
      L.carry_y0 = L.carry_n = 0;
      if (from.carry.rect.h > 0) {
        TW_ASSERT(from.carry.rect.h <= kCarryRows && from.carry.rect.w == levels_[k - 1].col1 - levels_[k - 1].col0);
        TW_CUDA_CHECK(cudaMemcpy2DAsync(L.carry[L.which].get(), L.carry_pitch, from.carry.data, from.carry.stride,
                                        static_cast<size_t>(from.carry.rect.w) * bpp,
                                        static_cast<size_t>(from.carry.rect.h), cudaMemcpyHostToDevice, s));
        L.carry_y0 = from.carry.rect.y, L.carry_n = from.carry.rect.h;
      }
      L.next_out = from.next_out, L.band_y0 = from.band_y0;
      if (from.band.rect.h > 0) {
        TW_ASSERT(from.band.rect.y == from.band_y0 && from.band.rect.w == levels_[k].col1 - levels_[k].col0);
        TW_CUDA_CHECK(cudaMemcpy2DAsync(L.band[L.cur].get(), L.band_pitch, from.band.data, from.band.stride,
                                        static_cast<size_t>(from.band.rect.w) * bpp,
                                        static_cast<size_t>(from.band.rect.h), cudaMemcpyHostToDevice, s));
        L.active = true;
      }
    }
    // The snapshot's memory is the CPU cascade's, gone after this returns.
    streams_[0].sync();
  }

  JpegCoding* jpeg() override {
    return this;
  }

  DeviceTimes device_times() const override {
    DeviceTimes t;
    log_.sum_into(t);
    t.bytes_up = bytes_up_, t.bytes_down = bytes_down_;
    return t;
  }

 private:
  struct Level {
    cuda::DeviceBuffer<uint8_t> carry[2];
    size_t carry_pitch = 0;
    int which = 0;
    int64_t carry_y0 = 0, carry_n = 0;
    cuda::DeviceBuffer<uint8_t> band[2];
    size_t band_pitch = 0;
    std::shared_ptr<cuda::Event> band_free[2];
    int cur = 0;
    bool active = false;
    int64_t band_y0 = 0, next_out = 0;
    std::unique_ptr<SplitEncode> enc;  // the split JPEG encode (enable_jpeg_encode)
  };
  struct Pending {
    int level, buffer;
    int64_t y0, rows;
  };

  int next_slot() {
    return static_cast<int>(token_++ & 1);
  }

  void cascade(cudaStream_t s, const DeviceRows& level0, std::vector<FinishedBand>& out) {
    // Uploads may overlap the previous band's kernels; these kernels may not.
    if (prev_done_) TW_CUDA_CHECK(cudaStreamWaitEvent(s, prev_done_->get(), 0));
    auto k0 = log_.record(s);
    pending_.clear();
    if (levels_.size() > 1) push_level(1, level0, s);
    prev_done_ = log_.record(s);
    log_.add(k0, prev_done_, Stage::kKernel);
    // Finished bands come home after the kernels, so the next band's kernels
    // (which wait only for prev_done_) overlap these copies.
    for (const Pending& p : pending_) {
      Level& L = state_[p.level];
      if (L.enc) {
        L.band_free[p.buffer] =
            transform(*L.enc, p.buffer, p.level, L.band[p.buffer].get(), L.band_pitch, p.y0, p.rows, s, out);
        continue;
      }
      const CascadeLevel& c = levels_[p.level];
      auto host = pool_.acquire(fmt_, Rect(c.col0, p.y0, c.col1 - c.col0, p.rows));
      auto d0 = log_.record(s);
      TW_CUDA_CHECK(cudaMemcpy2DAsync(host->data(), host->stride(), L.band[p.buffer].get(), L.band_pitch,
                                      host->view().row_length_bytes(), static_cast<size_t>(p.rows),
                                      cudaMemcpyDeviceToHost, s));
      bytes_down_ += host->view().row_length_bytes() * static_cast<size_t>(p.rows);
      auto done = log_.record(s);
      log_.add(d0, done, Stage::kDownload);
      L.band_free[p.buffer] = done;
      out.push_back({p.level, host, [done] { done->sync(); }, nullptr, 0});
    }
  }

  static std::unique_ptr<SplitEncode> make_split_encode(const JpegCoefSpec& spec, const CascadeLevel& level) {
    auto e = std::make_unique<SplitEncode>();
    e->spec = spec;
    const size_t bytes = coef_band_bytes(spec, level);
    for (auto& c : e->coefs) c = cuda::DeviceBuffer<uint8_t>(bytes);
    std::vector<uint8_t> div(jpeg_fdct_divisor_bytes(spec.layout));
    jpeg_fdct_divisors(spec.layout, spec.quant.data(), div.data());
    e->divisors = cuda::DeviceBuffer<uint8_t>(div.size());
    TW_CUDA_CHECK(cudaMemcpy(e->divisors.get(), div.data(), div.size(), cudaMemcpyHostToDevice));
    if (gpu_entropy_codes(spec)) {
      const size_t scratch = jpeg_huffman_scratch_bytes(spec.layout, band_tiles(spec, level));
      for (auto& h : e->huff) h = cuda::DeviceBuffer<uint8_t>(scratch);
      const size_t codes = spec.huff.size() * sizeof(JpegHuffCodes);
      e->codes = cuda::DeviceBuffer<uint8_t>(codes);
      TW_CUDA_CHECK(cudaMemcpy(e->codes.get(), spec.huff.data(), codes, cudaMemcpyHostToDevice));
    }
    return e;
  }

  // The JPEG encode of a band of `level` (rows y0.., the level's computed
  // columns at `band`) on the device, into e's buffers [buffer]: the
  // transform, then where the spec has the codes the entropy coding, so
  // that the CPU only puts each tile's stream together (or entropy-codes
  // the few tiles left as coefficients). Returns when the band and the
  // buffers are free again.
  std::shared_ptr<cuda::Event> transform(const SplitEncode& e, int buffer, int level, const uint8_t* band, size_t pitch,
                                         int64_t y0, int64_t rows, cudaStream_t s, std::vector<FinishedBand>& out) {
    const JpegCoefSpec& spec = e.spec;
    uint8_t* coefs = e.coefs[buffer].get();
    const CascadeLevel& c = levels_[static_cast<size_t>(level)];
    const size_t bytes = coef_band_bytes(spec, c);
    auto host = pool_.acquire(PixelFormat{SampleType::kU8, 1}, Rect(0, 0, static_cast<int64_t>(bytes), 1));
    auto d0 = log_.record(s);
    JpegFdctLaunch f;
    f.layout = spec.layout;
    f.band = band;
    f.pitch = pitch;
    f.width = c.col1 - c.col0;
    f.rows = rows;
    f.tiles = static_cast<int>(ceil_div(c.col1 - c.col0, f.layout.tile));
    f.divisors = reinterpret_cast<const jfdct::Divisor*>(e.divisors.get());
    f.coefs = reinterpret_cast<int16_t*>(coefs);
    jpeg_fdct_cuda(f, s);
    const size_t sizes_at = bytes - static_cast<size_t>(f.tiles) * sizeof(uint32_t);
    const size_t offsets_at = sizes_at - static_cast<size_t>(f.tiles) * sizeof(uint64_t);
    if (e.huff[buffer].get()) {
      JpegHuffLaunch h;
      h.layout = spec.layout;
      h.tiles = f.tiles;
      h.coefs = f.coefs;
      h.sizes = reinterpret_cast<uint32_t*>(coefs + sizes_at);
      h.codes = reinterpret_cast<const JpegHuffCodes*>(e.codes.get());
      h.scratch = e.huff[buffer].get();
      jpeg_huffman_cuda(h, s);
    }
    // Entropy-coded tiles come home packed, written by the GPU itself where
    // it can reach the pinned buffer; otherwise (and for bare coefficients)
    // the whole buffer is copied.
    uint8_t* packed = e.huff[buffer].get() ? cuda::mapped_for_device(host->data()) : nullptr;
    if (packed) {
      JpegSegmentsLaunch g;
      g.rooms = coefs;
      g.room = spec.layout.coefs_per_tile() * sizeof(int16_t);
      g.sizes = reinterpret_cast<const uint32_t*>(coefs + sizes_at);
      g.tiles = f.tiles;
      g.out = packed;
      g.out_offsets = reinterpret_cast<uint64_t*>(packed + offsets_at);
      g.out_sizes = reinterpret_cast<uint32_t*>(packed + sizes_at);
      jpeg_gather_segments_cuda(g, s);
    } else {
      TW_CUDA_CHECK(cudaMemcpyAsync(host->data(), coefs, bytes, cudaMemcpyDeviceToHost, s));
      bytes_down_ += bytes;
    }
    auto done = log_.record(s);
    log_.add(d0, done, Stage::kDownload);
    FinishedBand fb;
    fb.level = level;
    fb.coefs = host;
    const auto* sizes = e.huff[buffer].get() ? reinterpret_cast<const uint32_t*>(host->data() + sizes_at) : nullptr;
    fb.entropy_sizes = sizes;
    fb.y = y0;
    if (packed) {
      const auto* offsets = reinterpret_cast<const uint64_t*>(host->data() + offsets_at);
      fb.entropy_offsets = offsets;
      const auto last = static_cast<size_t>(f.tiles - 1);
      const size_t room = spec.layout.coefs_per_tile() * sizeof(int16_t), index = bytes - offsets_at;
      fb.wait = [this, done, sizes, offsets, last, room, index] {
        done->sync();
        bytes_down_ += offsets[last] + (sizes[last] == kJpegTileAsCoefficients ? room : sizes[last]) + index;
      };
    } else {
      fb.wait = [done] { done->sync(); };
    }
    out.push_back(std::move(fb));
    return done;
  }

  void push_level(int k, const DeviceRows& chunk, cudaStream_t s) {
    Level& L = state_[k];
    const CascadeLevel& in = levels_[k - 1];
    const CascadeLevel& out = levels_[k];
    const int64_t a = chunk.y0, b = chunk.y0 + chunk.n;
    int64_t y_end = b == in.height ? out.height : floor_div2(b - 3) + 1;
    y_end = std::min(y_end, out.height);
    const DeviceRows carry{L.carry[L.which].get(), L.carry_pitch, L.carry_y0, L.carry_n};
    TW_ASSERT(L.carry_n == 0 || L.carry_y0 + L.carry_n == a);

    int64_t y = L.next_out;
    while (y < y_end) {
      const int64_t rows = std::min(T_, out.height - L.band_y0);
      if (!L.active) {
        if (L.band_free[L.cur]) TW_CUDA_CHECK(cudaStreamWaitEvent(s, L.band_free[L.cur]->get(), 0));
        L.active = true;
      }
      const int64_t seg_end = std::min(y_end, L.band_y0 + rows);
      ReduceLaunch r;
      r.fmt = fmt_;
      r.in_width = in.width, r.in_height = in.height, r.in_x0 = in.col0, r.in_w = in.col1 - in.col0;
      r.carry = carry, r.chunk = chunk;
      r.out = L.band[L.cur].get(), r.out_pitch = L.band_pitch, r.out_y0 = L.band_y0, r.out_x0 = out.col0;
      r.y_begin = y, r.y_end = seg_end, r.x_begin = out.col0, r.x_end = out.col1;
      reduce_rows_cuda(r, s);
      y = seg_end;
      if (seg_end == L.band_y0 + rows) {
        pending_.push_back({k, L.cur, L.band_y0, rows});
        if (k + 1 < static_cast<int>(levels_.size()))
          push_level(k + 1, DeviceRows{L.band[L.cur].get(), L.band_pitch, L.band_y0, rows}, s);
        L.active = false;
        L.band_y0 = seg_end;
        L.cur ^= 1;
      }
    }
    L.next_out = y;  // not y_end: a level starting below row 0 may not have reached its first row yet

    // Carry the last rows (from the old carry and/or this chunk) forward.
    const int64_t keep0 = std::max(b - kCarryRows, L.carry_n ? L.carry_y0 : a);
    uint8_t* dst = L.carry[L.which ^ 1].get();
    const size_t row_bytes = static_cast<size_t>(in.col1 - in.col0) * fmt_.bytes_per_pixel();
    if (keep0 < a)
      TW_CUDA_CHECK(cudaMemcpy2DAsync(dst, L.carry_pitch, carry.data + size_t(keep0 - carry.y0) * carry.pitch,
                                      carry.pitch, row_bytes, static_cast<size_t>(a - keep0), cudaMemcpyDeviceToDevice,
                                      s));
    const int64_t c0 = std::max(keep0, a);
    if (c0 < b)
      TW_CUDA_CHECK(cudaMemcpy2DAsync(dst + size_t(c0 - keep0) * L.carry_pitch, L.carry_pitch,
                                      chunk.data + size_t(c0 - a) * chunk.pitch, chunk.pitch, row_bytes,
                                      static_cast<size_t>(b - c0), cudaMemcpyDeviceToDevice, s));
    L.which ^= 1;
    L.carry_y0 = keep0;
    L.carry_n = b - keep0;
  }

  int device_;
  PixelFormat fmt_;
  std::vector<CascadeLevel> levels_;
  int64_t T_;
  ImagePool& pool_;
  cuda::Stream streams_[2];
  cuda::DeviceBuffer<uint8_t> in_[2];
  size_t pitch0_ = 0;
  std::vector<Level> state_;
  std::unique_ptr<SplitEncode> enc0_;  // level 0's split encode (enable_jpeg_encode with a spec at 0)
  std::vector<Pending> pending_;
  std::shared_ptr<cuda::Event> prev_done_;
  uint64_t token_ = 0;
  SpanLog log_;
  std::atomic<uint64_t> bytes_up_{0};    // submit_coefs adds from pipeline threads
  std::atomic<uint64_t> bytes_down_{0};  // the encode stage adds a packed band's bytes when it has them
  // Set once, possibly while the pipeline runs (like the JPEG worker).
  std::unique_ptr<CoefSlots> coef_slots_;
  std::unique_ptr<DeviceBandSlots> band_slots_;  // set before the first band (enable_device_bands)
  std::atomic<CoefSlots*> live_coefs_{nullptr};
#ifdef TW_HAVE_NVJPEG
  // Set once, possibly while the pipeline runs (enable_jpeg from the thread
  // that started CUDA); the pipeline reads live_worker_.
  std::unique_ptr<JpegWorker> worker_;  // destroyed first: its thread stops before the rest goes
  std::atomic<JpegWorker*> live_worker_{nullptr};
#endif
};

}  // namespace

const HostAllocator* gpu_host_allocator() {
  return &cuda::pinned_allocator();
}

size_t cuda_producer_bytes(PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows) {
  size_t n = 2 * pitch_of(fmt, levels[0].col1 - levels[0].col0) * static_cast<size_t>(band_rows);
  for (size_t k = 1; k < levels.size(); ++k) {
    n += 2 * pitch_of(fmt, levels[k - 1].col1 - levels[k - 1].col0) * kCarryRows;
    n +=
        2 * pitch_of(fmt, levels[k].col1 - levels[k].col0) * static_cast<size_t>(std::min(band_rows, levels[k].height));
  }
  return n;
}

size_t cuda_encode_bytes(const JpegEncodeSpecs& specs, const std::vector<CascadeLevel>& levels) {
  size_t n = 0;
  for (size_t k = 0; k < levels.size() && k < specs.size(); ++k)
    if (specs[k]) {
      n += 2 * coef_band_bytes(*specs[k], levels[k]) + jpeg_fdct_divisor_bytes(specs[k]->layout);
      if (gpu_entropy_codes(*specs[k]))
        n += 2 * jpeg_huffman_scratch_bytes(specs[k]->layout, band_tiles(*specs[k], levels[k])) +
             specs[k]->huff.size() * sizeof(JpegHuffCodes);
    }
  return n;
}

size_t cuda_coef_bytes(PixelFormat fmt, const CascadeLevel& level0, int64_t band_rows, const JpegCoefLayout& layout,
                       int slots) {
  const int tiles = static_cast<int>(ceil_div(level0.col1 - level0.col0, layout.tile));
  return CoefSlots::device_bytes(layout, tiles,
                                 pitch_of(fmt, level0.col1 - level0.col0) * static_cast<size_t>(band_rows), slots);
}

size_t cuda_jpeg_bytes(PixelFormat fmt, const CascadeLevel& level0, int64_t band_rows, int64_t tile) {
#ifdef TW_HAVE_NVJPEG
  return kJpegBuffers * pitch_of(fmt, ceil_div(level0.col1 - level0.col0, tile) * tile) *
         static_cast<size_t>(band_rows);
#else
  (void)fmt, (void)level0, (void)band_rows, (void)tile;
  return 0;
#endif
}

bool cuda_can_decode(const RawTileFormat& f) {
#ifdef TW_HAVE_NVJPEG
  // nvJPEG reads YCbCr (the TIFF case) or gray; RGB-coded JPEG would be
  // colour-converted wrongly, and TIFF's JPEG is 8-bit.
  return f.codec == Codec::kJpeg && f.bits_per_sample == 8 &&
         ((f.samples_per_pixel == 3 && f.photometric == 6) || (f.samples_per_pixel == 1 && f.photometric == 1));
#else
  (void)f;
  return false;
#endif
}

std::unique_ptr<LevelProducer> make_cuda_producer(int device, PixelFormat fmt, std::vector<CascadeLevel> levels,
                                                  int64_t band_rows, ImagePool& host_pool, int64_t jpeg_tile) {
  return std::make_unique<CudaProducer>(device, fmt, std::move(levels), band_rows, host_pool, jpeg_tile);
}

}  // namespace tw
