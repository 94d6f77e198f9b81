#include "io/openslide/openslide_source.hpp"

#include <openslide.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "io/openslide/openslide_guard.hpp"
#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

std::string prop(openslide_t* osr, const std::string& name) {
  const char* v = openslide_get_property_value(osr, name.c_str());
  return v ? v : "";
}

double prop_double(openslide_t* osr, const std::string& name) {
  const std::string v = prop(osr, name);
  if (v.empty()) return 0;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  return end != v.c_str() && std::isfinite(d) && d > 0 ? d : 0;
}

// OpenSlide's pixels are premultiplied ARGB; transparent areas (no scan
// data) take the slide's background colour.
void argb_to_rgb(const uint32_t* in, int64_t n, uint8_t* out, const uint8_t bg[3]) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t p = in[i];
    const uint32_t a = p >> 24;
    const uint8_t c[3] = {static_cast<uint8_t>(p >> 16), static_cast<uint8_t>(p >> 8), static_cast<uint8_t>(p)};
    for (int k = 0; k < 3; ++k)
      out[3 * i + k] =
          a == 255 ? c[k] : static_cast<uint8_t>(std::min<uint32_t>(255, c[k] + ((255 - a) * bg[k] + 127) / 255));
  }
}

}  // namespace

struct OpenSlideSource::Impl {
  openslide_t* osr = nullptr;
  std::string path;
  uint8_t bg[3] = {255, 255, 255};
  std::vector<int64_t> chunk_w, chunk_h;
  std::vector<size_t> unit;  // per level: our ARGB chunk and OpenSlide's decoded tile
  mutable ByteBudget budget{size_t{1} << 30};
  ~Impl() {
    if (osr) openslide_close(osr);
  }
  void check(const std::string& what) const {
    if (const char* e = openslide_get_error(osr)) throw InputError("OpenSlide cannot " + what + " " + path + ": " + e);
  }
};

std::string OpenSlideSource::detect_vendor(const std::string& path) {
  const char* v = openslide_detect_vendor(path.c_str());
  return v ? v : "";
}

OpenSlideSource::OpenSlideSource(const std::string& path) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  im.path = path;
  check_before_openslide(path);
  im.osr = openslide_open(path.c_str());
  if (!im.osr) throw InputError(path + " is not a slide format OpenSlide recognises");
  im.check("read");
  info_.path = path;
  info_.format = "OpenSlide";
  info_.vendor = prop(im.osr, OPENSLIDE_PROPERTY_NAME_VENDOR);
  info_.fmt = kRgb8;
  const std::string bg = prop(im.osr, OPENSLIDE_PROPERTY_NAME_BACKGROUND_COLOR);
  if (bg.size() == 6) {
    const unsigned long v = std::strtoul(bg.c_str(), nullptr, 16);
    im.bg[0] = static_cast<uint8_t>(v >> 16), im.bg[1] = static_cast<uint8_t>(v >> 8),
    im.bg[2] = static_cast<uint8_t>(v);
  }
  const int32_t n = openslide_get_level_count(im.osr);
  im.check("read");
  if (n < 1) throw InputError("OpenSlide finds no levels in " + path);
  for (int32_t l = 0; l < n; ++l) {
    LevelInfo li;
    openslide_get_level_dimensions(im.osr, l, &li.width, &li.height);
    li.downsample = openslide_get_level_downsample(im.osr, l);
    const std::string base = "openslide.level[" + std::to_string(l) + "].";
    li.tile_w = static_cast<int64_t>(prop_double(im.osr, base + "tile-width"));
    li.tile_h = static_cast<int64_t>(prop_double(im.osr, base + "tile-height"));
    li.compression = "(decoded by OpenSlide)";
    if (li.width <= 0 || li.height <= 0)
      throw InputError(path + ": OpenSlide gives level " + std::to_string(l) + " no pixels");
    im.chunk_w.push_back(li.tile_w > 0 ? std::max<int64_t>(li.tile_w, 512) : 1024);
    im.chunk_h.push_back(li.tile_h > 0 ? std::max<int64_t>(li.tile_h, 512) : 1024);
    im.unit.push_back(static_cast<size_t>(
        (im.chunk_w.back() * im.chunk_h.back() + std::max<int64_t>(li.tile_w, 0) * std::max<int64_t>(li.tile_h, 0)) *
        4));
    info_.levels.push_back(li);
  }
  im.check("read");
  set_pixel_size(info_, prop_double(im.osr, OPENSLIDE_PROPERTY_NAME_MPP_X),
                 prop_double(im.osr, OPENSLIDE_PROPERTY_NAME_MPP_Y), "openslide.mpp-x/y");
  for (const char* const* names = openslide_get_associated_image_names(im.osr); names && *names; ++names) {
    AssociatedImageInfo a;
    a.name = *names;
    openslide_get_associated_image_dimensions(im.osr, *names, &a.width, &a.height);
    info_.associated.push_back(a);
  }
  info_.objective_power = prop_double(im.osr, OPENSLIDE_PROPERTY_NAME_OBJECTIVE_POWER);
  // The vendor's own properties (aperio.*, hamamatsu.*, ...); OpenSlide's
  // derived openslide.* and the raw tiff.* tags are not the vendor's.
  for (const char* const* names = openslide_get_property_names(im.osr); names && *names; ++names) {
    const std::string key = *names;
    if (key.rfind("openslide.", 0) == 0 || key.rfind("tiff.", 0) == 0) continue;
    if (!add_vendor_property(info_, key, prop(im.osr, key))) break;
  }
  // Aperio's description, for outputs that keep it (it is level 0's).
  if (info_.vendor == "aperio") {
    const std::string d = prop(im.osr, "tiff.ImageDescription");
    if (is_aperio_description(d))
      info_.vendor_description = clean_metadata_text(d, kMaxVendorDescriptionBytes, /*keep_newlines=*/true);
  }
  for (const char* key :
       {OPENSLIDE_PROPERTY_NAME_OBJECTIVE_POWER, OPENSLIDE_PROPERTY_NAME_COMMENT, OPENSLIDE_PROPERTY_NAME_QUICKHASH1}) {
    std::string v = prop(im.osr, key);
    if (v.size() > 200) v = v.substr(0, 200) + "...";
    if (!v.empty()) info_.properties.emplace_back(key, v);
  }
}

OpenSlideSource::~OpenSlideSource() = default;

size_t OpenSlideSource::decode_unit_bytes(int level) const {
  return impl_->unit.at(static_cast<size_t>(level));
}

void OpenSlideSource::set_decode_budget(size_t bytes) const {
  impl_->budget.set_capacity(bytes);
}

void OpenSlideSource::read_inside(int level, const ImageView& dst) const {
  auto& im = *impl_;
  const double ds = info_.levels[level].downsample;
  const int64_t cw = im.chunk_w[level], ch = im.chunk_h[level];
  // Chunks aligned to the slide's own tiles, read in parallel (OpenSlide
  // handles are thread-safe).
  const int64_t cx0 = dst.rect.x / cw, cx1 = (dst.rect.x1() - 1) / cw;
  const int64_t cy0 = dst.rect.y / ch, cy1 = (dst.rect.y1() - 1) / ch;
  const int64_t nx = cx1 - cx0 + 1, n = nx * (cy1 - cy0 + 1);
  if (im.unit[level] > im.budget.capacity())
    throw InputError(im.path + ": level " + std::to_string(level) + "'s tiles take " + format_bytes(im.unit[level]) +
                     " each to read through OpenSlide, more than the reader's budget of " +
                     format_bytes(im.budget.capacity()));
  tbb::parallel_for(int64_t{0}, n, [&](int64_t i) {
    const auto hold = im.budget.acquire(im.unit[level]);
    const Rect r = Rect((cx0 + i % nx) * cw, (cy0 + i / nx) * ch, cw, ch).intersect(dst.rect);
    std::vector<uint32_t> buf(static_cast<size_t>(r.area()));
    // Level-0 coordinates that land exactly on level pixel (r.x, r.y) when
    // OpenSlide divides them by a non-integral downsample.
    const int64_t x0 = static_cast<int64_t>(std::ceil(r.x * ds - 1e-6));
    const int64_t y0 = static_cast<int64_t>(std::ceil(r.y * ds - 1e-6));
    openslide_read_region(im.osr, buf.data(), x0, y0, level, r.w, r.h);
    im.check("read a region of");
    for (int64_t y = 0; y < r.h; ++y) argb_to_rgb(buf.data() + y * r.w, r.w, dst.ptr_bytes(r.x, r.y + y), im.bg);
  });
}

Image OpenSlideSource::read_associated(const std::string& name) const {
  auto& im = *impl_;
  for (const auto& a : info_.associated) {
    if (a.name != name) continue;
    if (a.width <= 0 || a.height <= 0 || a.width > 16384 || a.height > 16384 || a.width * a.height > (int64_t{1} << 26))
      throw InputError("associated image '" + name + "' is too large to read whole (" + std::to_string(a.width) + "x" +
                       std::to_string(a.height) + ")");
    std::vector<uint32_t> buf(static_cast<size_t>(a.width * a.height));
    openslide_read_associated_image(im.osr, name.c_str(), buf.data());
    im.check("read associated image '" + name + "' of");
    Image out(kRgb8, Rect(0, 0, a.width, a.height));
    const uint8_t white[3] = {255, 255, 255};
    for (int64_t y = 0; y < a.height; ++y) argb_to_rgb(buf.data() + y * a.width, a.width, out.row<uint8_t>(y), white);
    return out;
  }
  return TileSource::read_associated(name);
}

}  // namespace tw
