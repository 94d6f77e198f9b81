#pragma once
// What the pyramid job's reduce stage calls: it takes the next band of level
// 0 and hands back the bands of levels >= 1 that it finished. The CPU
// producer wraps PyramidCascade; the CUDA producer keeps the cascade in
// device memory and returns bands whose copy back may still be in flight.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/codec_kind.hpp"
#include "engine/image_pool.hpp"
#include "engine/jpeg_coefs.hpp"
#include "jobs/pyramid/cascade.hpp"

namespace tw {

struct FinishedBand {
  int level = 0;                      // -1: nothing to encode, only something to wait for
  std::shared_ptr<const Image> band;  // host pixels, rows [y, y + h), the level's computed columns
  std::function<void()> wait;         // blocks until `band` (or `coefs`) holds its data (null: ready now)
  // Instead of pixels (enable_jpeg_encode): the JPEG coefficients of the
  // band's tiles, tile after tile from the level's first, as one row of
  // bytes; the band's first row is y.
  std::shared_ptr<const Image> coefs;
  int64_t y = 0;
  // Where the GPU entropy-coded them too (jpeg_huffman_cuda.hpp): per tile,
  // the bytes of its entropy-coded segment, which then starts its room in
  // `coefs`, or kJpegTileAsCoefficients (null: all are coefficients).
  const uint32_t* entropy_sizes = nullptr;
  // Where the GPU also packed them (jpeg_segments_cuda.hpp): per tile, where
  // its segment (or coefficients) starts in `coefs` (null: tile i's room is
  // the i-th, coefs_per_tile() coefficients each).
  const uint64_t* entropy_offsets = nullptr;
};

// Per level (index = level), the split JPEG encode's spec, where the level's
// tiles are to come back as coefficients.
using JpegEncodeSpecs = std::vector<std::optional<JpegCoefSpec>>;

// Tiles across a level's band, and the pinned bytes its coefficients take
// (one row of bytes: the tiles', then a uint64 per tile for
// FinishedBand::entropy_offsets and a uint32 per tile for entropy_sizes).
int band_tiles(const JpegCoefSpec& spec, const CascadeLevel& level);
size_t coef_band_bytes(const JpegCoefSpec& spec, const CascadeLevel& level);
// Whether the spec lets the GPU entropy-code too (it has the codes and head).
bool gpu_entropy_codes(const JpegCoefSpec& spec);

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
  int64_t y = 0;  // the band's first row
};

// Pinned host memory a producer lends for one band's JPEG coefficients
// (engine/jpeg_coefs.hpp): the CPU entropy-decodes the band's tiles into
// it, then hands it back with submit_coefs. Dropped unsubmitted, it is
// simply returned.
class CoefBand {
 public:
  virtual ~CoefBand() = default;
  int64_t y = 0, rows = 0;
  int16_t* coefs = nullptr;   // tile i's at coefs + i * layout.coefs_per_tile()
  uint16_t* quant = nullptr;  // tile i's at quant + i * layout.quant_per_tile()
};

// Facet of producers that run on a device: the GPU's share of JPEG coding
// (docs/ARCHITECTURE.md, split JPEG coding). The pyramid job uses it only
// where the producer offers it (LevelProducer::jpeg()).
class JpegCoding {
 public:
  virtual ~JpegCoding() = default;
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
  // The split JPEG decode: the CPU entropy-decodes level-0 tiles (laid out
  // as `layout`, a band's tiles side by side from its first column), the GPU
  // does the rest. enable_coefs sets up `slots` bands' buffers (it may run
  // on another thread while the pipeline pushes bands; throws where it
  // cannot); acquire_coefs lends one (null: not enabled, or none free);
  // submit_coefs starts the GPU's part without waiting; push_submitted, in
  // band order, feeds the band on.
  virtual void enable_coefs(const JpegCoefLayout& layout, int slots);
  virtual std::shared_ptr<CoefBand> acquire_coefs(int64_t y, int64_t rows);
  virtual std::shared_ptr<JpegTicket> submit_coefs(const std::shared_ptr<CoefBand>& band);
  // The split JPEG encode: levels with a spec come back as coefficients
  // (FinishedBand::coefs) instead of pixels. Call before the first push.
  virtual void enable_jpeg_encode(const JpegEncodeSpecs& specs);
  // Level-0 bands computed on the device (a GPU chain's result) into device
  // memory the producer lends, so that they never cross to the host: with
  // level 0 split-encoded too, nothing of the band comes back but its tiles'
  // segments. enable_device_bands sets up `slots` band buffers where they
  // fit in `room` device bytes (false where they do not; throws CudaError
  // where the device cannot). compute_on_device lends one and calls
  // compute(dst, pitch) with it (level 0's computed columns, `rows` rows
  // from y, on the producer's device), which returns once the pixels are
  // there; null: not enabled, or none free (read the band on the host).
  // push_submitted, in band order, feeds the band on.
  virtual bool enable_device_bands(int slots, size_t room);
  virtual std::shared_ptr<JpegTicket> compute_on_device(int64_t y, int64_t rows,
                                                        const std::function<void(uint8_t*, size_t)>& compute);
  // The device the producer runs on (-1: none).
  virtual int device() const { return -1; }
};

class LevelProducer {
 public:
  virtual ~LevelProducer() = default;
  // The next rows of level 0, in order. Appends the finished bands.
  virtual void push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) = 0;
  // Device time so far (zero for the CPU); call after every band was waited for.
  virtual DeviceTimes device_times() const { return {}; }
  // Moving a cascade from one producer to another between two pushes: the
  // state after the last push (the CPU's), and taking it up before the first
  // (the GPU's). Others throw InternalError.
  virtual CascadeSnapshot snapshot() const;
  virtual void adopt(const CascadeSnapshot& state);
  // The GPU's share of JPEG coding, where the producer has one.
  virtual JpegCoding* jpeg() { return nullptr; }
};

std::unique_ptr<LevelProducer> make_cpu_producer(PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows,
                                                 ImagePool& pool);

// Pinned host memory for bands the GPU copies from or into (null without CUDA).
const HostAllocator* gpu_host_allocator();

// Device bytes a CUDA producer needs for this geometry.
size_t cuda_producer_bytes(PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows);

// Whether the CUDA producer can decode level-0 tiles of this format itself
// (a build with nvJPEG; baseline YCbCr or gray JPEG).
bool cuda_can_decode(const RawTileFormat& f);

// Device bytes enable_jpeg_encode needs.
size_t cuda_encode_bytes(const JpegEncodeSpecs& specs, const std::vector<CascadeLevel>& levels);

// Device bytes enable_coefs needs for this many slots.
size_t cuda_coef_bytes(PixelFormat fmt, const CascadeLevel& level0, int64_t band_rows, const JpegCoefLayout& layout,
                       int slots);

// Device bytes the GPU JPEG decoder's band buffers take.
size_t cuda_jpeg_bytes(PixelFormat fmt, const CascadeLevel& level0, int64_t band_rows, int64_t tile);

// The split JPEG stages a CUDA producer may take on beside its cascade,
// each where it fits the device room left; a stage that cannot start is
// warned about and left to the CPU. The pass's own producer and the one a
// hand-over starts share this.
// room: device bytes left, reduced by what the stages take; the flags say
// which started.
void enable_split_jpeg(JpegCoding& gpu, const JpegEncodeSpecs& encode, const std::optional<JpegCoefLayout>& coefs,
                       int slots, PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows,
                       size_t& room, bool* split_encode, bool* split_decode);

// Throws InputError in builds without CUDA, CudaError if nvJPEG cannot be
// set up. jpeg_tile > 0: level-0 bands may also come as JPEG tiles of that
// size (submit_jpeg / push_submitted).
std::unique_ptr<LevelProducer> make_cuda_producer(int device, PixelFormat fmt, std::vector<CascadeLevel> levels,
                                                  int64_t band_rows, ImagePool& host_pool, int64_t jpeg_tile = 0);

}  // namespace tw
