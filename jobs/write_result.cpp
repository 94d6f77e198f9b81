#include "jobs/write_result.hpp"

#include <chrono>
#include <cstdlib>

#include "engine/memory.hpp"
#include "engine/ranks/local_ranks.hpp"
#include "engine/side_task.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"
#include "io/open_sink.hpp"
#include "io/tiff/ome_tiff_sink.hpp"
#include "io/vendor_metadata.hpp"
#include "jobs/pyramid/pass_plan.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw {
namespace {

// Level 0's tiles are copied as stored when they are what we would write:
// same codec and tile size (JPEG quality is the input's; the subsampling
// only matters if the user asked for one).
bool can_pass_through(const RawTileFormat* raw, const EncodeSettings& enc, bool subsampling_given) {
  if (!raw || raw->codec != enc.codec || raw->tile_w != enc.tile_w || raw->tile_h != enc.tile_h) return false;
  if (raw->bits_per_sample != static_cast<int>(sample_bytes(enc.fmt.type) * 8) ||
      raw->samples_per_pixel != enc.fmt.channels)
    return false;
  if (enc.codec == Codec::kJpeg && subsampling_given && enc.fmt.channels == 3) {
    const uint16_t want = enc.subsampling == ChromaSubsampling::k420 ? 2 : 1;
    if (raw->photometric != 6 || raw->subsampling_h != want || raw->subsampling_v != want) return false;
  }
  return true;
}

// Copies the source's associated images into the sink on its own thread.
class AssociatedCopier {
 public:
  AssociatedCopier(const TileSource& src, PyramidSink& sink, bool enabled, size_t memory) {
    if (!enabled || src.info().associated.empty()) return;
    task_.start([&src, &sink, memory] {
      for (const auto& assoc : src.info().associated) {
        // A broken or huge label must not cost the whole pyramid. Reading
        // one takes its RGBA decode and the RGB copy: 7 bytes a pixel.
        const double bytes = 7.0 * static_cast<double>(assoc.width) * static_cast<double>(assoc.height);
        if (bytes > static_cast<double>(memory / 4)) {
          warn("associated image '" + assoc.name + "' left out: " + std::to_string(assoc.width) + "x" +
               std::to_string(assoc.height) + " is too large for --memory " + format_bytes(memory));
          continue;
        }
        try {
          sink.add_associated(assoc.name, src.read_associated(assoc.name));
        } catch (const InputError& e) {
          warn("associated image '" + assoc.name + "' left out: " + e.what());
        }
      }
    });
  }
  // Waits for the copy; rethrows what went wrong beyond a bad image.
  void join() { task_.finish(); }

 private:
  SideTask task_;
};

// The slide split over devices of this process, as over ranks (jobs/
// pyramid/banded_pyramid.hpp): every worker encodes with the one sink
// (thread-safe), worker 0 writes; the budget is shared among them.
PyramidStats run_pyramid_on_devices(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& job,
                                    const std::vector<int>& devices) {
  const int n = static_cast<int>(devices.size());
  std::vector<PyramidStats> stats(devices.size());
  run_local_ranks(n, [&](Ranks& r) {
    PyramidJobOptions mine = job;
    mine.ranks = &r;
    const int d = devices[static_cast<size_t>(r.rank())];
    mine.backend = d >= 0 ? Backend::cuda(d) : Backend{};
    mine.memory = job.memory / static_cast<size_t>(n);
    stats[static_cast<size_t>(r.rank())] = run_pyramid(src, sink, mine);
  });
  PyramidStats s = stats[0];
  std::string names;
  for (int d : devices) names += (names.empty() ? (d >= 0 ? "cuda:" : "cpu:") : ",") + std::to_string(d);
  s.backend = names;
  for (size_t i = 1; i < stats.size(); ++i) {
    s.decode_s += stats[i].decode_s, s.reduce_s += stats[i].reduce_s, s.encode_s += stats[i].encode_s;
    s.upload_s += stats[i].upload_s, s.kernel_s += stats[i].kernel_s, s.download_s += stats[i].download_s;
    s.pixels_in += stats[i].pixels_in;
  }
  return s;
}

}  // namespace

EncodeSettings encode_settings(PixelFormat fmt, const OutputSpec& out, int64_t tile) {
  const Layout layout = layout_for(out.path, out.format);
  if (is_tiff_layout(layout) && out.layout_tile % 16 != 0)
    throw InputError("--tile " + std::to_string(out.layout_tile) +
                     " is not a multiple of 16 (TIFF requires it; Deep Zoom outputs take any size)");
  EncodeSettings enc;
  enc.fmt = fmt;
  const bool jpeg_ok = fmt.type == SampleType::kU8 && (fmt.channels == 1 || (fmt.channels == 3 && out.color));
  enc.codec = out.codec ? *out.codec : (jpeg_ok && !out.lossless ? Codec::kJpeg : Codec::kDeflate);
  // OME-Zarr readers (numcodecs) have no JPEG: lossless unless asked.
  if (layout == Layout::kZarr && !out.codec) enc.codec = Codec::kDeflate;
  enc.quality = out.quality;
  enc.subsampling = out.subsampling;
  enc.level = out.level;
  enc.predictor = out.predictor;
  enc.tile_w = enc.tile_h = tile;
  enc.color = out.color;
  // Other layouts check their codecs when their sink is made.
  if (is_tiff_layout(layout)) enc.validate();
  return enc;
}

namespace {

void check_index_fits(const std::string& what, std::pair<int64_t, int64_t> size, Layout layout, size_t index,
                      size_t memory) {
  if (index > memory / 4)
    throw InputError(what + ": its pyramid of " + std::to_string(size.first) + "x" + std::to_string(size.second) +
                     " pixels needs " + format_bytes(index) + " for the output's " +
                     (layout == Layout::kDzi ? "pending tiles (about 3 KiB per pixel of width)" : "tile index") +
                     ", more than a quarter of --memory " + format_bytes(memory));
}

}  // namespace

void check_output_fits(const std::string& what, PixelFormat fmt, int64_t width, int64_t height, const OutputSpec& out,
                       int64_t tile, size_t memory) {
  SinkRequest req;
  req.path = out.path;
  req.layout = layout_for(out.path, out.format);
  req.encode = encode_settings(fmt, out, tile);
  req.layout_tile = out.layout_tile;
  req.overlap = out.overlap;
  const RawTileFormat ours = is_tiff_layout(req.layout) ? tiff_format_for(req.encode) : RawTileFormat{};
  const auto sizes = pyramid_level_sizes(width, height, req.layout == Layout::kDzi ? 1 : out.min_size);
  for (const auto& s : sizes) req.levels.push_back({s.first, s.second, ours});
  check_index_fits(what, sizes[0], req.layout, sink_memory_bytes(req), memory);
  // A --tile far beyond --memory: the steps' tiles would take gigabytes
  // before the writer refused the run (`label --tile 16384 --memory 16M`
  // peaked at 1.1 GB for 9 s).
  const size_t least = least_pass_bytes(sizes, fmt, tile);
  if (least > memory)
    throw InputError("--memory " + format_bytes(memory) + " is too small to write " + what + " in " +
                     std::to_string(tile) + "-pixel tiles: that needs at least " + format_bytes(least) +
                     " (use a larger --memory or a smaller --tile)");
}

WriteResult write_pyramid(const TileSource& src, const OutputSpec& out, ExecContext& ctx) {
  const SourceInfo& info = src.info();
  OutputSpec spec = out;
  spec.color = info.color;
  const EncodeSettings enc = encode_settings(info.fmt, spec, ctx.tile);
  const Layout layout = layout_for(out.path, out.format);

  // A slide split over ranks: rank 0 writes the file, the others only
  // encode their tiles (their sink writes to a scratch name, never
  // finished). Deep Zoom re-cuts tiles as it writes them and OME-Zarr
  // writes each chunk where it is encoded: rank 0 makes those alone.
  Ranks* ranks = ctx.ranks && ctx.ranks->size() > 1 ? ctx.ranks : nullptr;
  const bool own_files = layout == Layout::kDzi || layout == Layout::kZarr;
  const bool idle = ranks && own_files && ranks->rank() != 0;
  if (ranks && own_files) {
    if (!idle)
      warn(std::string(layout == Layout::kDzi ? "Deep Zoom" : "OME-Zarr") +
           " output is made by rank 0 alone (only TIFF and OME-TIFF outputs are split over ranks)");
    ranks = nullptr;
  }
  const bool lead = !ranks || ranks->rank() == 0;
  // Several GPUs of this process (--device cuda:0,1, cuda:all): the slide
  // is split over them as over ranks, one worker thread per device.
  Backend backend = ctx.backend;
  if (backend.pending && (backend.all_devices || !backend.devices.empty())) backend = resolve_backend(backend);
  std::vector<int> devices = ranks ? std::vector<int>{} : backend.devices;
  // Tests: shares on the CPU in one process (-1 stands for the CPU).
  if (const char* n = std::getenv("TW_TEST_CPU_SHARES"); n && !ranks) devices.assign(std::atoi(n), -1);
  if (own_files && devices.size() > 1) {
    warn(std::string(layout == Layout::kDzi ? "Deep Zoom" : "OME-Zarr") +
         " output is made on one GPU (cuda:" + std::to_string(backend.device) + ")");
    devices.clear();
  }

  PyramidJobOptions job;
  job.ranks = ranks;
  job.tile = ctx.tile;
  // Deep Zoom's levels go down to 1x1 (its spec numbers them from there).
  job.min_size = layout == Layout::kDzi ? 1 : out.min_size;
  job.memory = ctx.memory;
  job.scratch_near = out.path;
  job.backend = backend;
  job.backend.devices.clear();
  job.gpu_memory = ctx.gpu_memory;
  job.gpu_jpeg = out.gpu_jpeg;
  job.gpu_join_row = out.gpu_join_row;
  if (!out.progress_label.empty()) job.progress_label = out.progress_label;

  const auto sizes = plan_pyramid_levels(src, job.min_size);
  const RawTileFormat* raw = src.raw_tiles() ? src.raw_tiles()->raw_format(0) : nullptr;
  WriteResult r;
  if (idle) {
    r.stats.level_sizes = sizes;
    r.stats.ranks = ctx.ranks->size();
    return r;
  }
  // An OME-TIFF of one plane per channel splits every tile: none is copied as stored.
  r.passthrough = out.allow_passthrough && is_tiff_layout(layout) &&
                  can_pass_through(raw, enc, out.subsampling_given) &&
                  (layout != Layout::kOmeTiff || ome_tiff_planes(enc) == 1);
  job.passthrough = r.passthrough;
  SinkRequest req;
  req.path = out.path;
  req.layout = layout;
  req.encode = enc;
  req.layout_tile = out.layout_tile;
  req.overlap = out.overlap;
  req.channel_names = info.channel_names;
  const RawTileFormat ours = is_tiff_layout(layout) ? tiff_format_for(enc) : RawTileFormat{};
  for (size_t l = 0; l < sizes.size(); ++l)
    req.levels.push_back({sizes[l].first, sizes[l].second, l == 0 && r.passthrough ? *raw : ours});
  // The sink's tile index lives for the whole run: checked before it is
  // made (a header's size can ask for gigabytes of it), and taken off the
  // pass's budget.
  const size_t index = sink_memory_bytes(req);
  check_index_fits(info.path, sizes[0], layout, index, job.memory);
  job.memory -= index;
  req.options.mpp_x = info.mpp_x;
  req.options.mpp_y = info.mpp_y;
  req.options.description = out.description;
  if (out.keep_vendor_description && layout == Layout::kTiff) {
    const RawTileFormat& f0 = req.levels.front().format;
    std::string aperio = aperio_pyramid_description(info, sizes[0].first, sizes[0].second, f0.tile_w, f0.tile_h);
    if (!aperio.empty()) {
      req.options.description = std::move(aperio);
      req.options.aperio = true;
    }
  }
  req.options.objective_power = info.objective_power;
  req.options.vendor_properties = info.vendor_properties;
  req.options.software = "Tilewave 0.1.0";
  if (!lead) req.path = ctx.scratch_path() + ".rank" + std::to_string(ranks->rank()) + "." + layout_name(layout);
  const std::unique_ptr<PyramidSink> sink = open_sink(req);
  {
    // Labels and macros are read and compressed beside the pass rather than
    // after it: LZW runs on one thread (~0.1 s for a scanner's macro).
    AssociatedCopier assoc(src, *sink, out.copy_associated && lead, ctx.memory);
    if (devices.size() > 1)
      r.stats = run_pyramid_on_devices(src, *sink, job, devices);
    else
      r.stats = run_pyramid(src, *sink, job);
    TraceSpan span("associated-join", 0);
    assoc.join();
  }
  if (!lead) return r;
  TraceSpan span("finish", 0);
  const auto t_finish = std::chrono::steady_clock::now();
  sink->finish();
  r.finish_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_finish).count();
  r.bytes = sink->bytes_written();
  return r;
}

}  // namespace tw
