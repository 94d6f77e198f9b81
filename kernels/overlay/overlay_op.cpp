// Registration of `tilewave overlay IMAGE LABELS OUT.tif` (overlay.hpp).
#include <sstream>

#include "engine/op_registry.hpp"
#include "engine/ops/device_tiles.hpp"
#include "kernels/overlay/overlay.hpp"
#include "kernels/overlay/overlay_cuda.hpp"

namespace tw::ops {
namespace {

using SourceP = std::shared_ptr<const TileSource>;

std::array<uint8_t, 3> parse_color(const std::string& text) {
  std::array<uint8_t, 3> c{};
  std::istringstream s(text);
  for (size_t k = 0; k < 3; ++k) {
    long v = -1;
    char sep = ',';
    if (!(s >> v) || v < 0 || v > 255 || (k < 2 && (!(s >> sep) || sep != ',')))
      throw ParamError("overlay --color takes R,G,B with each 0..255, not '" + text + "'");
    c[k] = static_cast<uint8_t>(v);
  }
  if (char extra; s >> extra) throw ParamError("overlay --color takes R,G,B with each 0..255, not '" + text + "'");
  return c;
}

bool integer_labels(PixelFormat f) {
  return f.channels == 1 && f.type != SampleType::kF32;
}

}  // namespace

void register_overlay(OpRegistry& r) {
  OpDef op;
  op.name = "overlay";
  op.command = {"overlay"};
  op.category = OpCategory::kNeighbourhood;
  op.inputs = {"IMAGE", "LABELS"};
  op.summary = "object outlines (LABELS) drawn over IMAGE, RGB, for a viewer";
  op.usage = "[--color R,G,B]";
  op.help =
      "Draws the outlines of the objects of a label image over an image: a pixel is on\n"
      "an outline when its label is non-zero and one of its 4 neighbours has another\n"
      "label or lies outside the image, so outlines lie inside their objects, one pixel\n"
      "wide. The result is RGB (gray images made RGB), JPEG by default like a slide.";
  op.takes =
      "IMAGE: 8-bit gray or RGB; LABELS: one channel of u8, u16 or u32 (or a pipeline step's i32; 0 = none); "
      "one size";
  op.lossless = false;
  op.params = {ParamSpec::text("color", "R,G,B", "0,255,0", "outline colour")};
  op.validate = [](const OpParams& p) { parse_color(p.text("color")); };
  op.halo = [](const OpParams&) { return 1; };
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    if (in[0].fmt.type != SampleType::kU8 || (in[0].fmt.channels != 1 && in[0].fmt.channels != 3))
      throw InputError("overlay: " + in[0].name + " is " + in[0].fmt.str() + "; the image must be 8-bit gray or RGB");
    if (!integer_labels(in[1].fmt))
      throw InputError("overlay: " + in[1].name + " is " + in[1].fmt.str() +
                       "; the labels must be one channel of integers");
    return kRgb8;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const LevelInfo &a = in[0]->level(0), &b = in[1]->level(0);
    if (a.width != b.width || a.height != b.height)
      throw InputError("overlay: " + in[0]->info().path + " is " + std::to_string(a.width) + "x" +
                       std::to_string(a.height) + " but " + in[1]->info().path + " is " + std::to_string(b.width) +
                       "x" + std::to_string(b.height) + "; both images must have one size");
    OpResult res;
    res.description = "Tilewave overlay";
    // With --device cuda, on the GPU where the image is made on it (a slide's
    // JPEG tiles decoded the split way, a GPU chain): the CPU then only
    // entropy-decodes the slide. An image on the host stays on the CPU: the
    // GPU would add the labels' upload (4 bytes a pixel) and the download.
    const bool gpu = ctx.backend.is_cuda() && made_on_device(*in[0], ctx.backend.device);
    const std::string device = gpu ? ctx.backend.str() : "cpu";
    if (gpu)
      res.image = make_overlay_cuda(in[0], in[1], parse_color(p.text("color")), ctx.backend.device);
    else
      res.image = std::make_shared<OverlaySource>(in[0], in[1], parse_color(p.text("color")));
    res.summary = "outlines drawn on " + device;
    res.values["op_device"] = device;
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
