// Registration of `tilewave label` and `tilewave objects`
// (jobs/label/label_job.hpp, jobs/label/objects_job.hpp run them).
#include <cstdio>

#include "engine/op_registry.hpp"
#include "jobs/label/label_job.hpp"
#include "jobs/label/objects_job.hpp"

namespace tw {
namespace {

using SourceP = std::shared_ptr<const TileSource>;

ParamSpec connectivity_param(const std::string& help) {
  return ParamSpec::choice("connectivity", "N", {"4", "8"}, "8", help);
}

int connectivity_of(const OpParams& p) {
  return p.choice("connectivity") == "4" ? 4 : 8;
}

PixelFormat require_one_channel(const ImageType& in, const std::string& op) {
  if (in.fmt.channels != 1)
    throw InputError(in.name + " is " + in.fmt.str() + "; " + op +
                     " needs a one-channel image (pick one first: filter channel --index N)");
  return PixelFormat{SampleType::kU32, 1};
}

void register_label(OpRegistry& r) {
  OpDef op;
  op.name = "label";
  op.command = {"label"};
  op.category = OpCategory::kWholeImage;
  op.summary = "connected components as u32 labels 1..N in raster order (scipy's ndimage.label)";
  op.usage = "[--connectivity 4|8]";
  op.help =
      "Connected components of the non-zero pixels (f32: NaN counts as non-zero) as u32\n"
      "labels numbered 1..N in raster order of each component's first pixel, 0 for\n"
      "background: the numbers of scipy.ndimage.label and skimage.measure.label. 8-connected\n"
      "by default (scikit-image's default; scipy's default structure is 4-connected).\n"
      "Out of core and exact: the same labels for every tile size, budget and backend.";
  op.takes = "one channel: u8, u16, u32, i32 or f32";
  op.params = {connectivity_param("4 (cross) or 8 (square, default, as scikit-image)")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    return require_one_channel(in[0], "label");
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    LabelStats st;
    OpResult res;
    res.image = label_components(in[0], connectivity_of(p), ctx, &st);
    res.description = "Tilewave connected components";
    char what[200];
    std::snprintf(what, sizeof what, "%llu components in %.2f s (tiles %.2f s, merge %.2f s, numbering %.2f s)",
                  static_cast<unsigned long long>(st.components), st.seconds, st.local_seconds, st.merge_seconds,
                  st.relabel_seconds);
    res.summary = what;
    res.messages.push_back("components: " + std::to_string(st.components));
    res.values = {{"components", st.components},
                  {"border_pieces", st.border_pieces},
                  {"tiles", st.tiles},
                  {"label_tile", st.tile},
                  {"label_seconds", st.seconds},
                  {"tile_seconds", st.local_seconds},
                  {"merge_seconds", st.merge_seconds},
                  {"numbering_seconds", st.relabel_seconds},
                  {"tiles_spilled", st.tiles_spilled},
                  {"table_pages_spilled", st.table_pages_spilled},
                  {"op_device", st.gpu ? ctx.backend.str() : "cpu"},
                  {"gpu_tiles", st.gpu_tiles},
                  {"gpu_kernel_seconds", st.gpu_kernel_seconds},
                  {"gpu_transfer_seconds", st.gpu_transfer_seconds}};
    return res;
  };
  r.add(std::move(op));
}

}  // namespace

namespace ops {
void register_label_ops(OpRegistry& r) {
  register_label(r);
  register_objects(r);
}
}  // namespace ops

}  // namespace tw
