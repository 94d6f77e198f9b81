#include "io/codec/jpeg_codec.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "engine/error.hpp"
#include "io/codec/jpeg_vector_dest.hpp"

namespace tw {
namespace {

// libjpeg reports errors through a callback that must not return; C++
// exceptions cannot unwind through its C frames, so we longjmp back to the
// caller's setjmp and throw from there.
struct ErrorMgr {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool corrupt = false;  // a warning that means damaged data
};

void on_error_exit(j_common_ptr c) {
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  (*c->err->format_message)(c, e->message);
  longjmp(e->jump, 1);
}

void on_emit_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  // Warnings that signal a damaged stream: libjpeg substitutes grey blocks
  // and carries on, which must not pass silently into a pyramid.
  switch (c->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
      if (!e->corrupt) (*c->err->format_message)(c, e->message);
      e->corrupt = true;
      break;
    default:
      break;
  }
}

void init_error(ErrorMgr& e) {
  jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error_exit;
  e.pub.emit_message = on_emit_message;
  e.message[0] = 0;
}

}  // namespace

struct JpegEncoder::State {
  jpeg_compress_struct cinfo{};
  ErrorMgr err;
  JpegVectorDest dest;  // compressed bytes go straight into a std::vector
  int64_t w = 0, h = 0;
  int channels = 0;
};

JpegEncoder::JpegEncoder(int channels, int quality, ChromaSubsampling sub, int64_t tile_w, int64_t tile_h)
    : st_(std::make_unique<State>()) {
  TW_ASSERT(channels == 1 || channels == 3);
  auto& c = st_->cinfo;
  init_error(st_->err);
  c.err = &st_->err.pub;
  st_->w = tile_w, st_->h = tile_h, st_->channels = channels;
  if (setjmp(st_->err.jump)) {
    jpeg_destroy_compress(&c);
    throw InternalError(std::string("JPEG encoder setup failed: ") + st_->err.message);
  }
  jpeg_create_compress(&c);
  st_->dest.attach(&c);
  c.image_width = static_cast<JDIMENSION>(tile_w);
  c.image_height = static_cast<JDIMENSION>(tile_h);
  c.input_components = channels;
  c.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  if (channels == 3) {
    const int f = sub == ChromaSubsampling::k420 ? 2 : 1;
    c.comp_info[0].h_samp_factor = f;
    c.comp_info[0].v_samp_factor = f;
    c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
    c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
  }
  c.write_JFIF_header = FALSE;
  c.write_Adobe_marker = FALSE;
  c.optimize_coding = FALSE;  // tables are shared by all tiles of a level
  c.dct_method = JDCT_ISLOW;
  st_->dest.out = &tables_;
  jpeg_write_tables(&c);  // also marks the tables as sent: tile streams omit them
}

JpegEncoder::~JpegEncoder() {
  jpeg_destroy_compress(&st_->cinfo);
}

void JpegEncoder::encode(const ImageView& tile, std::vector<uint8_t>& out) {
  TW_ASSERT(tile.rect.w == st_->w && tile.rect.h == st_->h && tile.fmt.channels == st_->channels);
  auto& c = st_->cinfo;
  st_->dest.out = &out;
  if (setjmp(st_->err.jump)) {
    jpeg_abort_compress(&c);
    throw InternalError(std::string("JPEG encoding failed: ") + st_->err.message);
  }
  jpeg_start_compress(&c, FALSE);
  JSAMPROW rows[32];
  while (c.next_scanline < c.image_height) {
    const JDIMENSION n = std::min<JDIMENSION>(32, c.image_height - c.next_scanline);
    for (JDIMENSION i = 0; i < n; ++i) rows[i] = tile.row_bytes(tile.rect.y + c.next_scanline + i);
    jpeg_write_scanlines(&c, rows, n);
  }
  jpeg_finish_compress(&c);
}

JpegCoefLayout JpegEncoder::coef_layout() const {
  TW_ASSERT(st_->w == st_->h && st_->w % 16 == 0);
  const auto& c = st_->cinfo;
  JpegCoefLayout l;
  l.components = st_->channels;
  l.tile = st_->w;
  if (st_->channels == 3) l.h_samp = c.comp_info[0].h_samp_factor, l.v_samp = c.comp_info[0].v_samp_factor;
  return l;
}

std::vector<uint16_t> JpegEncoder::quant_tables() const {
  const auto& c = st_->cinfo;
  std::vector<uint16_t> q;
  for (int ci = 0; ci < st_->channels; ++ci) {
    const JQUANT_TBL* t = c.quant_tbl_ptrs[c.comp_info[ci].quant_tbl_no];
    TW_ASSERT(t);
    q.insert(q.end(), t->quantval, t->quantval + 64);
  }
  return q;
}

void JpegEncoder::encode_coefficients(const int16_t* coefs, std::vector<uint8_t>& out) {
  auto& c = st_->cinfo;
  const JpegCoefLayout layout = coef_layout();
  st_->dest.out = &out;
  // Transcoding takes coefficients already in the stored colour space (as
  // jpeg_copy_critical_parameters would set it) and sets input_components
  // to 1; encode() needs both back, whatever happens.
  const J_COLOR_SPACE in_space = c.in_color_space;
  const int in_components = c.input_components;
  if (setjmp(st_->err.jump)) {
    jpeg_abort_compress(&c);
    c.in_color_space = in_space;
    c.input_components = in_components;
    throw InternalError(std::string("JPEG encoding failed: ") + st_->err.message);
  }
  jvirt_barray_ptr arrays[3] = {};
  for (int ci = 0; ci < layout.components; ++ci)
    arrays[ci] = (*c.mem->request_virt_barray)(
        reinterpret_cast<j_common_ptr>(&c), JPOOL_IMAGE, FALSE, static_cast<JDIMENSION>(layout.blocks_w(ci)),
        static_cast<JDIMENSION>(layout.blocks_h(ci)), static_cast<JDIMENSION>(c.comp_info[ci].v_samp_factor));
  (*c.mem->realize_virt_arrays)(reinterpret_cast<j_common_ptr>(&c));
  for (int ci = 0; ci < layout.components; ++ci) {
    const int64_t bw = layout.blocks_w(ci);
    const int16_t* in = coefs + layout.block_offset(ci) * 64;
    for (int64_t r = 0; r < layout.blocks_h(ci); ++r) {
      JBLOCKARRAY row = (*c.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&c), arrays[ci],
                                                     static_cast<JDIMENSION>(r), 1, TRUE);
      std::memcpy(row[0], in + r * bw * 64, static_cast<size_t>(bw) * sizeof(JBLOCK));
    }
  }
  c.in_color_space = c.jpeg_color_space;
  jpeg_write_coefficients(&c, arrays);
  // jpeg_write_coefficients marks every table for writing; tiles carry none
  // (they are in JPEGTables), as encode()'s abbreviated streams.
  jpeg_suppress_tables(&c, TRUE);
  jpeg_finish_compress(&c);
  c.in_color_space = in_space;
  c.input_components = in_components;
}

namespace {

// Figures C.1 to C.3 of the JPEG standard, as jpeg_make_c_derived_tbl does them.
void derive_codes(const JHUFF_TBL& t, int symbols, uint16_t* code, uint8_t* len) {
  std::memset(code, 0, sizeof(uint16_t) * static_cast<size_t>(symbols));
  std::memset(len, 0, static_cast<size_t>(symbols));
  unsigned next = 0;
  int p = 0;
  for (int l = 1; l <= 16; ++l, next <<= 1)
    for (int i = 0; i < t.bits[l]; ++i, ++p, ++next) {
      const int sym = t.huffval[p];
      if (sym < symbols) code[sym] = static_cast<uint16_t>(next), len[sym] = static_cast<uint8_t>(l);
    }
}

}  // namespace

std::vector<JpegHuffCodes> JpegEncoder::huffman_codes() const {
  const auto& c = st_->cinfo;
  std::vector<JpegHuffCodes> out(static_cast<size_t>(st_->channels));
  for (int ci = 0; ci < st_->channels; ++ci) {
    const JHUFF_TBL* dc = c.dc_huff_tbl_ptrs[c.comp_info[ci].dc_tbl_no];
    const JHUFF_TBL* ac = c.ac_huff_tbl_ptrs[c.comp_info[ci].ac_tbl_no];
    TW_ASSERT(dc && ac);
    derive_codes(*dc, 16, out[ci].dc_code, out[ci].dc_len);
    derive_codes(*ac, 256, out[ci].ac_code, out[ci].ac_len);
  }
  return out;
}

std::vector<uint8_t> JpegEncoder::stream_head() {
  // A tile of zero coefficients, cut after its SOS segment.
  std::vector<int16_t> zeros(coef_layout().coefs_per_tile(), 0);
  std::vector<uint8_t> s;
  encode_coefficients(zeros.data(), s);
  size_t p = 2;  // past SOI
  while (p + 4 <= s.size() && s[p] == 0xFF) {
    const size_t len = static_cast<size_t>(s[p + 2]) << 8 | s[p + 3];
    const bool sos = s[p + 1] == 0xDA;
    p += 2 + len;
    if (sos) {
      TW_ASSERT(p <= s.size() && s.size() >= 2 && s[s.size() - 2] == 0xFF && s.back() == 0xD9);
      s.resize(p);
      return s;
    }
  }
  throw InternalError("JPEG encoder wrote a tile stream without SOS");
}

namespace {

// The one-line error for a damaged tile, with libjpeg's own words.
InputError corrupt(const ErrorMgr& err, const std::string& what) {
  return InputError("corrupt JPEG data in " + what + ": " + err.message);
}

void begin_tile(ErrorMgr& err, size_t n, const std::string& what) {
  err.corrupt = false;
  err.message[0] = 0;
  if (n < 4) throw InputError("corrupt JPEG data in " + what + ": only " + std::to_string(n) + " bytes");
}

// The level's tables (a TIFF JPEGTables stream), then the tile's header.
void read_headers(jpeg_decompress_struct& d, const uint8_t* data, size_t n, const std::vector<uint8_t>& tables) {
  if (!tables.empty()) {
    jpeg_mem_src(&d, tables.data(), static_cast<unsigned long>(tables.size()));
    jpeg_read_header(&d, FALSE);
  }
  jpeg_mem_src(&d, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d, TRUE);
}

}  // namespace

struct JpegDecoder::State {
  jpeg_decompress_struct dinfo{};
  ErrorMgr err;
};

JpegDecoder::JpegDecoder() : st_(std::make_unique<State>()) {
  init_error(st_->err);
  st_->dinfo.err = &st_->err.pub;
  jpeg_create_decompress(&st_->dinfo);
}

JpegDecoder::~JpegDecoder() {
  jpeg_destroy_decompress(&st_->dinfo);
}

// Every stream starts from a fresh decompressor: libjpeg keeps the tables of
// earlier streams in the object, so a stream that lacks one (a damaged tile,
// JPEGTables missing) decoded with whatever tables this thread read last, of
// any level or file, instead of failing (fuzz_tiff_source). The cost is
// ~0.1 us against a tile's decoding in hundreds.
void JpegDecoder::restart() {
  jpeg_destroy_decompress(&st_->dinfo);
  st_->dinfo.err = &st_->err.pub;
  jpeg_create_decompress(&st_->dinfo);
}

void JpegDecoder::decode(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables, int photometric,
                         int64_t expect_w, int64_t expect_h, const ImageView& dst, const std::string& what) {
  auto& d = st_->dinfo;
  restart();
  begin_tile(st_->err, n, what);
  // libjpeg's errors longjmp here (read_headers' frame is unwound with them).
  if (setjmp(st_->err.jump)) {
    jpeg_abort_decompress(&d);
    throw corrupt(st_->err, what);
  }
  read_headers(d, data, n, tables);
  // A stream may not be larger than the tile or strip it is stored as
  // (writers pad to whole MCUs, at most 16 pixels): libjpeg would allocate,
  // and for a progressive stream entropy-decode, all of it before the first
  // row (a 700-byte tile claiming 32767x32767 took over 3 GB; fuzz_jpeg_decode).
  const int64_t max_w = (expect_w + 15) / 16 * 16, max_h = (expect_h + 15) / 16 * 16;
  if (static_cast<int64_t>(d.image_width) > max_w || static_cast<int64_t>(d.image_height) > max_h) {
    const std::string got = std::to_string(d.image_width) + "x" + std::to_string(d.image_height);
    jpeg_abort_decompress(&d);
    throw InputError("JPEG data in " + what + " is " + got + ", larger than its " + std::to_string(expect_w) + "x" +
                     std::to_string(expect_h) + " tile");
  }
  const int want = dst.fmt.channels;
  if (photometric == 6) {
    d.jpeg_color_space = JCS_YCbCr;
  } else if (photometric == 2) {
    d.jpeg_color_space = JCS_RGB;
  } else {
    d.jpeg_color_space = JCS_GRAYSCALE;
  }
  if (d.num_components != want) {
    jpeg_abort_decompress(&d);
    throw InputError("JPEG data in " + what + " has " + std::to_string(d.num_components) + " components, expected " +
                     std::to_string(want));
  }
  d.out_color_space = want == 3 ? JCS_RGB : JCS_GRAYSCALE;
  d.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&d);
  if (static_cast<int64_t>(d.output_width) < std::min(expect_w, dst.rect.w) ||
      static_cast<int64_t>(d.output_height) < std::min(expect_h, dst.rect.h)) {
    const std::string got = std::to_string(d.output_width) + "x" + std::to_string(d.output_height);
    jpeg_abort_decompress(&d);
    throw InputError("JPEG data in " + what + " is " + got + ", expected " + std::to_string(expect_w) + "x" +
                     std::to_string(expect_h));
  }
  const size_t full_row = static_cast<size_t>(d.output_width) * want;
  const bool direct = static_cast<int64_t>(d.output_width) == dst.rect.w;
  if (direct) {
    // Whole row groups straight into the destination: libjpeg then skips
    // its own row buffer and the copy out of it.
    JSAMPROW rows[64];
    while (static_cast<int64_t>(d.output_scanline) < dst.rect.h) {
      const int64_t y = d.output_scanline;
      const int64_t n = std::min<int64_t>(64, dst.rect.h - y);
      for (int64_t i = 0; i < n; ++i) rows[i] = dst.row_bytes(dst.rect.y + y + i);
      if (n < d.rec_outbuf_height) break;  // a partial row group: finish below
      jpeg_read_scanlines(&d, rows, static_cast<JDIMENSION>(n));
    }
  }
  if (!direct && row_.size() < full_row) row_.resize(full_row);
  while (static_cast<int64_t>(d.output_scanline) < dst.rect.h) {
    uint8_t* out = dst.row_bytes(dst.rect.y + d.output_scanline);
    JSAMPROW row = direct ? out : row_.data();
    jpeg_read_scanlines(&d, &row, 1);
    if (!direct) std::memcpy(out, row_.data(), dst.row_length_bytes());
  }
  // Rows past dst (the padding of an edge tile) are never needed.
  jpeg_abort_decompress(&d);
  if (st_->err.corrupt) throw corrupt(st_->err, what);
}

bool JpegDecoder::decode_coefficients(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables,
                                      const JpegCoefLayout& layout, int16_t* coefs, uint16_t* quant,
                                      const std::string& what) {
  auto& d = st_->dinfo;
  restart();
  begin_tile(st_->err, n, what);
  // libjpeg's errors longjmp here (read_headers' frame is unwound with them).
  if (setjmp(st_->err.jump)) {
    jpeg_abort_decompress(&d);
    throw corrupt(st_->err, what);
  }
  read_headers(d, data, n, tables);
  bool fits = d.num_components == layout.components && d.data_precision == 8 &&
              static_cast<int64_t>(d.image_width) == layout.tile && static_cast<int64_t>(d.image_height) == layout.tile;
  if (fits && layout.components == 3)
    fits = d.comp_info[0].h_samp_factor == layout.h_samp && d.comp_info[0].v_samp_factor == layout.v_samp &&
           d.comp_info[1].h_samp_factor == 1 && d.comp_info[1].v_samp_factor == 1 &&
           d.comp_info[2].h_samp_factor == 1 && d.comp_info[2].v_samp_factor == 1;
  if (!fits) {
    jpeg_abort_decompress(&d);
    return false;
  }
  jvirt_barray_ptr* arrays = jpeg_read_coefficients(&d);
  for (int c = 0; c < layout.components; ++c) {
    const jpeg_component_info& comp = d.comp_info[c];
    const int64_t bw = layout.blocks_w(c), bh = layout.blocks_h(c);
    if (static_cast<int64_t>(comp.width_in_blocks) != bw || static_cast<int64_t>(comp.height_in_blocks) != bh ||
        !comp.quant_table) {
      jpeg_abort_decompress(&d);
      return false;
    }
    int16_t* out = coefs + layout.block_offset(c) * 64;
    for (int64_t r = 0; r < bh; ++r) {
      JBLOCKARRAY row = (*d.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&d), arrays[c],
                                                     static_cast<JDIMENSION>(r), 1, FALSE);
      std::memcpy(out + r * bw * 64, row[0], static_cast<size_t>(bw) * sizeof(JBLOCK));
    }
    for (int k = 0; k < 64; ++k) quant[c * 64 + k] = comp.quant_table->quantval[k];
  }
  jpeg_abort_decompress(&d);
  if (st_->err.corrupt) throw corrupt(st_->err, what);
  return true;
}

bool JpegDecoder::scan_head(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables,
                            const JpegCoefLayout& layout, JpegScanHead& head, const std::string& what) {
  auto& d = st_->dinfo;
  restart();
  begin_tile(st_->err, n, what);
  if (setjmp(st_->err.jump)) {
    jpeg_abort_decompress(&d);
    throw corrupt(st_->err, what);
  }
  read_headers(d, data, n, tables);
  // One baseline scan of every component in frame order, no restarts, the
  // layout's size and sampling: anything else is libjpeg's to decode.
  bool fits = d.num_components == layout.components && d.data_precision == 8 && !d.progressive_mode && !d.arith_code &&
              d.restart_interval == 0 && d.comps_in_scan == d.num_components && d.Ss == 0 && d.Se == 63 && d.Ah == 0 &&
              d.Al == 0 && static_cast<int64_t>(d.image_width) == layout.tile &&
              static_cast<int64_t>(d.image_height) == layout.tile && !st_->err.corrupt;
  for (int c = 0; fits && c < layout.components; ++c) {
    const jpeg_component_info& comp = d.comp_info[c];
    const int h = c == 0 && layout.components == 3 ? layout.h_samp : 1;
    const int v = c == 0 && layout.components == 3 ? layout.v_samp : 1;
    fits = d.cur_comp_info[c] == &d.comp_info[c] && comp.h_samp_factor == h && comp.v_samp_factor == v &&
           static_cast<int64_t>(comp.width_in_blocks) == layout.blocks_w(c) &&
           static_cast<int64_t>(comp.height_in_blocks) == layout.blocks_h(c) && comp.dc_tbl_no >= 0 &&
           comp.dc_tbl_no < NUM_HUFF_TBLS && comp.ac_tbl_no >= 0 && comp.ac_tbl_no < NUM_HUFF_TBLS &&
           comp.quant_tbl_no >= 0 && comp.quant_tbl_no < NUM_QUANT_TBLS;
    const JHUFF_TBL* dc = fits ? d.dc_huff_tbl_ptrs[comp.dc_tbl_no] : nullptr;
    const JHUFF_TBL* ac = fits ? d.ac_huff_tbl_ptrs[comp.ac_tbl_no] : nullptr;
    const JQUANT_TBL* q = fits ? d.quant_tbl_ptrs[comp.quant_tbl_no] : nullptr;
    fits = dc && ac && q;  // libjpeg-turbo would fill in a missing Huffman table
    if (!fits) break;
    std::memcpy(head.dc[c].bits, dc->bits, sizeof head.dc[c].bits);
    std::memcpy(head.dc[c].val, dc->huffval, sizeof head.dc[c].val);
    std::memcpy(head.ac[c].bits, ac->bits, sizeof head.ac[c].bits);
    std::memcpy(head.ac[c].val, ac->huffval, sizeof head.ac[c].val);
    for (int k = 0; k < 64; ++k) head.quant[c * 64 + k] = q->quantval[k];
  }
  const uint8_t* at = d.src->next_input_byte;
  jpeg_abort_decompress(&d);
  if (!fits || at < data || at > data + n) return false;
  head.scan_offset = static_cast<uint32_t>(at - data);
  return true;
}

}  // namespace tw
