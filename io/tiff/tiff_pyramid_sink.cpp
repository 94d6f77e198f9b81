#include "io/tiff/tiff_pyramid_sink.hpp"

#include <tbb/enumerable_thread_specific.h>

namespace tw {

struct TiffPyramidSink::Impl {
  EncodeSettings enc;
  std::vector<bool> encoded;  // per level: tiles come from our encoder (not passed through)
  std::optional<JpegCoefSpec> coef_spec;
  PyramidTiffWriter writer;
  tbb::enumerable_thread_specific<std::unique_ptr<TileEncoder>> encoders;

  Impl(const std::string& path, const EncodeSettings& e, std::vector<PyramidLevelSpec> levels, PyramidWriterOptions opt)
      : enc(e), coef_spec(jpeg_coef_spec_for(e)), writer(path, e.fmt, levels, std::move(opt)) {
    const RawTileFormat ours = tiff_format_for(e);
    for (const PyramidLevelSpec& l : levels)
      encoded.push_back(l.format.tiff_compression == ours.tiff_compression && l.format.jpeg_tables == ours.jpeg_tables);
  }
  TileEncoder& encoder() {
    auto& e = encoders.local();
    if (!e) e = make_encoder(enc);
    return *e;
  }
};

TiffPyramidSink::TiffPyramidSink(const std::string& path, const EncodeSettings& enc,
                                 std::vector<PyramidLevelSpec> levels, PyramidWriterOptions opt) {
  enc.validate();
  impl_ = std::make_unique<Impl>(path, enc, std::move(levels), std::move(opt));
}

TiffPyramidSink::~TiffPyramidSink() = default;

void TiffPyramidSink::encode(int, const ImageView& tile, std::vector<uint8_t>& out) {
  impl_->encoder().encode(tile, out);
}

std::optional<JpegCoefSpec> TiffPyramidSink::jpeg_coef_spec(int level) const {
  if (level < 0 || level >= static_cast<int>(impl_->encoded.size()) || !impl_->encoded[static_cast<size_t>(level)])
    return std::nullopt;
  return impl_->coef_spec;
}

void TiffPyramidSink::encode_coefficients(int, const int16_t* coefs, std::vector<uint8_t>& out) {
  impl_->encoder().encode_coefficients(coefs, out);
}

void TiffPyramidSink::write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) {
  impl_->writer.write_tile(level, tx, ty, bytes.data(), bytes.size());
}

double TiffPyramidSink::compression_ratio_estimate() const {
  switch (impl_->enc.codec) {
    case Codec::kJpeg:
      return 0.15;
    case Codec::kNone:
      return 1.0;
    default:
      return 0.7;
  }
}

void TiffPyramidSink::add_associated(const std::string& name, const Image& img) {
  impl_->writer.add_associated(name, img);
}

void TiffPyramidSink::finish() {
  impl_->writer.finish();
}

uint64_t TiffPyramidSink::bytes_written() const {
  return impl_->writer.bytes_written();
}

}  // namespace tw
