// Registration of the wavefront ops: reconstruct, fill-holes, hdome
// (jobs/reconstruct/reconstruct_job.hpp runs them out of core).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "engine/map_source.hpp"
#include "engine/op_registry.hpp"
#include "jobs/reconstruct/reconstruct_job.hpp"

namespace tw {
namespace {

using SourceP = std::shared_ptr<const TileSource>;

double max_value(PixelFormat f) {
  return f.type == SampleType::kU16 ? 65535.0 : 255.0;
}

PixelFormat require_gray(const ImageType& in, const std::string& what) {
  if (in.fmt.channels != 1 || (in.fmt.type != SampleType::kU8 && in.fmt.type != SampleType::kU16))
    throw InputError((what.empty() ? "" : what + " ") + in.name + " is " + in.fmt.str() +
                     "; this needs 8- or 16-bit single-channel images");
  return in.fmt;
}

ParamSpec connectivity(const std::string& fallback, const std::string& help) {
  return ParamSpec::choice("connectivity", "N", {"4", "8"}, fallback, help);
}

ReconstructParams params_of(const OpParams& p, ReconstructMethod method) {
  ReconstructParams rp;
  rp.method = method;
  rp.connectivity = p.choice("connectivity") == "4" ? 4 : 8;
  return rp;
}

// The wavefront is done: its result is read once, in order, by the writer,
// which gets most of the budget; the report's figures and summary line.
OpResult wavefront_result(SourceP image, const ReconstructResult& r, ExecContext& ctx, std::string description) {
  if (r.store) {
    r.store->set_cache_bytes(ctx.memory / 4);
    ctx.take_memory(ctx.memory / 4);
  } else {
    ctx.take_memory(r.held_bytes);  // the bit plane, held until the result goes
  }
  OpResult res;
  res.image = std::move(image);
  res.description = std::move(description);
  char what[160];
  std::snprintf(what, sizeof what, "propagation %.2f s (%lld visits of %lld tiles)", r.wavefront.seconds,
                static_cast<long long>(r.wavefront.tile_visits), static_cast<long long>(r.wavefront.tiles));
  res.summary = what;
  res.values = {{"tiles", r.wavefront.tiles},
                {"tile_visits", r.wavefront.tile_visits},
                {"wavefront_seconds", r.wavefront.seconds},
                {"megapixel_visits", r.gpu.megapixel_visits},
                {"gpu_binary_kernel", r.gpu_binary},  // binary input took the bit-plane kernel
                {"gpu_kernel_seconds", r.gpu.kernel_seconds},
                {"gpu_transfer_seconds", r.gpu.transfer_seconds},
                {"gpu_host_seconds", r.gpu.host_seconds},  // staging and comparing tiles on the host
                {"tiles_spilled", r.store_stats.spills},
                {"tiles_reloaded", r.store_stats.loads},
                {"whole_image", r.whole_image},                  // solved whole (no tiles): in memory or on the device
                {"gpu_whole_image", r.whole_image && r.on_gpu},  // ... on the device
                {"gpu_device_input", r.gpu_device_input},        // ... from a GPU chain's result in device memory
                // Split over ranks: edges, termination waves and the result's gather.
                {"rank_messages", r.wavefront.messages},
                {"rank_message_bytes", r.wavefront.message_bytes}};
  return res;
}

// A marker computed row by row from the mask tile being loaded.
std::function<void(const ImageView&, const ImageView&)> marker_from_rows(MapSource::RowFn fn) {
  return [fn = std::move(fn)](const ImageView& mask, const ImageView& marker) {
    for (int64_t y = mask.rect.y; y < mask.rect.y1(); ++y)
      fn({mask.row_bytes(y)}, marker.row_bytes(y), mask.rect.x, y, mask.rect.w);
  };
}

// rows[0] - h, or rows[0] - rows[1]: both saturate at zero.
MapSource::RowFn saturating_difference(PixelFormat fmt, int64_t h) {
  // One loop per case, without branches inside, so that each vectorises.
  auto rows_of = [h](auto* s, const uint8_t* b_bytes, auto* o, int64_t n) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(s)>>;
    if (b_bytes) {
      const auto* b = reinterpret_cast<const T*>(b_bytes);
      for (int64_t i = 0; i < n; ++i) o[i] = s[i] > b[i] ? static_cast<T>(s[i] - b[i]) : T(0);
    } else {
      const T c = static_cast<T>(std::min<int64_t>(h, std::numeric_limits<T>::max()));
      for (int64_t i = 0; i < n; ++i) o[i] = s[i] > c ? static_cast<T>(s[i] - c) : T(0);
    }
  };
  return [fmt, rows_of](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
    const uint8_t* b = rows.size() > 1 ? rows[1] : nullptr;
    if (fmt.type == SampleType::kU8)
      rows_of(rows[0], b, out, n);
    else
      rows_of(reinterpret_cast<const uint16_t*>(rows[0]), b, reinterpret_cast<uint16_t*>(out), n);
  };
}

void register_reconstruct(OpRegistry& r) {
  OpDef op;
  op.name = "reconstruct";
  op.command = {"reconstruct"};
  op.category = OpCategory::kWholeImage;
  op.summary = "grayscale morphological reconstruction (by dilation or erosion)";
  op.help =
      "Grayscale morphological reconstruction of MARKER under MASK (8- or 16-bit gray),\n"
      "as scikit-image's morphology.reconstruction computes it, out of core.";
  op.inputs = {"MARKER", "MASK"};
  op.takes = "8- or 16-bit gray, both of one size and type";
  op.params = {ParamSpec::choice("method", "M", {"dilation", "erosion"}, "dilation", "dilation (default) or erosion"),
               connectivity("8", "4 (cross) or 8 (square, default)"),
               ParamSpec::flag("clip",
                               "clip the marker to the mask instead of refusing a marker above it (below, "
                               "for erosion)")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    require_gray(in[0], "the marker");
    return require_gray(in[1], "the mask");
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const ReconstructMethod m =
        p.choice("method") == "erosion" ? ReconstructMethod::kErosion : ReconstructMethod::kDilation;
    const ReconstructResult res = reconstruct(*in[0], *in[1], reconstruct_job(ctx, params_of(p, m), p.flag("clip")));
    return wavefront_result(res.image, res, ctx, "Tilewave reconstruction");
  };
  r.add(std::move(op));
}

void register_fill_holes(OpRegistry& r) {
  OpDef op;
  op.name = "fill-holes";
  op.command = {"fill-holes"};
  op.category = OpCategory::kWholeImage;
  op.summary = "fill holes (regions not connected to the border)";
  op.help =
      "Fills holes: regions (of any grey level) not connected to the image border, by\n"
      "reconstruction by erosion from the border. On a binary image it equals scipy's\n"
      "ndimage.binary_fill_holes.";
  op.takes = "8- or 16-bit gray";
  op.params = {connectivity("4", "connectivity of the background: 4 (default, as scipy) or 8")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) { return require_gray(in[0], ""); };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const PixelFormat fmt = in[0]->info().fmt;
    const int64_t W = in[0]->level(0).width, H = in[0]->level(0).height;
    const double maxv = max_value(fmt);
    // Marker: the image on its border, the maximum inside; made from each
    // mask tile as it is loaded, so the input is read (or computed) once.
    const MapSource::RowFn rows = [=](const std::vector<const uint8_t*>& in_rows, uint8_t* out, int64_t x0, int64_t y,
                                      int64_t n) {
      const bool edge_row = y == 0 || y == H - 1;
      if (fmt.type == SampleType::kU8) {
        const uint8_t* s = in_rows[0];
        for (int64_t i = 0; i < n; ++i) {
          const int64_t x = x0 + i;
          out[i] = (edge_row || x == 0 || x == W - 1) ? s[i] : static_cast<uint8_t>(maxv);
        }
      } else {
        const auto* s = reinterpret_cast<const uint16_t*>(in_rows[0]);
        auto* o = reinterpret_cast<uint16_t*>(out);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t x = x0 + i;
          o[i] = (edge_row || x == 0 || x == W - 1) ? s[i] : static_cast<uint16_t>(maxv);
        }
      }
    };
    ReconstructJob job = reconstruct_job(ctx, params_of(p, ReconstructMethod::kErosion));
    job.marker_from_mask = marker_from_rows(rows);
    job.marker_is_mask_border = true;
    const ReconstructResult res = reconstruct(*in[0], job);
    return wavefront_result(res.image, res, ctx, "Tilewave fill-holes");
  };
  r.add(std::move(op));
}

void register_hdome(OpRegistry& r) {
  OpDef op;
  op.name = "hdome";
  op.command = {"hdome"};
  op.category = OpCategory::kWholeImage;
  op.summary = "h-dome transform (INPUT minus its reconstruction from INPUT - H)";
  op.usage = "--h H";
  op.help =
      "The h-dome transform: INPUT minus its reconstruction by dilation from INPUT - H,\n"
      "which keeps the bright regional peaks (nuclei) that rise at most H above their\n"
      "surroundings. A pipeline of pixel ops around the wavefront engine, all streamed.";
  op.takes = "8- or 16-bit gray";
  op.params = {ParamSpec::integer("h", "H", 1, 65535, "", "dome height (required): marker = image - H").needed(),
               connectivity("8", "4 or 8 (default)")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams& p) {
    const PixelFormat f = require_gray(in[0], "");
    p.integer_in("h", 1, static_cast<int64_t>(max_value(f)));
    return f;
  };
  // The wavefront loads the input, and the result subtracts from it again.
  op.reads_input_twice = [](const OpParams&) { return true; };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const PixelFormat fmt = in[0]->info().fmt;
    const int64_t h = p.integer_in("h", 1, static_cast<int64_t>(max_value(fmt)));
    const auto sub = saturating_difference(fmt, h);
    ReconstructJob job = reconstruct_job(ctx, params_of(p, ReconstructMethod::kDilation));
    job.marker_from_mask = marker_from_rows(sub);
    job.marker_mask_minus = h;
    // Solved whole on the device, the dome is made there too: it stays on
    // the device for the GPU steps that read it (ctx.result_to_device, which
    // reconstruct_job took), and neither the reconstruction nor the input
    // comes down to be subtracted.
    job.dome = true;
    const ReconstructResult res = reconstruct(*in[0], job);
    const std::string what = "Tilewave h-dome, h=" + std::to_string(h);
    if (res.dome) return wavefront_result(res.image, res, ctx, what);
    auto dome = std::make_shared<OwningMapSource>(std::vector<SourceP>{in[0], res.image}, fmt, sub, "h-dome");
    return wavefront_result(dome, res, ctx, what);
  };
  r.add(std::move(op));
}

}  // namespace

namespace ops {
void register_reconstruct_ops(OpRegistry& r) {
  register_reconstruct(r);
  register_fill_holes(r);
  register_hdome(r);
}
}  // namespace ops

}  // namespace tw
