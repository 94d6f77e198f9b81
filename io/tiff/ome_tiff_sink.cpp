#include "io/tiff/ome_tiff_sink.hpp"

#include <tbb/enumerable_thread_specific.h>

#include <cstring>

#include "engine/error.hpp"
#include "io/tiff/ome_xml_writer.hpp"

namespace tw {
namespace {

// Copies channel c of an interleaved tile into a one-channel plane of the
// same rect (S: one sample's bytes, so the copy is a typed load and store).
template <size_t S>
void copy_channel(const ImageView& src, int c, const ImageView& dst) {
  const size_t step = static_cast<size_t>(src.fmt.channels) * S;
  for (int64_t y = src.rect.y; y < src.rect.y + src.rect.h; ++y) {
    const uint8_t* s = src.row_bytes(y) + static_cast<size_t>(c) * S;
    uint8_t* d = dst.row_bytes(y);
    for (int64_t x = 0; x < src.rect.w; ++x, s += step, d += S) std::memcpy(d, s, S);
  }
}

void copy_channel(const ImageView& src, int c, const ImageView& dst) {
  switch (sample_bytes(src.fmt.type)) {
    case 1:
      return copy_channel<1>(src, c, dst);
    case 2:
      return copy_channel<2>(src, c, dst);
    default:
      return copy_channel<4>(src, c, dst);
  }
}

// encode() of N planes returns one buffer: N little-endian 64-bit sizes,
// then the planes' compressed tiles one after another; write() splits it.
constexpr size_t kSizeBytes = sizeof(uint64_t);

std::string stem_of(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char* tail : {".ome.tiff", ".ome.tif", ".ome.btf", ".tiff", ".tif"}) {
    const size_t n = std::strlen(tail);
    if (name.size() > n && name.compare(name.size() - n, n, tail) == 0) return name.substr(0, name.size() - n);
  }
  return name;
}

}  // namespace

int ome_tiff_planes(const EncodeSettings& enc) {
  const bool rgb8 = enc.fmt.channels == 3 && enc.fmt.type == SampleType::kU8 && enc.color;
  return enc.fmt.channels == 1 || rgb8 ? 1 : enc.fmt.channels;
}

struct OmeTiffSink::Impl {
  std::string path;
  EncodeSettings enc;        // the interleaved tiles the pass hands us
  EncodeSettings plane_enc;  // what one plane's encoder compresses
  int planes = 1;
  int64_t width = 0, height = 0;  // level 0
  std::vector<bool> encoded;      // per level: tiles from our encoder (not passed through)
  std::optional<JpegCoefSpec> coef_spec;
  PyramidWriterOptions opt;
  std::vector<std::string> channel_names;
  std::unique_ptr<PyramidTiffWriter> writer;

  struct Worker {
    std::unique_ptr<TileEncoder> encoder;
    Image plane;                  // one channel of the tile
    std::vector<uint8_t> packed;  // its compressed bytes
  };
  tbb::enumerable_thread_specific<Worker> workers;

  Worker& worker() {
    Worker& w = workers.local();
    if (!w.encoder) w.encoder = make_encoder(plane_enc);
    return w;
  }
};

size_t OmeTiffSink::index_bytes(const EncodeSettings& enc, const std::vector<PyramidLevelSpec>& levels) {
  return PyramidTiffWriter::index_bytes(levels, ome_tiff_planes(enc));
}

OmeTiffSink::OmeTiffSink(const std::string& path, const EncodeSettings& enc, std::vector<PyramidLevelSpec> levels,
                         PyramidWriterOptions opt, std::vector<std::string> channel_names)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.path = path;
  im.enc = im.plane_enc = enc;
  im.planes = ome_tiff_planes(enc);
  TW_ASSERT(!levels.empty());
  im.width = levels[0].width;
  im.height = levels[0].height;
  if (im.planes > 1) im.plane_enc.fmt.channels = 1;
  im.plane_enc.validate();
  const RawTileFormat ours = tiff_format_for(im.plane_enc);
  if (im.planes > 1) {
    // Every level is ours: a source's interleaved tiles cannot be copied
    // into planes of one channel (write_pyramid does not ask for it).
    const RawTileFormat interleaved = tiff_format_for(enc);
    for (PyramidLevelSpec& l : levels) {
      if (l.format.samples_per_pixel != interleaved.samples_per_pixel ||
          l.format.tiff_compression != interleaved.tiff_compression || l.format.tile_w != interleaved.tile_w ||
          l.format.tile_h != interleaved.tile_h)
        throw InternalError("OME-TIFF of separate channel planes asked to store tiles copied as stored");
      l.format = ours;
    }
  }
  for (const PyramidLevelSpec& l : levels)
    im.encoded.push_back(l.format.tiff_compression == ours.tiff_compression &&
                         l.format.jpeg_tables == ours.jpeg_tables);
  im.coef_spec = im.planes == 1 ? jpeg_coef_spec_for(im.plane_enc) : std::nullopt;
  if (channel_names.size() == static_cast<size_t>(enc.fmt.channels)) im.channel_names = std::move(channel_names);
  opt.layout = TiffLevelLayout::kSubIfds;
  opt.planes = im.planes;
  im.opt = opt;
  // The description is the OME-XML, made at finish() when the associated
  // images are known.
  opt.description.clear();
  im.writer = std::make_unique<PyramidTiffWriter>(path, im.plane_enc.fmt, std::move(levels), std::move(opt));
}

OmeTiffSink::~OmeTiffSink() = default;

void OmeTiffSink::encode(int, const ImageView& tile, std::vector<uint8_t>& out) {
  Impl& im = *impl_;
  Impl::Worker& w = im.worker();
  if (im.planes == 1) return w.encoder->encode(tile, out);
  if (w.plane.empty() || w.plane.rect().w != tile.rect.w || w.plane.rect().h != tile.rect.h)
    w.plane = Image(im.plane_enc.fmt, tile.rect);
  w.plane.set_origin(tile.rect.x, tile.rect.y);
  out.assign(kSizeBytes * static_cast<size_t>(im.planes), 0);
  for (int c = 0; c < im.planes; ++c) {
    copy_channel(tile, c, w.plane.view());
    w.encoder->encode(w.plane.view(), w.packed);
    const uint64_t n = w.packed.size();
    std::memcpy(out.data() + kSizeBytes * static_cast<size_t>(c), &n, kSizeBytes);
    out.insert(out.end(), w.packed.begin(), w.packed.end());
  }
}

void OmeTiffSink::write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) {
  Impl& im = *impl_;
  if (im.planes == 1) return im.writer->write_tile(0, level, tx, ty, bytes.data(), bytes.size());
  size_t at = kSizeBytes * static_cast<size_t>(im.planes);
  TW_ASSERT(bytes.size() >= at);
  for (int c = 0; c < im.planes; ++c) {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + kSizeBytes * static_cast<size_t>(c), kSizeBytes);
    TW_ASSERT(n <= bytes.size() - at);
    im.writer->write_tile(c, level, tx, ty, bytes.data() + at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
  }
}

double OmeTiffSink::compression_ratio_estimate() const {
  switch (impl_->enc.codec) {
    case Codec::kJpeg:
      return 0.15;
    case Codec::kNone:
      return 1.0;
    default:
      return 0.7;
  }
}

std::optional<JpegCoefSpec> OmeTiffSink::jpeg_coef_spec(int level) const {
  const Impl& im = *impl_;
  if (level < 0 || level >= static_cast<int>(im.encoded.size()) || !im.encoded[static_cast<size_t>(level)])
    return std::nullopt;
  return im.coef_spec;
}

void OmeTiffSink::encode_coefficients(int, const int16_t* coefs, std::vector<uint8_t>& out) {
  TW_ASSERT(impl_->planes == 1);
  impl_->worker().encoder->encode_coefficients(coefs, out);
}

JpegCoefSink* OmeTiffSink::jpeg_coefs() {
  return impl_->coef_spec ? this : nullptr;
}

void OmeTiffSink::add_associated(const std::string& name, const Image& img) {
  impl_->writer->add_associated(name, img);
}

void OmeTiffSink::finish() {
  Impl& im = *impl_;
  std::vector<OmeImage> images(1);
  OmeImage& main = images[0];
  main.name = stem_of(im.path);
  main.description = im.opt.description;
  main.width = im.width;
  main.height = im.height;
  main.fmt = im.enc.fmt;
  main.interleaved = im.planes == 1 && im.enc.fmt.channels > 1;
  main.mpp_x = im.opt.mpp_x;
  main.mpp_y = im.opt.mpp_y;
  main.channel_names = im.channel_names;
  main.objective_power = im.opt.objective_power;
  main.vendor_properties = im.opt.vendor_properties;
  main.first_ifd = 0;
  // Label, macro and thumbnail are further Images of their own (as
  // Glencoe's raw2ometiff writes them): Bio-Formats lists each as a series
  // after the pyramid's, so they never join its channels or levels.
  int ifd = im.planes;
  for (const StoredAssociated& a : im.writer->associated()) {
    OmeImage o;
    o.name = a.name;
    o.width = a.width;
    o.height = a.height;
    o.fmt = {SampleType::kU8, a.channels};
    o.interleaved = a.channels > 1;
    o.first_ifd = ifd++;
    images.push_back(o);
  }
  im.writer->set_description(ome_xml(images, im.opt.software));
  im.writer->finish();
}

uint64_t OmeTiffSink::bytes_written() const {
  return impl_->writer->bytes_written();
}

}  // namespace tw
