#include "io/dzi/dzi_tile_encoder.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <string>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "engine/error.hpp"
#include "io/codec/jpeg_vector_dest.hpp"
#include "io/codec/png_codec.hpp"

namespace tw {
namespace {

// libjpeg's errors must not return: longjmp back to the caller's setjmp and
// throw from there (exceptions cannot cross its C frames).
struct JpegErr {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error_exit(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErr*>(c->err);
  (*c->err->format_message)(c, e->message);
  longjmp(e->jump, 1);
}

}  // namespace

void DziTileFormat::validate() const {
  const std::string what = "Deep Zoom tiles";
  if (fmt.type != SampleType::kU8 && fmt.type != SampleType::kU16)
    throw InputError(what + " are JPEG or PNG, which cannot hold " + fmt.str() +
                     " pixels: convert them to 8 or 16 bits first (`tilewave filter convert`), or write a .tif");
  if (codec == Codec::kJpeg) {
    if (fmt.type != SampleType::kU8 || (fmt.channels != 1 && fmt.channels != 3))
      throw InputError(what + " in JPEG need 8-bit gray or RGB, not " + fmt.str() + ": use --compression png");
    return;
  }
  if (codec != Codec::kPng) throw InputError(what + " are JPEG or PNG, not " + std::string(codec_name(codec)));
  if (!png_can_store(fmt))
    throw InputError(what + " in PNG hold 1 to 4 channels, not " + fmt.str() +
                     ": pick channels first (`tilewave filter channel`)");
}

struct DziTileEncoder::Jpeg {
  jpeg_compress_struct cinfo{};
  JpegErr err;
  JpegVectorDest dest;
};

DziTileEncoder::DziTileEncoder(const DziTileFormat& f) : f_(f) {
  f_.validate();
  if (f_.codec != Codec::kJpeg) return;
  jpeg_ = std::make_unique<Jpeg>();
  auto& c = jpeg_->cinfo;
  jpeg_std_error(&jpeg_->err.pub);
  jpeg_->err.pub.error_exit = on_error_exit;
  c.err = &jpeg_->err.pub;
  if (setjmp(jpeg_->err.jump)) {
    jpeg_destroy_compress(&c);
    throw InternalError(std::string("JPEG encoder setup failed: ") + jpeg_->err.message);
  }
  jpeg_create_compress(&c);
  jpeg_->dest.initial = 65536;
  jpeg_->dest.attach(&c);
  c.input_components = f_.fmt.channels;
  c.in_color_space = f_.fmt.channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, f_.quality, TRUE);
  if (f_.fmt.channels == 3) {
    const int s = f_.subsampling == ChromaSubsampling::k420 ? 2 : 1;
    c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = s;
  }
  // Standalone files for browsers: JFIF header, tables in every tile, no
  // optimised Huffman tables (as vips dzsave writes them by default).
  c.write_JFIF_header = TRUE;
  c.optimize_coding = FALSE;
  c.dct_method = JDCT_ISLOW;
}

DziTileEncoder::~DziTileEncoder() {
  if (jpeg_) jpeg_destroy_compress(&jpeg_->cinfo);
}

void DziTileEncoder::encode(const ImageView& tile, std::vector<uint8_t>& out) {
  TW_ASSERT(tile.fmt == f_.fmt && tile.rect.w > 0 && tile.rect.h > 0);
  if (!jpeg_) {
    encode_png(tile, f_.png_level, out);
    return;
  }
  auto& c = jpeg_->cinfo;
  jpeg_->dest.out = &out;
  if (setjmp(jpeg_->err.jump)) {
    jpeg_abort_compress(&c);
    throw InternalError(std::string("JPEG encoding failed: ") + jpeg_->err.message);
  }
  c.image_width = static_cast<JDIMENSION>(tile.rect.w);
  c.image_height = static_cast<JDIMENSION>(tile.rect.h);
  jpeg_start_compress(&c, TRUE);
  JSAMPROW rows[16];
  while (c.next_scanline < c.image_height) {
    const JDIMENSION n = std::min<JDIMENSION>(16, c.image_height - c.next_scanline);
    for (JDIMENSION i = 0; i < n; ++i) rows[i] = tile.row_bytes(tile.rect.y + c.next_scanline + i);
    jpeg_write_scanlines(&c, rows, n);
  }
  jpeg_finish_compress(&c);
}

}  // namespace tw
