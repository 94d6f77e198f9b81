#include "io/tiff/tiff_dir.hpp"

#include <algorithm>
#include <cctype>

#include "io/tiff/tiff_error.hpp"

namespace tw {
namespace {

Codec codec_of(uint16_t c) {
  switch (c) {
    case COMPRESSION_NONE:
      return Codec::kNone;
    case COMPRESSION_LZW:
      return Codec::kLzw;
    case COMPRESSION_JPEG:
      return Codec::kJpeg;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return Codec::kDeflate;
    case COMPRESSION_ZSTD:
      return Codec::kZstd;
    default:
      return Codec::kOther;
  }
}

std::string too_many(int spp) {
  return std::to_string(spp) + " samples per pixel (at most " + std::to_string(kMaxChannels) +
         " channels are supported)";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// libtiff reads a directory whose offset or byte-count arrays are shorter
// than its size needs by ignoring them or padding them with zeros, which
// would read as an image of blank (sparse) tiles of whatever size the header
// claims: a damaged file, refused.
std::string damage_in(const std::string& warnings) {
  for (const char* tag : {"StripOffsets", "StripByteCounts", "TileOffsets", "TileByteCounts"})
    if (warnings.find(std::string("Incorrect count for \"") + tag + "\"") != std::string::npos)
      return std::string("damaged directory: its ") + tag + " do not match its size";
  return "";
}

}  // namespace

uint64_t max_decoded_bytes(uint16_t compression, uint64_t n) {
  switch (compression) {
    case COMPRESSION_NONE:
      return n;
    case COMPRESSION_PACKBITS:
      return n * 64 + 256;
    case COMPRESSION_LZW:
      return n * 4096 + 65536;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return n * 1032 + 65536;
    case COMPRESSION_ZSTD:
      return n * 32768 + (uint64_t{1} << 20);
    case COMPRESSION_JPEG:
      return n * 2048 + 65536;
    default:
      return UINT64_MAX;  // a codec whose bound we do not know
  }
}

std::string compression_name(uint16_t c) {
  switch (c) {
    case COMPRESSION_NONE:
      return "none";
    case COMPRESSION_LZW:
      return "lzw";
    case COMPRESSION_OJPEG:
      return "old-jpeg";
    case COMPRESSION_JPEG:
      return "jpeg";
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return "deflate";
    case COMPRESSION_PACKBITS:
      return "packbits";
    case COMPRESSION_ZSTD:
      return "zstd";
    case COMPRESSION_WEBP:
      return "webp";
    case COMPRESSION_LZMA:
      return "lzma";
    case 33003:
    case 33005:
      return "jpeg2000 (Aperio)";
    case 34712:
      return "jpeg2000";
    default:
      return "compression " + std::to_string(c);
  }
}

Dir read_dir(TIFF* t, tdir_t index, uint64_t subifd) {
  Dir d;
  d.index = index;
  d.subifd = subifd;
  uint32_t w = 0, h = 0;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
  d.width = w, d.height = h;
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &d.compression);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &d.photometric)) d.photometric = 0xffff;
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &d.planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &d.bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &d.spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &d.sample_format);
  TIFFGetFieldDefaulted(t, TIFFTAG_FILLORDER, &d.fillorder);
  TIFFGetFieldDefaulted(t, TIFFTAG_SUBFILETYPE, &d.subfile_type);
  if (d.compression == COMPRESSION_LZW || d.compression == COMPRESSION_ADOBE_DEFLATE ||
      d.compression == COMPRESSION_DEFLATE || d.compression == COMPRESSION_ZSTD)
    TIFFGetFieldDefaulted(t, TIFFTAG_PREDICTOR, &d.predictor);
  if (d.photometric == PHOTOMETRIC_YCBCR) TIFFGetFieldDefaulted(t, TIFFTAG_YCBCRSUBSAMPLING, &d.sub_h, &d.sub_v);
  char* desc = nullptr;
  if (TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) && desc) d.description = desc;
  TIFFGetField(t, TIFFTAG_XRESOLUTION, &d.xres);
  TIFFGetField(t, TIFFTAG_YRESOLUTION, &d.yres);
  TIFFGetFieldDefaulted(t, TIFFTAG_RESOLUTIONUNIT, &d.res_unit);

  d.tiled = TIFFIsTiled(t) != 0;
  uint64_t* offs = nullptr;
  uint64_t* cnts = nullptr;
  if (d.tiled) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    d.chunk_w = tw, d.chunk_h = th;
    TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &cnts);
  } else {
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rps);
    d.chunk_w = d.width;
    d.chunk_h = std::min<int64_t>(rps == 0 ? d.height : rps, std::max<int64_t>(d.height, 1));
    TIFFGetField(t, TIFFTAG_STRIPOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_STRIPBYTECOUNTS, &cnts);
  }
  if (d.width <= 0 || d.height <= 0) {
    d.unsupported = "image has no pixels (" + std::to_string(d.width) + "x" + std::to_string(d.height) + ")";
    return d;
  }
  d.unsupported = damage_in(take_tiff_warnings());
  if (!d.unsupported.empty()) return d;
  if (d.chunk_w <= 0 || d.chunk_h <= 0) {
    d.unsupported = "invalid tile size " + std::to_string(d.chunk_w) + "x" + std::to_string(d.chunk_h);
    return d;
  }
  const size_t n = static_cast<size_t>(d.tiled ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t));
  const size_t expect = static_cast<size_t>(d.per_plane()) * d.planes();
  if (!offs || !cnts || n < expect) {
    d.unsupported = "tile/strip offsets are missing or incomplete";
    return d;
  }
  d.offsets.assign(offs, offs + expect);
  d.counts.assign(cnts, cnts + expect);

  if (d.compression == COMPRESSION_JPEG) {
    uint32_t len = 0;
    void* tables = nullptr;
    if (TIFFGetField(t, TIFFTAG_JPEGTABLES, &len, &tables) && tables && len > 0)
      d.jpeg_tables.assign(static_cast<uint8_t*>(tables), static_cast<uint8_t*>(tables) + len);
  }
  if (d.photometric == PHOTOMETRIC_PALETTE && d.bits == 8) {
    uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
    if (TIFFGetField(t, TIFFTAG_COLORMAP, &r, &g, &b)) {
      for (int i = 0; i < 3; ++i) d.cmap[i].resize(256);
      std::copy(r, r + 256, d.cmap[0].begin());
      std::copy(g, g + 256, d.cmap[1].begin());
      std::copy(b, b + 256, d.cmap[2].begin());
    }
  }

  // What can we make of its pixels?
  auto bad = [&](const std::string& why) { d.unsupported = why; };
  const bool float32 = d.sample_format == SAMPLEFORMAT_IEEEFP && d.bits == 32;
  if (float32) {
    if (d.compression == COMPRESSION_JPEG) bad("JPEG with floating-point samples");
  } else if (d.sample_format != SAMPLEFORMAT_UINT)
    bad(std::string("unsupported pixel type: ") +
        (d.sample_format == SAMPLEFORMAT_IEEEFP ? "floating-point" : "signed integer") + " samples of " +
        std::to_string(d.bits) + " bits");
  else if (d.bits != 8 && d.bits != 16 && !(d.bits == 32 && d.spp == 1))
    bad("unsupported pixel type: " + std::to_string(d.bits) + "-bit samples" +
        (d.bits == 32 ? " with " + std::to_string(d.spp) + " samples per pixel" : std::string()) +
        " (8, 16, 32-bit float, and 32-bit unsigned single-channel labels are supported)");
  else if (d.fillorder != FILLORDER_MSB2LSB)
    bad("unsupported FillOrder (LSB first)");
  else if (d.compression == COMPRESSION_OJPEG)
    bad("old-style JPEG compression (6) is not supported");
  else if (!TIFFIsCODECConfigured(d.compression))
    bad(compression_name(d.compression) + " is not supported by this libtiff");
  if (!d.unsupported.empty()) return d;

  const SampleType st = float32        ? SampleType::kF32
                        : d.bits == 32 ? SampleType::kU32
                        : d.bits == 16 ? SampleType::kU16
                                       : SampleType::kU8;
  switch (d.photometric) {
    case PHOTOMETRIC_MINISBLACK:
      // Any number of channels (fluorescence, multiplex): each one a plane
      // of its own meaning, kept as it is (docs/channels.md).
      if (d.spp > kMaxChannels) bad(too_many(d.spp));
      d.out_fmt = {st, d.spp};
      break;
    case PHOTOMETRIC_MINISWHITE:
      // Only the gray sample inverts; with more samples what inverts is
      // a guess.
      if (d.spp > 2) bad("MinIsWhite image with " + std::to_string(d.spp) + " samples per pixel");
      d.out_fmt = {st, d.spp};
      break;
    case PHOTOMETRIC_RGB:
      // RGB and its ExtraSamples (alpha, or further channels) as channels.
      if (d.spp < 3) bad("RGB image with " + std::to_string(d.spp) + " samples per pixel");
      if (d.spp > kMaxChannels) bad(too_many(d.spp));
      d.out_fmt = {st, d.spp};
      break;
    case PHOTOMETRIC_YCBCR:
      if (d.compression != COMPRESSION_JPEG)
        bad("YCbCr pixels are supported only with JPEG compression");
      else if (d.spp != 3)
        bad("YCbCr image with " + std::to_string(d.spp) + " samples per pixel");
      d.out_fmt = {st, 3};
      break;
    case PHOTOMETRIC_PALETTE:
      if (d.bits != 8 || d.spp != 1 || d.cmap[0].empty() || float32)
        bad("palette images must be 8-bit with a colour map");
      d.out_fmt = {SampleType::kU8, 3};
      break;
    case 0xffff:
      // No Photometric tag: guess from the samples, as most readers do.
      d.photometric = d.spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
      if (d.spp > kMaxChannels) bad(too_many(d.spp));
      d.out_fmt = {st, d.spp};
      break;
    default:
      bad("unsupported Photometric " + std::to_string(d.photometric) + " (CMYK, Lab and others)");
  }
  if (st == SampleType::kU32 && d.photometric == PHOTOMETRIC_MINISWHITE)
    bad("32-bit MinIsWhite images are not supported (32-bit unsigned is read as labels)");
  // Inverting needs the white the samples count down from: 255 or 65535 for
  // 8 and 16 bits; floats have none (is 1.0 white? the data's maximum?), so
  // passing them through would hand out the image's negative.
  if (st == SampleType::kF32 && d.photometric == PHOTOMETRIC_MINISWHITE)
    bad("floating-point MinIsWhite images are not supported (floats have no white to invert from): "
        "re-save it as MinIsBlack with the values inverted");
  if (d.compression == COMPRESSION_JPEG) {
    if (d.bits != 8) bad("JPEG with " + std::to_string(d.bits) + "-bit samples is not supported");
    if (d.spp != 1 && d.spp != 3) bad("JPEG with " + std::to_string(d.spp) + " samples per pixel is not supported");
    if (d.planar == PLANARCONFIG_SEPARATE) bad("planar JPEG is not supported");
    if (d.photometric == PHOTOMETRIC_MINISWHITE) bad("JPEG with MinIsWhite is not supported");
    d.own_jpeg = true;
  }
  if (!d.unsupported.empty()) return d;

  d.raw.codec = codec_of(d.compression);
  d.raw.tiff_compression = d.compression;
  d.raw.photometric = d.photometric;
  d.raw.subsampling_h = d.sub_h, d.raw.subsampling_v = d.sub_v;
  d.raw.predictor = d.predictor;
  d.raw.sample_format = d.sample_format;
  d.raw.bits_per_sample = d.bits;
  d.raw.samples_per_pixel = d.spp;
  d.raw.tile_w = d.chunk_w, d.raw.tile_h = d.chunk_h;
  d.raw.jpeg_tables = d.jpeg_tables;
  d.raw_ok = d.tiled && d.raw.codec != Codec::kOther && d.planar == PLANARCONFIG_CONTIG &&
             (d.photometric == PHOTOMETRIC_MINISBLACK || d.photometric == PHOTOMETRIC_RGB ||
              d.photometric == PHOTOMETRIC_YCBCR);
  // A decode holds the chunk's compressed bytes and its pixels (ours from
  // JPEG: a whole-tile copy for tiles that overlap a read in part); a strip
  // read row by row, one row (libtiff reads its bytes piecewise).
  const uint64_t max_count = d.counts.empty() ? 0 : *std::max_element(d.counts.begin(), d.counts.end());
  const uint64_t out_chunk =
      static_cast<uint64_t>(d.chunk_w) * static_cast<uint64_t>(d.chunk_h) * d.out_fmt.bytes_per_pixel();
  const uint64_t unit = d.row_by_row() ? static_cast<uint64_t>(d.width) * d.plane_bytes_per_pixel()
                        : d.own_jpeg   ? max_count + out_chunk
                                       : max_count + d.chunk_plane_bytes();
  d.unit_bytes = static_cast<size_t>(std::min<uint64_t>(unit, SIZE_MAX / 2));
  return d;
}

std::string associated_name(const Dir& d, bool aperio, bool first_assoc) {
  const std::string desc = lower(d.description);
  for (const char* key : {"label", "macro", "thumbnail", "overview"})
    if (desc.rfind(key, 0) == 0 || desc.find(std::string("\n") + key) != std::string::npos ||
        desc.find(std::string(" ") + key + " ") != std::string::npos || desc == key)
      return std::string(key) == "overview" ? "macro" : key;
  if (aperio && first_assoc) return "thumbnail";  // Aperio's second directory
  return "image-" + std::to_string(d.index);
}

double mpp_from(const Dir& d, float res) {
  if (res <= 0) return 0;
  if (d.res_unit == RESUNIT_CENTIMETER) return 10000.0 / res;
  if (d.res_unit == RESUNIT_INCH) return 25400.0 / res;
  return 0;
}

double aperio_mpp(const std::string& desc) {
  const auto p = desc.find("MPP = ");
  if (p == std::string::npos) return 0;
  try {
    return std::stod(desc.substr(p + 6));
  } catch (...) {
    return 0;
  }
}

}  // namespace tw
