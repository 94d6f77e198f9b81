#include "engine/cuda/device_jpeg_coefs.hpp"

#include <cuda_runtime.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/error.hpp"
#include "engine/trace.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode_cuda.hpp"

namespace tw {
namespace {

// A tile as read for a batch: its stream and headers, or its coefficients
// decoded here.
struct Read {
  std::vector<uint8_t> bytes;
  JpegScanHead head;
  bool gpu = false;
  bool later = false;           // headers read, but decoded here
  std::vector<uint16_t> quant;  // of a tile decoded here
};

bool same_tables(const JpegScanHead& a, const JpegScanHead& b, int comps) {
  for (int c = 0; c < comps; ++c)
    if (std::memcmp(&a.dc[c], &b.dc[c], sizeof(JpegHuffSpec)) || std::memcmp(&a.ac[c], &b.ac[c], sizeof(JpegHuffSpec)))
      return false;
  return true;
}

class Decoder {
 public:
  Decoder(const TileSource& src, const JpegCoefLayout& layout, int device, DeviceJpegCoefs& out)
      : raw_(*src.raw_tiles()),
        layout_(layout),
        cpt_(layout.coefs_per_tile()),
        qpt_(layout.quant_per_tile()),
        device_(device),
        out_(out),
        stream_(cuda::Stream::on_device(device)) {}

  // Tiles [t0, t1): false where one is not laid out as the level's first.
  bool batch(int64_t t0, int64_t t1) {
    const int64_t n = t1 - t0;
    const cudaStream_t s = stream_.get();
    int16_t* coefs = const_cast<int16_t*>(out_.coefs) + static_cast<size_t>(t0) * cpt_;
    // Zeros first (the kernel writes only non-zero values), so that tiles
    // decoded here can go up as soon as they are.
    TW_CUDA_CHECK(cudaMemsetAsync(coefs, 0, static_cast<size_t>(n) * cpt_ * sizeof(int16_t), s));
    TW_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<Read> reads(static_cast<size_t>(n));
    std::atomic<bool> fits{true};
    tbb::parallel_for(int64_t{0}, n, [&](int64_t i) {
      if (!fits.load(std::memory_order_relaxed)) return;
      const int64_t t = t0 + i, tx = t % out_.across, ty = t / out_.across;
      Read& r = reads[static_cast<size_t>(i)];
      r.bytes = raw_.read_raw_tile(0, tx, ty);
      r.gpu = r.bytes.size() <= UINT32_MAX && raw_.raw_tile_scan_head(0, tx, ty, r.bytes, layout_, r.head);
      if (!r.gpu && !decode_here(t, r)) fits.store(false, std::memory_order_relaxed);
    });
    if (!fits.load()) return false;
    // The table sets (one, as a rule: a level's tiles share JPEGTables),
    // the records, the streams side by side and the quantisation tables.
    std::vector<JpegDecodeTile> rec(static_cast<size_t>(n), JpegDecodeTile{0, 0, 0, kJpegDecodeNoSet});
    std::vector<uint16_t> quant(static_cast<size_t>(n) * qpt_);
    // Places first (in order: cheap), then the bytes copied on all threads.
    uint64_t size = 0;
    int64_t last = -1;
    for (int64_t i = 0; i < n; ++i) {
      Read& r = reads[static_cast<size_t>(i)];
      if (!r.gpu) continue;
      const int64_t set = last >= 0 && same_tables(sets_[static_cast<size_t>(last)], r.head, layout_.components)
                              ? last
                              : set_of(r.head);
      if (set < 0 || size + r.bytes.size() > UINT32_MAX) {
        r.gpu = false;
        r.later = true;  // a table libjpeg refuses, or past 4 GB of streams: decoded here after all
        continue;
      }
      last = set;
      rec[static_cast<size_t>(i)] = JpegDecodeTile{static_cast<uint32_t>(size), static_cast<uint32_t>(r.bytes.size()),
                                                   r.head.scan_offset, static_cast<uint32_t>(set)};
      size += r.bytes.size();
    }
    std::unique_ptr<uint8_t[]> bytes(new uint8_t[std::max<uint64_t>(size, 1)]);  // not zeroed: all written
    std::atomic<bool> fits_after{true};
    tbb::parallel_for(int64_t{0}, n, [&](int64_t i) {
      Read& r = reads[static_cast<size_t>(i)];
      const JpegDecodeTile& d = rec[static_cast<size_t>(i)];
      uint16_t* q = quant.data() + static_cast<size_t>(i) * qpt_;
      if (d.set != kJpegDecodeNoSet) {
        std::memcpy(bytes.get() + d.offset, r.bytes.data(), r.bytes.size());
        std::copy(r.head.quant, r.head.quant + qpt_, q);
        return;
      }
      if (r.later && !decode_here(t0 + i, r)) fits_after.store(false, std::memory_order_relaxed);
      std::copy(r.quant.begin(), r.quant.end(), q);
    });
    if (!fits_after.load()) return false;
    TW_CUDA_CHECK(cudaMemcpyAsync(const_cast<uint16_t*>(out_.quant) + static_cast<size_t>(t0) * qpt_, quant.data(),
                                  quant.size() * sizeof(uint16_t), cudaMemcpyHostToDevice, s));
    cuda::DeviceBuffer<uint8_t> d_bytes(std::max<uint64_t>(1, size));
    cuda::DeviceBuffer<JpegDecodeTile> d_rec(rec.size());
    cuda::DeviceBuffer<JpegHuffDecTable> d_tables(std::max<size_t>(1, tables_.size()));
    cuda::DeviceBuffer<uint32_t> d_status(rec.size());
    TW_CUDA_CHECK(cudaMemcpyAsync(d_bytes.get(), bytes.get(), size, cudaMemcpyHostToDevice, s));
    TW_CUDA_CHECK(cudaMemcpyAsync(d_rec.get(), rec.data(), d_rec.bytes(), cudaMemcpyHostToDevice, s));
    TW_CUDA_CHECK(cudaMemcpyAsync(d_tables.get(), tables_.data(), tables_.size() * sizeof(JpegHuffDecTable),
                                  cudaMemcpyHostToDevice, s));
    JpegDecodeLaunch a;
    a.layout = layout_;
    a.tiles = static_cast<int>(n);
    a.bytes = d_bytes.get();
    a.tile = d_rec.get();
    a.tables = d_tables.get();
    a.coefs = coefs;
    a.status = d_status.get();
    a.zeroed = true;
    jpeg_decode_cuda(a, s);
    std::vector<uint32_t> status(rec.size());
    TW_CUDA_CHECK(cudaMemcpyAsync(status.data(), d_status.get(), d_status.bytes(), cudaMemcpyDeviceToHost, s));
    TW_CUDA_CHECK(cudaStreamSynchronize(s));
    // What the GPU gave up on is libjpeg's, which reports damage.
    std::vector<int64_t> again;
    for (int64_t i = 0; i < n; ++i) {
      if (rec[static_cast<size_t>(i)].set == kJpegDecodeNoSet) continue;
      if (status[static_cast<size_t>(i)] == kJpegDecodeOk)
        ++out_.gpu_tiles;
      else
        again.push_back(i);
    }
    // The kernel wrote a tile it gave up on only in part: zeros again first.
    for (const int64_t i : again)
      TW_CUDA_CHECK(cudaMemsetAsync(coefs + static_cast<size_t>(i) * cpt_, 0, cpt_ * sizeof(int16_t), s));
    TW_CUDA_CHECK(cudaStreamSynchronize(s));
    tbb::parallel_for(size_t{0}, again.size(), [&](size_t k) {
      if (!decode_here(t0 + again[k], reads[static_cast<size_t>(again[k])]))
        throw InternalError("a JPEG tile whose headers fit its level's layout does not decode so");
    });
    return true;
  }

 private:
  // libjpeg's entropy decoding on the CPU, the coefficients and
  // quantisation table sent up at once (so a batch never holds many);
  // false where the tile is not laid out as the level's first.
  bool decode_here(int64_t t, Read& r) {
    std::vector<int16_t> coefs(cpt_);
    std::vector<uint16_t> quant(qpt_);
    if (!raw_.decode_raw_tile_coefficients(0, t % out_.across, t / out_.across, r.bytes, layout_, coefs.data(),
                                           quant.data()))
      return false;
    cuda::DeviceScope scope(device_);
    TW_CUDA_CHECK(cudaMemcpy(const_cast<int16_t*>(out_.coefs) + static_cast<size_t>(t) * cpt_, coefs.data(),
                             cpt_ * sizeof(int16_t), cudaMemcpyHostToDevice));
    TW_CUDA_CHECK(cudaMemcpy(const_cast<uint16_t*>(out_.quant) + static_cast<size_t>(t) * qpt_, quant.data(),
                             qpt_ * sizeof(uint16_t), cudaMemcpyHostToDevice));
    r.quant = std::move(quant);
    cpu_tiles_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // The index of the tile's table set, added where new; -1 where libjpeg
  // refuses a table (the tile is decoded here then, and reported).
  int64_t set_of(const JpegScanHead& h) {
    const int comps = layout_.components;
    for (size_t k = 0; k < sets_.size(); ++k)
      if (same_tables(sets_[k], h, comps)) return static_cast<int64_t>(k);
    std::vector<JpegHuffDecTable> t(2 * static_cast<size_t>(comps));
    for (int c = 0; c < comps; ++c)
      if (!jpeg_huff_dec_table(h.dc[c], true, t[2 * c]) || !jpeg_huff_dec_table(h.ac[c], false, t[2 * c + 1]))
        return -1;
    if (sets_.size() >= 64) return -1;  // a level of many tables: the rest here
    sets_.push_back(h);
    tables_.insert(tables_.end(), t.begin(), t.end());
    return static_cast<int64_t>(sets_.size()) - 1;
  }

  const RawTiles& raw_;
  const JpegCoefLayout layout_;
  const size_t cpt_, qpt_;
  const int device_;
  DeviceJpegCoefs& out_;
  cuda::Stream stream_;
  std::vector<JpegScanHead> sets_;
  std::vector<JpegHuffDecTable> tables_;

 public:
  std::atomic<int64_t> cpu_tiles_{0};
};

}  // namespace

size_t device_jpeg_coefs_bytes(const TileSource& src, const JpegCoefLayout& layout) {
  const LevelInfo& l0 = src.level(0);
  const int64_t across = (l0.width + layout.tile - 1) / layout.tile, down = (l0.height + layout.tile - 1) / layout.tile;
  return static_cast<size_t>(across * down) * (layout.coefs_per_tile() + layout.quant_per_tile()) * sizeof(int16_t);
}

std::optional<DeviceJpegCoefs> decode_jpeg_level0_on_device(const TileSource& src, const JpegCoefLayout& layout,
                                                            int device, size_t device_budget, size_t host_budget) {
  const size_t bytes = device_jpeg_coefs_bytes(src, layout);
  const RawTiles* raw = src.raw_tiles();
  if (!raw || bytes == 0 || bytes > device_budget) return std::nullopt;
  {
    // A level whose first tile the GPU cannot decode (restart markers,
    // progressive) is libjpeg's, a read at a time, with its cache.
    JpegScanHead head;
    if (!raw->raw_tile_scan_head(0, 0, 0, raw->read_raw_tile(0, 0, 0), layout, head)) return std::nullopt;
  }
  TraceSpan span("jpeg-decode-on-device", static_cast<int64_t>(bytes >> 20));
  DeviceJpegCoefs out;
  try {
    out.mem = allocate_device_bytes(device, bytes);
  } catch (const CudaError&) {
    return std::nullopt;  // the device is fuller than its budget says
  }
  const LevelInfo& l0 = src.level(0);
  out.across = (l0.width + layout.tile - 1) / layout.tile;
  out.down = (l0.height + layout.tile - 1) / layout.tile;
  const int64_t tiles = out.across * out.down;
  out.coefs = reinterpret_cast<const int16_t*>(out.mem.get());
  out.quant =
      reinterpret_cast<const uint16_t*>(out.mem.get() + static_cast<size_t>(tiles) * layout.coefs_per_tile() * 2);
  cuda::DeviceScope scope(device);
  Decoder dec(src, layout, device, out);
  // Batches of thousands of tiles (a launch needs them to hide a thread's
  // latency), fewer where the host budget is small: a batch holds its
  // streams and, per tile, its headers (~2 KB) on the host.
  const size_t per_batch = std::clamp<size_t>(host_budget / 16, size_t{1} << 20, size_t{1} << 30);
  const int64_t batch =
      std::clamp<int64_t>(static_cast<int64_t>(per_batch / (layout.coefs_per_tile() / 4 + 8192)), 16, 65536);
  for (int64_t t0 = 0; t0 < tiles; t0 += batch)
    if (!dec.batch(t0, std::min(tiles, t0 + batch))) return std::nullopt;
  out.cpu_tiles = dec.cpu_tiles_.load();
  return out;
}

}  // namespace tw
