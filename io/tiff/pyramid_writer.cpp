#include "io/tiff/pyramid_writer.hpp"

#include <fcntl.h>
#include <tiffio.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "engine/error.hpp"
#include "engine/output_file.hpp"
#include "io/tiff/tiff_error.hpp"

namespace tw {
namespace {

struct Spilled {
  uint64_t offset = 0, size = 0;
  bool written = false;
};

}  // namespace

struct PyramidTiffWriter::Impl {
  PixelFormat fmt;
  std::vector<PyramidLevelSpec> levels;
  PyramidWriterOptions opt;
  OutputFile out;
  TempPath spill_path;
  int spill_fd = -1;
  uint64_t spill_size = 0;
  TIFF* tif = nullptr;
  std::vector<std::vector<Spilled>> spilled;  // per level >= 1, by tile index
  std::vector<bool> level0_written;
  uint64_t bytes = 0;
  struct Assoc {
    std::string name;
    Image img;
  };
  std::vector<Assoc> assoc;
  bool finished = false;

  Impl(const std::string& path, PixelFormat f, std::vector<PyramidLevelSpec> l, PyramidWriterOptions o)
      : fmt(f), levels(std::move(l)), opt(std::move(o)), out(path), spill_path(path, ".levels") {}

  ~Impl() {
    if (tif) TIFFClose(tif);
    if (spill_fd >= 0) ::close(spill_fd);
  }

  int64_t tiles_across(int l) const { return ceil_div(levels[l].width, levels[l].format.tile_w); }
  int64_t tile_count(int l) const {
    return tiles_across(l) * ceil_div(levels[l].height, levels[l].format.tile_h);
  }

  void fail(const std::string& what) {
    throw InputError("cannot write " + out.final_path() + ": " + what);
  }

  void set_level_tags(int l) {
    const PyramidLevelSpec& s = levels[l];
    const RawTileFormat& f = s.format;
    TIFFSetField(tif, TIFFTAG_SUBFILETYPE, l > 0 ? FILETYPE_REDUCEDIMAGE : 0);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(s.width));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(s.height));
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, static_cast<uint32_t>(f.tile_w));
    TIFFSetField(tif, TIFFTAG_TILELENGTH, static_cast<uint32_t>(f.tile_h));
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, static_cast<uint16_t>(f.bits_per_sample));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(f.samples_per_pixel));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    // Compression first: it installs the codec whose tags follow.
    TIFFSetField(tif, TIFFTAG_COMPRESSION, f.tiff_compression);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, f.photometric);
    if (f.photometric == PHOTOMETRIC_YCBCR) {
      TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, f.subsampling_h, f.subsampling_v);
      float ref[6] = {0, 255, 128, 255, 128, 255};
      TIFFSetField(tif, TIFFTAG_REFERENCEBLACKWHITE, ref);
    }
    if (f.predictor > 1) TIFFSetField(tif, TIFFTAG_PREDICTOR, f.predictor);
    if (f.tiff_compression == COMPRESSION_JPEG && !f.jpeg_tables.empty())
      TIFFSetField(tif, TIFFTAG_JPEGTABLES, static_cast<uint32_t>(f.jpeg_tables.size()), f.jpeg_tables.data());
    if (f.samples_per_pixel == 2 || f.samples_per_pixel == 4) {
      uint16_t extra = EXTRASAMPLE_UNASSALPHA;
      TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &extra);
    }
    set_resolution(std::ldexp(1.0, l));
    TIFFSetField(tif, TIFFTAG_SOFTWARE, opt.software.c_str());
    if (l == 0 && !opt.description.empty()) TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, opt.description.c_str());
  }

  // Pixels per centimetre from microns per pixel; the sampling period
  // doubles exactly at each level.
  void set_resolution(double scale) {
    if (opt.mpp_x <= 0 || opt.mpp_y <= 0) return;
    TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER);
    TIFFSetField(tif, TIFFTAG_XRESOLUTION, static_cast<float>(1e4 / (opt.mpp_x * scale)));
    TIFFSetField(tif, TIFFTAG_YRESOLUTION, static_cast<float>(1e4 / (opt.mpp_y * scale)));
  }

  void write_raw(int l, int64_t index, const uint8_t* data, size_t n) {
    clear_tiff_error();
    if (TIFFWriteRawTile(tif, static_cast<uint32_t>(index), const_cast<uint8_t*>(data),
                         static_cast<tmsize_t>(n)) != static_cast<tmsize_t>(n))
      fail("tile " + std::to_string(index) + " of level " + std::to_string(l) + ": " + take_tiff_error());
    bytes += n;
  }

  void write_directory() {
    clear_tiff_error();
    if (!TIFFWriteDirectory(tif)) fail(take_tiff_error());
  }
};

PyramidTiffWriter::PyramidTiffWriter(const std::string& final_path, PixelFormat fmt,
                                     std::vector<PyramidLevelSpec> levels, PyramidWriterOptions opt)
    : impl_(std::make_unique<Impl>(final_path, fmt, std::move(levels), std::move(opt))) {
  install_tiff_handlers();
  auto& im = *impl_;
  TW_ASSERT(!im.levels.empty());
  for (const auto& l : im.levels) {
    if (l.width <= 0 || l.height <= 0 || l.width > 0xffffffffLL || l.height > 0xffffffffLL)
      throw InputError("cannot write a level of " + std::to_string(l.width) + "x" + std::to_string(l.height) + " pixels");
    TW_ASSERT(l.format.tile_w > 0 && l.format.tile_h > 0 && l.format.tile_w % 16 == 0 && l.format.tile_h % 16 == 0);
  }
  clear_tiff_error();
  im.tif = TIFFOpen(im.out.temp_path().c_str(), "w8");
  if (!im.tif) im.fail(take_tiff_error());
  im.set_level_tags(0);
  im.level0_written.assign(static_cast<size_t>(im.tile_count(0)), false);
  im.spilled.resize(im.levels.size());
  for (size_t l = 1; l < im.levels.size(); ++l) im.spilled[l].resize(static_cast<size_t>(im.tile_count(static_cast<int>(l))));
  if (im.levels.size() > 1) {
    im.spill_fd = ::open(im.spill_path.path().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (im.spill_fd < 0) im.fail(std::string("scratch file: ") + std::strerror(errno));
  }
}

PyramidTiffWriter::~PyramidTiffWriter() = default;

uint64_t PyramidTiffWriter::bytes_written() const { return impl_->bytes; }
const std::string& PyramidTiffWriter::temp_path() const { return impl_->out.temp_path(); }

void PyramidTiffWriter::write_tile(int level, int64_t tx, int64_t ty, const uint8_t* data, size_t n) {
  auto& im = *impl_;
  TW_ASSERT(level >= 0 && level < static_cast<int>(im.levels.size()) && !im.finished);
  const int64_t index = ty * im.tiles_across(level) + tx;
  TW_ASSERT(tx >= 0 && ty >= 0 && tx < im.tiles_across(level) && index < im.tile_count(level));
  if (level == 0) {
    im.write_raw(0, index, data, n);
    im.level0_written[static_cast<size_t>(index)] = true;
    return;
  }
  Spilled& s = im.spilled[level][static_cast<size_t>(index)];
  TW_ASSERT(!s.written);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(im.spill_fd, data + done, n - done, static_cast<off_t>(im.spill_size + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) im.fail(std::string("scratch file: ") + std::strerror(errno));
    done += static_cast<size_t>(w);
  }
  s = {im.spill_size, n, true};
  im.spill_size += n;
}

void PyramidTiffWriter::add_associated(const std::string& name, const Image& img) {
  TW_ASSERT(img.fmt() == kRgb8 || img.fmt() == kGray8);
  Image copy(img.fmt(), Rect(0, 0, img.rect().w, img.rect().h));
  for (int64_t y = 0; y < img.rect().h; ++y)
    std::memcpy(copy.row<uint8_t>(y), img.row<uint8_t>(img.rect().y + y), img.view().row_length_bytes());
  impl_->assoc.push_back({name, std::move(copy)});
}

void PyramidTiffWriter::finish() {
  auto& im = *impl_;
  TW_ASSERT(!im.finished);
  for (size_t i = 0; i < im.level0_written.size(); ++i)
    if (!im.level0_written[i]) throw InternalError("pyramid writer: tile " + std::to_string(i) + " of level 0 missing");
  im.write_directory();
  std::vector<uint8_t> buf;
  for (int l = 1; l < static_cast<int>(im.levels.size()); ++l) {
    im.set_level_tags(l);
    for (size_t i = 0; i < im.spilled[l].size(); ++i) {
      const Spilled& s = im.spilled[l][i];
      if (!s.written)
        throw InternalError("pyramid writer: tile " + std::to_string(i) + " of level " + std::to_string(l) + " missing");
      buf.resize(s.size);
      if (::pread(im.spill_fd, buf.data(), s.size, static_cast<off_t>(s.offset)) != static_cast<ssize_t>(s.size))
        im.fail(std::string("scratch file: ") + std::strerror(errno));
      im.write_raw(l, static_cast<int64_t>(i), buf.data(), buf.size());
    }
    im.write_directory();
  }
  for (const auto& a : im.assoc) {
    const Image& img = a.img;
    TIFFSetField(im.tif, TIFFTAG_SUBFILETYPE, 0);
    TIFFSetField(im.tif, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(img.rect().w));
    TIFFSetField(im.tif, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(img.rect().h));
    TIFFSetField(im.tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(im.tif, TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(img.fmt().channels));
    TIFFSetField(im.tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(im.tif, TIFFTAG_PHOTOMETRIC, img.fmt().channels == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(im.tif, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
    TIFFSetField(im.tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    TIFFSetField(im.tif, TIFFTAG_ROWSPERSTRIP, 16u);
    TIFFSetField(im.tif, TIFFTAG_IMAGEDESCRIPTION, a.name.c_str());
    TIFFSetField(im.tif, TIFFTAG_SOFTWARE, im.opt.software.c_str());
    for (int64_t y = 0; y < img.rect().h; ++y) {
      clear_tiff_error();
      if (TIFFWriteScanline(im.tif, img.row<uint8_t>(y), static_cast<uint32_t>(y), 0) < 0)
        im.fail("associated image '" + a.name + "': " + take_tiff_error());
    }
    im.write_directory();
  }
  TIFF* t = im.tif;
  im.tif = nullptr;
  TIFFClose(t);
  im.out.commit();
  im.finished = true;
}

}  // namespace tw
