#pragma once
// The pyramid job's sink for a pyramidal BigTIFF: compresses tiles on the
// worker threads (one encoder per thread) and hands the bytes to the writer.
#include <memory>
#include <string>
#include <vector>

#include "engine/pyramid_sink.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/pyramid_writer.hpp"

namespace tw {

class TiffPyramidSink : public PyramidSink, public JpegCoefSink {
 public:
  // levels[k].format: what each level stores (level 0 may be a source's raw
  // format when its tiles pass through; such a level is never encoded here).
  TiffPyramidSink(const std::string& path, const EncodeSettings& enc, std::vector<PyramidLevelSpec> levels,
                  PyramidWriterOptions opt);
  ~TiffPyramidSink() override;

  void encode(int level, const ImageView& tile, std::vector<uint8_t>& out) override;
  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override;
  double compression_ratio_estimate() const override;
  std::optional<JpegCoefSpec> jpeg_coef_spec(int level) const override;
  void encode_coefficients(int level, const int16_t* coefs, std::vector<uint8_t>& out) override;

  void add_associated(const std::string& name, const Image& img) override;
  void finish() override;
  uint64_t bytes_written() const override;
  JpegCoefSink* jpeg_coefs() override { return this; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
