#pragma once
// Writes any source (a slide, an op's result) as a pyramid through the sink
// its name selects (io/open_sink.hpp): the levels, the codec's defaults,
// level-0 pass-through of compressed tiles, the associated images, the
// budget of the writer's index. Every front end writes results through it.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/codec_kind.hpp"
#include "engine/exec_context.hpp"
#include "engine/tile_source.hpp"
#include "io/codec/tile_codec.hpp"
#include "jobs/pyramid/pyramid_job.hpp"

namespace tw {

struct OutputSpec {
  std::string path;
  std::string format;          // --format: tiff, ome-tiff, dzi, zarr; empty: by the path's name
  int64_t layout_tile = 0;     // --tile as given: Deep Zoom's tile size (any), TIFF's (multiple of 16); 0: default
  int overlap = 1;             // --overlap: Deep Zoom tiles' shared border
  bool color = true;           // 3/4 channels are RGB(A) colour (SourceInfo::color)
  std::string description;     // ImageDescription of level 0
  std::optional<Codec> codec;  // none: JPEG for 8-bit gray or RGB (unless lossless), else deflate
  bool lossless = false;       // results of ops: deflate unless a codec is given
  int quality = 90;            // JPEG
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  bool subsampling_given = false;  // pass-through of JPEG tiles needs their subsampling to match
  int level = -1;                  // deflate/zstd effort; -1: the codec's default
  bool predictor = true;
  int64_t min_size = 256;  // levels until both sides are <= this
  PyramidJobOptions::GpuJpeg gpu_jpeg = PyramidJobOptions::GpuJpeg::kAuto;
  bool allow_passthrough = false;  // copy level-0 tiles when they are what we would write
  bool copy_associated = false;    // label, macro, thumbnail
  int64_t gpu_join_row = -1;       // tests: where a starting GPU takes the pass over
  std::string progress_label;      // the progress line's label; empty: "pyramid"
  // The output has the source's pixels (a pyramid of it): in the generic
  // layout, an Aperio source's description, rewritten for the output
  // (io/vendor_metadata.hpp), replaces `description`, so OpenSlide reads
  // the output as Aperio with its MPP and AppMag.
  bool keep_vendor_description = false;
};

struct WriteResult {
  PyramidStats stats;
  uint64_t bytes = 0;
  double finish_seconds = 0;
  bool passthrough = false;
};

// The encoder's settings for an image of `fmt` written as `out` says;
// InputError when the codec or layout cannot store it (JPEG of float32), so
// a run can be refused before any work. `tile` is the pass's tile.
EncodeSettings encode_settings(PixelFormat fmt, const OutputSpec& out, int64_t tile);

// InputError when the output's tile index for an image of width x height
// (what write_pyramid holds for the whole pass, a quarter of its budget at
// most) cannot fit `memory`, or when no pass of its pyramid in `tile`-pixel
// tiles fits `memory`: a command checks it before any work, so that a
// header that lies about its size, or a --tile far beyond --memory, is
// refused at once, not after hours.
void check_output_fits(const std::string& what, PixelFormat fmt, int64_t width, int64_t height, const OutputSpec& out,
                       int64_t tile, size_t memory);

WriteResult write_pyramid(const TileSource& src, const OutputSpec& out, ExecContext& ctx);

}  // namespace tw
