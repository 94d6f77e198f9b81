// Registration of `tilewave edt`: the backend is chosen here, not in the
// front end (the GPU path handles sides below 2^20 pixels; --device auto
// falls back to the CPU beyond).
#include <cstdio>

#include "engine/op_registry.hpp"
#include "jobs/edt/edt_cuda_job.hpp"
#include "jobs/edt/edt_job.hpp"

namespace tw::ops {

void register_edt(OpRegistry& r) {
  OpDef op;
  op.name = "edt";
  op.command = {"edt"};
  op.category = OpCategory::kWholeImage;
  op.summary = "exact Euclidean distance transform (float32)";
  op.usage = "[--threshold T]";
  op.help =
      "The exact Euclidean distance of every foreground pixel (above T) to the nearest\n"
      "background pixel, as float32 (scipy's ndimage.distance_transform_edt), out of\n"
      "core. Background pixels are 0; with no background at all, every pixel is +inf.";
  op.takes = "gray of any sample type, or 8/16-bit RGB (BT.601 luma)";
  op.params = {ParamSpec::real("threshold", "T", -1e300, 1e300, "0",
                               "foreground: pixels above T (default 0; RGB uses BT.601 luma)")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    if (in[0].fmt.channels == 2 || in[0].fmt.channels > 4)
      throw InputError(in[0].name + " is " + in[0].fmt.str() + "; edt needs gray or RGB");
    // Several channels of float or i32 are no colour image (hed's optical
    // densities): their luma would mean nothing. One is picked first.
    if (in[0].fmt.channels > 1 && in[0].fmt.type != SampleType::kU8 && in[0].fmt.type != SampleType::kU16)
      throw InputError(in[0].name + " is " + in[0].fmt.str() +
                       "; edt reads one channel of that type (pick one first: filter channel --index N)");
    return PixelFormat{SampleType::kF32, 1};
  };
  op.run = [](const std::vector<std::shared_ptr<const TileSource>>& in, const OpParams& p, ExecContext& ctx) {
    EdtParams ep;
    ep.threshold = p.real("threshold");
    const LevelInfo& l0 = in[0]->level(0);
    const bool too_big = l0.width >= (int64_t{1} << 20) || l0.height >= (int64_t{1} << 20);
    Backend backend = ctx.backend;
    if (backend.is_cuda() && too_big && (backend.optional || backend.spelled == "auto"))
      backend.kind = Backend::Kind::kCpu;
    EdtStats st;
    OpResult res;
    if (backend.is_cuda()) {
      EdtCudaJob job;
      job.params = ep;
      job.memory = ctx.memory;
      job.gpu_memory = ctx.gpu_memory;
      job.device = backend.device;
      job.scratch_near = ctx.scratch_near;
      job.keep_on_device = ctx.result_to_device;
      res.image = euclidean_distance_cuda(*in[0], job, &st);
    } else if (ctx.inputs_held) {
      // The input is a result the run holds: keep only the column
      // distances' band edges and read its bands again (no 2-byte-a-pixel
      // raster, which a 16384² mask at 1G spilled: written twice, read
      // twice).
      res.image = euclidean_distance_of_held(in[0], ep, ctx.memory, ctx.scratch_near, &st);
      res.reads_inputs = true;
      ctx.take_memory(st.held_bytes);
    } else {
      res.image = euclidean_distance(*in[0], ep, ctx.memory, ctx.scratch_near, &st);
      ctx.take_memory(st.held_bytes);  // the writer plans with the rest
    }
    res.description = "Tilewave Euclidean distance transform";
    char what[160];
    if (backend.is_cuda())
      std::snprintf(what, sizeof what, "distances %.2f s on %s (kernels %.1f ms, copies %.1f ms, %lld band%s)",
                    st.seconds, backend.str().c_str(), st.gpu_kernel_seconds * 1e3, st.gpu_transfer_seconds * 1e3,
                    static_cast<long long>(st.gpu_bands), st.gpu_bands == 1 ? "" : "s");
    else
      std::snprintf(what, sizeof what, "distances %.2f s", st.seconds);
    res.summary = what;
    res.values = {{"edt_seconds", st.seconds},
                  {"edt_read_seconds", st.read_seconds},
                  {"edt_device", backend.str()},
                  {"op_device", backend.str()},
                  {"gpu_kernel_seconds", st.gpu_kernel_seconds},
                  {"gpu_transfer_seconds", st.gpu_transfer_seconds},
                  {"gpu_bands", st.gpu_bands},
                  {"result_on_device", st.on_device},
                  {"edt_view", res.reads_inputs},
                  {"bits_input", st.bits_input},
                  {"foreground_pixels", st.foreground},
                  {"background_pixels", st.background}};
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
