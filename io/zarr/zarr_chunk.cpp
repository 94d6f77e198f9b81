#include "io/zarr/zarr_chunk.hpp"

#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.hpp"
#include "io/codec/uniform_tiles.hpp"

// Zarr's dtypes here are little-endian ("<u2"): the samples are stored as
// they lie in memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Zarr chunks are written in host byte order");

namespace tw {
namespace {

template <class T>
void transpose(const ImageView& tile, int64_t valid_w, int64_t valid_h, T* planes) {
  const int C = tile.fmt.channels;
  const int64_t n = tile.rect.w;
  const size_t plane = static_cast<size_t>(n) * static_cast<size_t>(tile.rect.h);
  for (int64_t y = 0; y < tile.rect.h; ++y) {
    if (y >= valid_h) {
      for (int c = 0; c < C; ++c) std::fill_n(planes + c * plane + static_cast<size_t>(y * n), n, T(0));
      continue;
    }
    const T* src = tile.row<T>(tile.rect.y + y);
    for (int c = 0; c < C; ++c) {
      T* dst = planes + c * plane + static_cast<size_t>(y * n);
      if (C == 1) {
        std::memcpy(dst, src, static_cast<size_t>(valid_w) * sizeof(T));
      } else {
        for (int64_t x = 0; x < valid_w; ++x) dst[x] = src[x * C + c];
      }
      std::fill(dst + valid_w, dst + n, T(0));
    }
  }
}

// numcodecs.Delta: the first sample kept, then each the difference from the
// one before it in the flattened chunk, wrapping as the dtype does.
template <class T>
void delta(T* p, size_t n) {
  T prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const T v = p[i];
    p[i] = static_cast<T>(v - prev);
    prev = v;
  }
}

}  // namespace

void ZarrCompression::validate(PixelFormat fmt) const {
  switch (codec) {
    case Codec::kNone:
    case Codec::kDeflate:
    case Codec::kZstd:
      break;
    default:
      throw InputError(std::string("OME-Zarr output stores deflate, zstd or uncompressed chunks, not ") +
                       codec_name(codec) + " (use --compression deflate, zstd or none)");
  }
  if (codec == Codec::kDeflate && level != -1 && (level < 1 || level > 12))
    throw InputError("deflate level " + std::to_string(level) + " is out of range 1..12");
  if (codec == Codec::kZstd && level != -1 && (level < 1 || level > 22))
    throw InputError("zstd level " + std::to_string(level) + " is out of range 1..22");
  if (delta && fmt.type == SampleType::kF32) throw InternalError("no delta filter for float samples");
}

int ZarrCompression::effective_level() const {
  if (level > 0) return level;
  return codec == Codec::kZstd ? 3 : 6;
}

void tile_to_planes(const ImageView& tile, int64_t level_w, int64_t level_h, uint8_t* planes) {
  const int64_t vw = std::clamp<int64_t>(level_w - tile.rect.x, 0, tile.rect.w);
  const int64_t vh = std::clamp<int64_t>(level_h - tile.rect.y, 0, tile.rect.h);
  switch (sample_bytes(tile.fmt.type)) {
    case 1:
      return transpose(tile, vw, vh, planes);
    case 2:
      return transpose(tile, vw, vh, reinterpret_cast<uint16_t*>(planes));
    default:
      return transpose(tile, vw, vh, reinterpret_cast<uint32_t*>(planes));
  }
}

void delta_encode(uint8_t* data, size_t bytes, SampleType type) {
  switch (type) {
    case SampleType::kU8:
      return delta(data, bytes);
    case SampleType::kU16:
      return delta(reinterpret_cast<uint16_t*>(data), bytes / 2);
    case SampleType::kU32:
    case SampleType::kI32:  // two's complement: the same bits as int32 arithmetic
      return delta(reinterpret_cast<uint32_t*>(data), bytes / 4);
    case SampleType::kF32:
      break;
  }
  throw InternalError("no delta filter for float samples");
}

struct ZarrChunkEncoder::Impl {
  PixelFormat fmt;
  int64_t chunk;
  ZarrCompression comp;
  std::vector<uint8_t> planes;
  libdeflate_compressor* deflate = nullptr;
  ZSTD_CCtx* zstd = nullptr;
  UniformTileBytes kept;  // the last few uniform chunks' bytes
  std::vector<uint8_t> pixel;
};

ZarrChunkEncoder::ZarrChunkEncoder(PixelFormat fmt, int64_t chunk, const ZarrCompression& c)
    : impl_(std::make_unique<Impl>()) {
  impl_->fmt = fmt;
  impl_->chunk = chunk;
  impl_->comp = c;
  impl_->planes.resize(static_cast<size_t>(chunk * chunk) * fmt.bytes_per_pixel());
  if (c.codec == Codec::kDeflate) {
    impl_->deflate = libdeflate_alloc_compressor(c.effective_level());
    if (!impl_->deflate) throw InternalError("libdeflate_alloc_compressor failed");
  } else if (c.codec == Codec::kZstd) {
    impl_->zstd = ZSTD_createCCtx();
    if (!impl_->zstd) throw InternalError("ZSTD_createCCtx failed");
  }
}

ZarrChunkEncoder::~ZarrChunkEncoder() {
  if (impl_->deflate) libdeflate_free_compressor(impl_->deflate);
  if (impl_->zstd) ZSTD_freeCCtx(impl_->zstd);
}

void ZarrChunkEncoder::encode(const ImageView& tile, int64_t level_w, int64_t level_h, std::vector<uint8_t>& out) {
  Impl& m = *impl_;
  TW_ASSERT(tile.fmt == m.fmt && tile.rect.w == m.chunk && tile.rect.h == m.chunk);
  // A chunk of one colour wholly inside the level (io/codec/uniform_tiles.hpp):
  // its bytes depend on that colour alone, so they are compressed once.
  const bool inside = tile.rect.x1() <= level_w && tile.rect.y1() <= level_h;
  const bool uniform = inside && m.comp.codec != Codec::kNone && uniform_tile(tile, m.pixel);
  if (uniform)
    if (const std::vector<uint8_t>* kept = m.kept.find(m.chunk, m.chunk, m.pixel)) {
      out = *kept;
      return;
    }
  tile_to_planes(tile, level_w, level_h, m.planes.data());
  if (m.comp.delta) delta_encode(m.planes.data(), m.planes.size(), m.fmt.type);
  compress(out);
  if (uniform) m.kept.keep(m.chunk, m.chunk, m.pixel, out);
}

void ZarrChunkEncoder::compress(std::vector<uint8_t>& out) {
  Impl& m = *impl_;
  switch (m.comp.codec) {
    case Codec::kDeflate: {
      out.resize(libdeflate_zlib_compress_bound(m.deflate, m.planes.size()));
      const size_t n = libdeflate_zlib_compress(m.deflate, m.planes.data(), m.planes.size(), out.data(), out.size());
      if (n == 0) throw InternalError("deflate compression failed");
      out.resize(n);
      return;
    }
    case Codec::kZstd: {
      // numcodecs' Zstd decoder needs the content size in the frame header,
      // which ZSTD_compressCCtx writes.
      out.resize(ZSTD_compressBound(m.planes.size()));
      const size_t n =
          ZSTD_compressCCtx(m.zstd, out.data(), out.size(), m.planes.data(), m.planes.size(), m.comp.effective_level());
      if (ZSTD_isError(n)) throw InternalError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return;
    }
    default:
      out.assign(m.planes.begin(), m.planes.end());
      return;
  }
}

}  // namespace tw
