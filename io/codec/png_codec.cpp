#include "io/codec/png_codec.hpp"

#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/error.hpp"

namespace tw {
namespace {

// libpng reports errors through a callback that must not return; it is
// built with setjmp support, so errors longjmp back to png_jmpbuf and we
// throw from there (C++ exceptions must not cross libpng's C frames).
struct PngError {
  char message[256] = "";
};

void on_error(png_structp png, png_const_charp msg) {
  auto* e = static_cast<PngError*>(png_get_error_ptr(png));
  std::snprintf(e->message, sizeof e->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_write(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

void on_flush(png_structp) {}

struct Reader {
  const uint8_t* data;
  size_t n, at;
};

void on_read(png_structp png, png_bytep dst, png_size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->n - r->at) png_error(png, "truncated PNG");
  std::memcpy(dst, r->data + r->at, n);
  r->at += n;
}

int color_type_for(int channels) {
  switch (channels) {
    case 1:
      return PNG_COLOR_TYPE_GRAY;
    case 2:
      return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 3:
      return PNG_COLOR_TYPE_RGB;
    default:
      return PNG_COLOR_TYPE_RGB_ALPHA;
  }
}

// Decoding in steps whose setjmp frames hold no C++ objects: a longjmp
// skips no destructor, and the Image is made between the steps.
class PngDecoder {
 public:
  PngDecoder(const uint8_t* data, size_t n) : reader_{data, n, 0} {
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err_, on_error, on_warning);
    if (png_) info_ = png_create_info_struct(png_);
    if (!png_ || !info_) throw std::bad_alloc();
    png_set_read_fn(png_, &reader_, on_read);
  }
  ~PngDecoder() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngDecoder(const PngDecoder&) = delete;
  PngDecoder& operator=(const PngDecoder&) = delete;

  bool read_header() {
    if (setjmp(png_jmpbuf(png_))) return false;
    png_read_info(png_, info_);
    const int bits = png_get_bit_depth(png_, info_);
    if (png_get_color_type(png_, info_) == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png_);
    if (bits < 8) png_set_expand(png_);
    if (bits == 16) png_set_swap(png_);
    png_read_update_info(png_, info_);
    fmt_ = PixelFormat{bits == 16 ? SampleType::kU16 : SampleType::kU8, png_get_channels(png_, info_)};
    w_ = png_get_image_width(png_, info_), h_ = png_get_image_height(png_, info_);
    return true;
  }
  bool read_rows(const ImageView& dst) {
    if (setjmp(png_jmpbuf(png_))) return false;
    for (int64_t y = 0; y < dst.rect.h; ++y) png_read_row(png_, dst.row_bytes(dst.rect.y + y), nullptr);
    png_read_end(png_, nullptr);
    return true;
  }
  PixelFormat format() const { return fmt_; }
  int64_t width() const { return w_; }
  int64_t height() const { return h_; }
  std::string message() const { return err_.message; }

 private:
  PngError err_;
  Reader reader_;
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
  PixelFormat fmt_;
  int64_t w_ = 0, h_ = 0;
};

}  // namespace

bool png_can_store(PixelFormat fmt) {
  return (fmt.type == SampleType::kU8 || fmt.type == SampleType::kU16) && fmt.channels >= 1 && fmt.channels <= 4;
}

void encode_png(const ImageView& img, int zlib_level, std::vector<uint8_t>& out) {
  if (!png_can_store(img.fmt))
    throw InputError("PNG cannot hold " + img.fmt.str() + " pixels (8- or 16-bit, 1 to 4 channels)");
  TW_ASSERT(img.rect.w > 0 && img.rect.h > 0);
  out.clear();
  PngError err;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
  if (!png) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw InternalError(std::string("PNG encoding failed: ") + err.message);
  }
  png_set_write_fn(png, &out, on_write, on_flush);
  const int bits = img.fmt.type == SampleType::kU16 ? 16 : 8;
  png_set_IHDR(png, info, static_cast<png_uint_32>(img.rect.w), static_cast<png_uint_32>(img.rect.h), bits,
               color_type_for(img.fmt.channels), PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (zlib_level >= 0) png_set_compression_level(png, std::min(zlib_level, 9));
  png_write_info(png, info);
  // PNG stores 16-bit samples big-endian; ours are in host (little-endian) order.
  if (bits == 16) png_set_swap(png);
  for (int64_t y = img.rect.y; y < img.rect.y + img.rect.h; ++y) png_write_row(png, img.row_bytes(y));
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
}

Image decode_png(const uint8_t* data, size_t n, const std::string& what) {
  PngDecoder d(data, n);
  if (!d.read_header()) throw InputError(what + ": not a readable PNG (" + d.message() + ")");
  Image img(d.format(), Rect{0, 0, d.width(), d.height()});
  if (!d.read_rows(img.view())) throw InputError(what + ": not a readable PNG (" + d.message() + ")");
  return img;
}

}  // namespace tw
