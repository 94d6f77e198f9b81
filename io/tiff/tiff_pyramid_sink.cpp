#include "io/tiff/tiff_pyramid_sink.hpp"

#include <tbb/enumerable_thread_specific.h>

namespace tw {

struct TiffPyramidSink::Impl {
  EncodeSettings enc;
  PyramidTiffWriter writer;
  tbb::enumerable_thread_specific<std::unique_ptr<TileEncoder>> encoders;

  Impl(const std::string& path, const EncodeSettings& e, std::vector<PyramidLevelSpec> levels,
       PyramidWriterOptions opt)
      : enc(e), writer(path, e.fmt, std::move(levels), std::move(opt)) {}
};

TiffPyramidSink::TiffPyramidSink(const std::string& path, const EncodeSettings& enc,
                                 std::vector<PyramidLevelSpec> levels, PyramidWriterOptions opt) {
  enc.validate();
  impl_ = std::make_unique<Impl>(path, enc, std::move(levels), std::move(opt));
}

TiffPyramidSink::~TiffPyramidSink() = default;

void TiffPyramidSink::encode(int, const ImageView& tile, std::vector<uint8_t>& out) {
  auto& e = impl_->encoders.local();
  if (!e) e = make_encoder(impl_->enc);
  e->encode(tile, out);
}

void TiffPyramidSink::write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) {
  impl_->writer.write_tile(level, tx, ty, bytes.data(), bytes.size());
}

double TiffPyramidSink::compression_ratio_estimate() const {
  switch (impl_->enc.codec) {
    case Codec::kJpeg: return 0.15;
    case Codec::kNone: return 1.0;
    default: return 0.7;
  }
}

void TiffPyramidSink::add_associated(const std::string& name, const Image& img) {
  impl_->writer.add_associated(name, img);
}

void TiffPyramidSink::finish() { impl_->writer.finish(); }

uint64_t TiffPyramidSink::bytes_written() const { return impl_->writer.bytes_written(); }

}  // namespace tw
