#include "tools/serve/tile_encode.hpp"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE
#include <jpeglib.h>
// clang-format on
#include <png.h>

#include <csetjmp>
#include <cstdlib>
#include <vector>

#include "engine/error.hpp"

namespace tw::serve {

TileFormat parse_tile_format(const std::string& s) {
  if (s == "jpeg" || s == "jpg") return TileFormat::kJpeg;
  if (s == "png") return TileFormat::kPng;
  throw InputError("tile format must be jpeg or png, not '" + s + "'");
}

const char* tile_format_extension(TileFormat f) {
  return f == TileFormat::kJpeg ? "jpeg" : "png";
}

const char* tile_format_mime(TileFormat f) {
  return f == TileFormat::kJpeg ? "image/jpeg" : "image/png";
}

namespace {

struct JpegFailure {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void jpeg_fail(j_common_ptr c) {
  std::longjmp(reinterpret_cast<JpegFailure*>(c->err)->jump, 1);
}

}  // namespace

std::string encode_jpeg(const ImageView& img, int quality) {
  TW_ASSERT(img.fmt.type == SampleType::kU8 && (img.fmt.channels == 1 || img.fmt.channels == 3));
  jpeg_compress_struct c{};
  JpegFailure err{};
  c.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_fail;
  unsigned char* mem = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): libjpeg's type
  // Only libjpeg's own failures (out of memory) jump here; nothing with a
  // destructor lives between setjmp and the jumps.
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    std::free(mem);
    throw InputError("JPEG encoding of a tile failed");
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = static_cast<JDIMENSION>(img.rect.w);
  c.image_height = static_cast<JDIMENSION>(img.rect.h);
  c.input_components = img.fmt.channels;
  c.in_color_space = img.fmt.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = img.row_bytes(img.rect.y + c.next_scanline);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::string out(reinterpret_cast<const char*>(mem), size);
  std::free(mem);
  return out;
}

namespace {

void png_append(png_structp p, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(data), n);
}

[[noreturn]] void png_fail(png_structp p, png_const_charp) {
  png_longjmp(p, 1);
}

void png_quiet(png_structp, png_const_charp) {}

}  // namespace

std::string encode_png(const ImageView& img) {
  TW_ASSERT(img.fmt.type == SampleType::kU8 && img.fmt.channels >= 1 && img.fmt.channels <= 4);
  static const int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                    PNG_COLOR_TYPE_RGB_ALPHA};
  std::string out;
  png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_quiet);
  if (!p) throw InputError("PNG encoding of a tile failed (out of memory)");
  png_infop info = png_create_info_struct(p);
  std::vector<png_bytep> rows(static_cast<size_t>(img.rect.h));
  for (int64_t y = 0; y < img.rect.h; ++y) rows[static_cast<size_t>(y)] = img.row_bytes(img.rect.y + y);
  // As for JPEG: only libpng's own failures jump here, past nothing that a
  // destructor would have to undo (out and rows are declared before).
  if (!info || setjmp(png_jmpbuf(p))) {
    png_destroy_write_struct(&p, &info);
    throw InputError("PNG encoding of a tile failed");
  }
  png_set_write_fn(p, &out, png_append, nullptr);
  png_set_IHDR(p, info, static_cast<png_uint_32>(img.rect.w), static_cast<png_uint_32>(img.rect.h), 8,
               kColorTypes[img.fmt.channels - 1], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  // Tiles are made while a viewer waits: a fast zlib level costs a few
  // percent of size against zlib's default.
  png_set_compression_level(p, 2);
  png_set_rows(p, info, rows.data());
  png_write_png(p, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&p, &info);
  return out;
}

}  // namespace tw::serve
