// Registration of `tilewave watershed IMAGE MARKERS OUTPUT [--mask MASK]`
// (jobs/watershed/watershed_job.hpp runs it out of core).
#include <algorithm>
#include <cstdio>

#include "engine/op_registry.hpp"
#include "jobs/label/label_job.hpp"
#include "jobs/label/sparse_label.hpp"
#include "jobs/watershed/watershed_job.hpp"

namespace tw::ops {
namespace {

// The side of the pieces GPU-made markers are read in (see below): the
// largest of these whose pieces on every thread, at up to 16 bytes a pixel
// staged on their way (a chain's float input and its result), take at most
// an eighth of the budget.
int64_t gpu_marker_piece(const ExecContext& ctx) {
  for (const int64_t side : {1024, 512})
    if (side > ctx.tile &&
        static_cast<size_t>(ctx.thread_count()) * static_cast<size_t>(side * side) * 16 <= ctx.memory / 8)
      return side;
  return ctx.tile;
}

void require_one_channel(const ImageType& in, const std::string& what, bool ok, const std::string& needs) {
  if (in.fmt.channels != 1 || !ok)
    throw InputError("watershed: " + what + " " + in.name + " is " + in.fmt.str() + "; " + needs);
}

}  // namespace

void register_watershed(OpRegistry& r) {
  OpDef op;
  op.name = "watershed";
  op.command = {"watershed"};
  op.category = OpCategory::kWholeImage;
  op.summary = "marker-controlled watershed: flood IMAGE from MARKERS (u32 labels, or a u8 mask)";
  op.usage = "[--mask MASK] [--connectivity 4|8] [--gpu-flood]";
  op.help =
      "Floods IMAGE (one channel of u8, u16 or f32; lower floods first, as in\n"
      "skimage.segmentation.watershed: pass -EDT or an inverted image) from MARKERS\n"
      "(u32 labels, 0: no marker; or a u8 mask, each 8-connected blob one marker),\n"
      "within MASK where given (0: never labelled). A pixel takes its cheapest path\n"
      "from a marker: by the highest altitude on the path, then the steps since it\n"
      "last climbed; of equal paths, the one through the cheapest neighbour, then the\n"
      "smaller label (docs/ops/watershed.md). Every tiling and backend gives the same\n"
      "u32 labels; pixels no path reaches are 0. Out of core.";
  op.inputs = {"IMAGE", "MARKERS"};
  op.optional_inputs = {"mask"};
  op.takes = "IMAGE: u8, u16 or f32 gray; MARKERS: u32 labels or a u8 mask; MASK: any one channel; all of one size";
  op.params = {ParamSpec::choice("connectivity", "N", {"4", "8"}, "8",
                                 "4 (cross) or 8 (square, default): skimage's connectivity 1 or 2"),
               ParamSpec::flag("gpu-flood",
                               "with a CUDA device, flood on the GPU (default: the CPU's flood of the mask's pixels "
                               "only, 3.4x faster on a 2-GP nuclei slide; same labels)")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    const SampleType t = in[0].fmt.type;
    require_one_channel(in[0], "the image", t == SampleType::kU8 || t == SampleType::kU16 || t == SampleType::kF32,
                        "it needs one channel of u8, u16 or f32 (pick one: filter channel, filter gray)");
    require_one_channel(in[1], "the markers", in[1].fmt.type == SampleType::kU32 || in[1].fmt.type == SampleType::kU8,
                        "they need to be u32 labels (0: no marker) or a u8 mask (labelled first, 8-connected)");
    if (in.size() > 2 && !in[2].name.empty())  // not given: an empty name
      require_one_channel(in[2], "the mask", true, "it needs one channel (0: outside)");
    return PixelFormat{SampleType::kU32, 1};
  };
  op.run = [](const std::vector<std::shared_ptr<const TileSource>>& in, const OpParams& p, ExecContext& ctx) {
    const TileSource* mask = in.size() > 2 ? in[2].get() : nullptr;
    // A binary mask of markers: each 8-connected blob one marker, numbered
    // as skimage.measure.label numbers them (jobs/label). Few marker pixels
    // (nuclei's h-maxima) are labelled as a list of pixels, 12 bytes each,
    // within a sixteenth of the budget; more, into a tile store whose cache
    // comes off the budget.
    LabelStats ls;
    std::shared_ptr<const TileSource> markers = in[1];
    if (in[1]->info().fmt.type == SampleType::kU8) {
      const size_t max_pixels = ctx.memory / 16 / 24;  // the list and its union-find while it is made
      // Markers computed on the GPU (a chain's result there) cost a round
      // trip per piece read — a lane, two copies, a sync — whatever its
      // size: read in 256-px tiles, the nuclei's 2-GP markers took 0.7 s
      // of 31k trips with the CPU idle. The list does not depend on the
      // pieces, so they are made larger there.
      const int64_t scan_tile = in[1]->device_tiles() ? gpu_marker_piece(ctx) : ctx.tile;
      markers = label_sparse(*in[1], 8, scan_tile, max_pixels, &ls);
      if (markers)
        ctx.take_memory(max_pixels * 12);  // at most what the list holds
      else
        markers = label_components(in[1], 8, ctx, &ls);
    }
    // The GPU floods whole tiles and copies them both ways; on sparse masks
    // (nuclei: ~12% of the pixels) the CPU's flood of the mask's pixels is
    // faster end to end (docs/ops/watershed.md), so the GPU is asked for.
    WatershedJob job = watershed_job(ctx, p.choice("connectivity") == "4" ? 4 : 8);
    if (!p.flag("gpu-flood")) job.backend = Backend{};
    const WatershedResult res = watershed(*in[0], *markers, mask, job);
    // The costs are read once, in order, by the writer, which gets most of
    // the budget: they keep what they hold (the mask's pixels, ~6-9 bytes
    // each), up to a quarter of it. A view of them (`objects` in a
    // pipeline) keeps them, and their share, to the end.
    const size_t keep = std::min(res.costs->stats().bytes, ctx.memory / 4);
    res.costs->set_budget(keep);
    ctx.take_memory(keep);
    OpResult out;
    out.image = res.labels;
    out.description = "Tilewave watershed labels";
    char what[200];
    std::snprintf(what, sizeof what, "load %.2f s, propagation %.2f s (%lld floods of %lld tiles)", res.load_seconds,
                  res.wavefront.seconds, static_cast<long long>(res.wavefront.tile_visits),
                  static_cast<long long>(res.wavefront.tiles));
    out.summary = what;
    out.values = {{"tiles", res.wavefront.tiles},
                  {"tile_visits", res.wavefront.tile_visits},
                  {"load_seconds", res.load_seconds},
                  {"wavefront_seconds", res.wavefront.seconds},
                  {"seed_pixels", res.seed_pixels},
                  {"markers_labelled", ls.components},
                  {"op_device", job.backend.is_cuda() ? job.backend.str() : "cpu"},
                  {"gpu_rounds", res.gpu.rounds},
                  {"gpu_block_solves", res.gpu.block_solves},
                  {"gpu_kernel_seconds", res.gpu.kernel_seconds},
                  {"gpu_transfer_seconds", res.gpu.transfer_seconds},
                  {"tiles_spilled", res.store.spills},
                  {"tiles_reloaded", res.store.loads},
                  {"live_tiles", res.tiles.live_tiles},
                  {"queue_visits", res.tiles.visits},
                  {"flooded_pixels", res.tiles.flooded_pixels},
                  {"loaded_pixels", res.tiles.loaded_pixels},
                  {"stored_bytes", res.store.bytes}};
    return out;
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
