#pragma once
// Baseline JPEG tiles with libjpeg-turbo, in TIFF's "abbreviated" form: the
// quantisation and Huffman tables live once in the JPEGTables tag and every
// tile stream omits them (as libtiff writes them, ~0.5 KiB saved per tile).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/image.hpp"
#include "engine/jpeg_coefs.hpp"

namespace tw {

class JpegEncoder {
 public:
  // channels: 1 (gray) or 3 (RGB in, YCbCr stored).
  JpegEncoder(int channels, int quality, ChromaSubsampling sub, int64_t tile_w, int64_t tile_h);
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // SOI, DQT, DHT, EOI: the content of the TIFF JPEGTables tag.
  const std::vector<uint8_t>& tables() const { return tables_; }
  void encode(const ImageView& tile, std::vector<uint8_t>& out);

  // The split encode (engine/jpeg_coefs.hpp), for square tiles: the layout
  // of this encoder's coefficients, its quantisation tables
  // (layout.quant_per_tile() values, natural order), and entropy coding of
  // coefficients computed elsewhere (kernels/jpeg_fdct) into the very bytes
  // encode() makes from the pixels they came from.
  JpegCoefLayout coef_layout() const;
  std::vector<uint16_t> quant_tables() const;
  void encode_coefficients(const int16_t* coefs, std::vector<uint8_t>& out);
  // For entropy coding elsewhere (io/codec/jpeg_transform/jpeg_huffman.hpp):
  // this encoder's Huffman codes per component, and the bytes its tile
  // streams start with, up to their entropy-coded segment.
  std::vector<JpegHuffCodes> huffman_codes() const;
  std::vector<uint8_t> stream_head();

 private:
  struct State;
  std::unique_ptr<State> st_;
  std::vector<uint8_t> tables_;
};

// Decodes one TIFF JPEG tile or strip (with the level's JPEGTables, if any).
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // photometric: TIFF Photometric (1 gray, 2 RGB, 6 YCbCr) telling how the
  // stream's components are to be read. expect_w x expect_h: the tile or
  // strip as stored (an edge tile whole); a stream larger than that (but for
  // padding to whole MCUs) is refused before libjpeg allocates for it.
  // Writes the top-left dst.rect.w x dst.rect.h pixels of the decoded image
  // into dst. Throws InputError (with `what` naming the tile) on corrupt data.
  void decode(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables, int photometric, int64_t expect_w,
              int64_t expect_h, const ImageView& dst, const std::string& what);

  // Entropy decoding only (engine/jpeg_coefs.hpp): writes the stream's
  // quantised coefficients (layout.coefs_per_tile()) and quantisation tables
  // (layout.quant_per_tile()). Returns false, writing nothing useful, where
  // the stream is not laid out so (size, components, sampling, precision).
  // Throws InputError on corrupt data, as decode() does.
  bool decode_coefficients(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables,
                           const JpegCoefLayout& layout, int16_t* coefs, uint16_t* quant, const std::string& what);

  // The headers only, for the GPU's entropy decoding
  // (io/codec/jpeg_transform/jpeg_huffman_decode.hpp): fills `head`, or
  // returns false where the tile is not one baseline scan laid out as
  // `layout` says (decode_coefficients then). Throws on corrupt headers.
  bool scan_head(const uint8_t* data, size_t n, const std::vector<uint8_t>& tables, const JpegCoefLayout& layout,
                 JpegScanHead& head, const std::string& what);

 private:
  void restart();  // a fresh libjpeg decompressor: no tables of an earlier stream
  struct State;
  std::unique_ptr<State> st_;
  std::vector<uint8_t> row_;
};

}  // namespace tw
