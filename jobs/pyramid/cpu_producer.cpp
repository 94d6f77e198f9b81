#include "jobs/pyramid/level_producer.hpp"

namespace tw {
namespace {

class CpuProducer : public LevelProducer {
 public:
  CpuProducer(PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows, ImagePool& pool)
      : cascade_(fmt, std::move(levels), band_rows, pool) {}
  void push(const std::shared_ptr<const Image>& band0, std::vector<FinishedBand>& out) override {
    cascade_.push(band0, [&](int k, const std::shared_ptr<const Image>& band) {
      out.push_back({k, band, nullptr, nullptr, 0});
    });
  }
  CascadeSnapshot snapshot() const override { return cascade_.snapshot(); }

 private:
  PyramidCascade cascade_;
};

}  // namespace

std::shared_ptr<JpegTicket> JpegCoding::submit_jpeg(int64_t, int64_t, const std::vector<JpegTile>&) {
  return nullptr;
}

void JpegCoding::enable_jpeg(int64_t) {
  throw InternalError("this producer cannot decode JPEG");
}

void JpegCoding::enable_jpeg_encode(const JpegEncodeSpecs&) {
  throw InternalError("this producer cannot encode JPEG coefficients");
}

int band_tiles(const JpegCoefSpec& spec, const CascadeLevel& level) {
  return static_cast<int>(ceil_div(level.col1 - level.col0, spec.layout.tile));
}

size_t coef_band_bytes(const JpegCoefSpec& spec, const CascadeLevel& level) {
  const auto tiles = static_cast<size_t>(band_tiles(spec, level));
  return tiles * (spec.layout.coefs_per_tile() * sizeof(int16_t) + sizeof(uint64_t) + sizeof(uint32_t));
}

bool gpu_entropy_codes(const JpegCoefSpec& spec) {
  return spec.huff.size() == static_cast<size_t>(spec.layout.components) && !spec.head.empty();
}

void JpegCoding::enable_coefs(const JpegCoefLayout&, int) {
  throw InternalError("this producer cannot decode JPEG coefficients");
}

std::shared_ptr<CoefBand> JpegCoding::acquire_coefs(int64_t, int64_t) {
  return nullptr;
}

std::shared_ptr<JpegTicket> JpegCoding::submit_coefs(const std::shared_ptr<CoefBand>&) {
  throw InternalError("submit_coefs on a producer that lent no coefficient band");
}

bool JpegCoding::enable_device_bands(int, size_t) {
  throw InternalError("this producer cannot take bands computed on a device");
}

std::shared_ptr<JpegTicket> JpegCoding::compute_on_device(int64_t, int64_t,
                                                          const std::function<void(uint8_t*, size_t)>&) {
  return nullptr;
}

void JpegCoding::push_submitted(const std::shared_ptr<JpegTicket>&, std::vector<FinishedBand>&) {
  throw InternalError("push_submitted on a producer that does not decode JPEG");
}

CascadeSnapshot LevelProducer::snapshot() const {
  throw InternalError("this producer cannot hand its cascade on");
}

void LevelProducer::adopt(const CascadeSnapshot&) {
  throw InternalError("this producer cannot take a cascade up");
}

std::unique_ptr<LevelProducer> make_cpu_producer(PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows,
                                                 ImagePool& pool) {
  return std::make_unique<CpuProducer>(fmt, std::move(levels), band_rows, pool);
}

}  // namespace tw
