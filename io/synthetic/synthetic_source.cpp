#include "io/synthetic/synthetic_source.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "io/synthetic/synthetic_model.hpp"
#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

using namespace synthetic;

// ---------------------------------------------------------------- associated images

struct MacroGeometry {
  int64_t step, width, height, x0, y0;
};

MacroGeometry macro_geometry(const SyntheticSpec& spec) {
  MacroGeometry m;
  m.step = std::max<int64_t>(1, ceil_div(std::max(spec.width, spec.height), kMacroLongSide));
  // Past 8, a step of whole grid cells puts every sample on a grid point: a
  // quarter of the field evaluations (see grid_lines).
  if (m.step > kGrid) m.step = ceil_div(m.step, kGrid) * kGrid;
  m.width = ceil_div(spec.width, m.step);
  m.height = ceil_div(spec.height, m.step);
  // About the centres of the cells sampled, kept inside the slide.
  m.x0 = std::min(m.step / 2, spec.width - 1 - (m.width - 1) * m.step);
  m.y0 = std::min(m.step / 2, spec.height - 1 - (m.height - 1) * m.step);
  if (m.step % kGrid == 0) m.x0 -= m.x0 % kGrid, m.y0 -= m.y0 % kGrid;
  return m;
}

// A printed slide label: a few lines of block 'text' over a 1D barcode, all
// from the seed (so labels tell slides apart in a viewer).
Image make_label(uint64_t seed) {
  Image img(kRgb8, Rect(0, 0, kLabelSide, kLabelSide));
  auto put = [&](int64_t x, int64_t y, uint8_t r, uint8_t g, uint8_t b) {
    uint8_t* p = img.ptr<uint8_t>(x, y);
    p[0] = r, p[1] = g, p[2] = b;
  };
  for (int64_t y = 0; y < kLabelSide; ++y)
    for (int64_t x = 0; x < kLabelSide; ++x) {
      const uint32_t h = mix32(static_cast<uint32_t>(y * kLabelSide + x) ^ static_cast<uint32_t>(seed));
      const uint8_t v = static_cast<uint8_t>(244 + (h & 3));  // paper grain
      put(x, y, v, v, static_cast<uint8_t>(v - 4));
    }
  auto fill = [&](int64_t x0, int64_t y0, int64_t w, int64_t h, uint8_t v) {
    for (int64_t y = std::max<int64_t>(0, y0); y < std::min(kLabelSide, y0 + h); ++y)
      for (int64_t x = std::max<int64_t>(0, x0); x < std::min(kLabelSide, x0 + w); ++x) put(x, y, v, v, v);
  };
  // Frame.
  fill(0, 0, kLabelSide, 6, 90);
  fill(0, kLabelSide - 6, kLabelSide, 6, 90);
  fill(0, 0, 6, kLabelSide, 90);
  fill(kLabelSide - 6, 0, 6, kLabelSide, 90);
  uint64_t state = mix64(seed ^ 0x4C4142454Cull);
  auto rnd = [&state](uint32_t n) {
    state = mix64(state + 0x9E3779B97F4A7C15ull);
    return static_cast<uint32_t>(state % n);
  };
  // Text: 5x7 pseudo-glyphs in words; a big first line, smaller ones after.
  const int64_t line_y[4] = {50, 140, 200, 260};
  const int64_t scale[4] = {7, 5, 5, 4};
  for (int l = 0; l < 4; ++l) {
    const int64_t cw = 6 * scale[l];
    int64_t x = 40;
    const int64_t end = 40 + static_cast<int64_t>(300 + rnd(220));
    while (x + cw <= end) {
      const int64_t word = 2 + rnd(6);
      for (int64_t c = 0; c < word && x + cw <= end; ++c, x += cw) {
        const uint64_t glyph = mix64(state + c);
        for (int gy = 0; gy < 7; ++gy)
          for (int gx = 0; gx < 5; ++gx)
            if ((glyph >> (gy * 5 + gx)) & 1)
              fill(x + gx * scale[l], line_y[l] + gy * scale[l], scale[l], scale[l], 25);
        state = mix64(state + 7);
      }
      x += cw;  // space between words
    }
  }
  // Barcode: bars and spaces of 1..4 modules between quiet zones.
  constexpr int64_t kModule = 4;
  int64_t x = 60;
  bool bar = true;
  while (x < kLabelSide - 60) {
    const int64_t w = std::min<int64_t>(kModule * (1 + rnd(4)), kLabelSide - 60 - x);
    if (bar) fill(x, 360, w, 180, 15);
    x += w;
    bar = !bar;
  }
  return img;
}

// ---------------------------------------------------------------- spec parsing

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The shortest decimal that reads back as v.
std::string format_double(double v) {
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void validate(const SyntheticSpec& s, const std::string& where) {
  auto fail = [&](const std::string& why) { throw InputError(where + ": " + why); };
  if (s.width <= 0 || s.height <= 0)
    fail("size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " is empty");
  if (s.width > kMaxSide || s.height > kMaxSide)
    fail("size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " exceeds 2147483647 per side");
  if (s.width > kMaxPixels / s.height)
    fail("size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " exceeds 2^40 pixels");
  if (s.channels != 1 && s.channels != 3) fail("channels must be 1 or 3, not " + std::to_string(s.channels));
  if (s.bits != 8 && s.bits != 16) fail("bits must be 8 or 16, not " + std::to_string(s.bits));
  // Outputs keep only a plausible pixel size (io/vendor_metadata.hpp).
  if (!plausible_mpp(s.mpp))
    fail("mpp must be " + format_double(kMinMpp) + " to " + format_double(kMaxMpp) + " microns per pixel, not " +
         format_double(s.mpp));
}

std::string spec_string(const SyntheticSpec& s) {
  const SyntheticSpec d;
  std::string r = "synthetic:" + std::to_string(s.width) + "x" + std::to_string(s.height);
  if (s.seed != d.seed) r += ",seed=" + std::to_string(s.seed);
  if (s.channels == 1) r += ",gray";
  if (s.bits == 16) r += ",16bit";
  if (s.mpp != d.mpp) r += ",mpp=" + format_double(s.mpp);
  return r;
}

}  // namespace

SyntheticSpec parse_synthetic_spec(const std::string& text) {
  SyntheticSpec spec;
  const std::string where = "synthetic:" + text;
  auto fail = [&](const std::string& why) { throw InputError(where + ": " + why); };
  if (trim(text).empty()) return spec;

  std::vector<std::string> parts;
  for (size_t a = 0;;) {
    const size_t b = text.find(',', a);
    parts.push_back(trim(text.substr(a, b == std::string::npos ? std::string::npos : b - a)));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  auto parse_side = [&](const std::string& v, const char* what) -> int64_t {
    if (!v.empty() && v[0] == '-') fail(std::string("negative ") + what + " '" + v + "'");
    if (!all_digits(v)) fail(std::string("bad ") + what + " '" + v + "' (expected WxH, e.g. 16384x12288)");
    if (v.size() > 12) fail(std::string(what) + " " + v + " exceeds 2147483647");
    const int64_t n = std::stoll(v);
    if (n == 0) fail(std::string("zero ") + what);
    if (n > kMaxSide) fail(std::string(what) + " " + v + " exceeds 2147483647");
    return n;
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const size_t eq = p.find('=');
    const std::string key = p.substr(0, eq), value = eq == std::string::npos ? "" : p.substr(eq + 1);
    if (p.empty()) fail("empty option");
    if (p == "gray" || p == "grey") {
      spec.channels = 1;
    } else if (p == "16bit") {
      spec.bits = 16;
    } else if (eq != std::string::npos && key == "seed") {
      if (!all_digits(value) || value.size() > 20) fail("bad seed '" + value + "' (expected an integer 0..2^64-1)");
      errno = 0;
      const unsigned long long n = std::strtoull(value.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("seed " + value + " exceeds 2^64-1");
      spec.seed = n;
    } else if (eq != std::string::npos && key == "mpp") {
      char* end = nullptr;
      const double v = value.empty() ? 0 : std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !plausible_mpp(v))
        fail("bad mpp '" + value + "' (expected " + format_double(kMinMpp) + " to " + format_double(kMaxMpp) +
             " microns per pixel)");
      spec.mpp = v;
    } else if (i == 0 && eq == std::string::npos) {
      const size_t x = p.find_first_of("xX");
      if (x == std::string::npos) fail("bad size '" + p + "' (expected WxH, e.g. 16384x12288)");
      spec.width = parse_side(p.substr(0, x), "width");
      spec.height = parse_side(p.substr(x + 1), "height");
      if (spec.width > kMaxPixels / spec.height) fail("size " + p + " exceeds 2^40 pixels");
    } else {
      fail("unknown option '" + p + "' (expected seed=N, gray, 16bit or mpp=F)");
    }
  }
  return spec;
}

SyntheticSource::SyntheticSource(const SyntheticSpec& spec) : spec_(spec) {
  validate(spec_, "synthetic slide");
  info_.path = spec_string(spec_);
  info_.format = "synthetic";
  info_.vendor = "tilewave";
  info_.fmt = PixelFormat{spec_.bits == 16 ? SampleType::kU16 : SampleType::kU8, spec_.channels};
  LevelInfo level;
  level.width = spec_.width;
  level.height = spec_.height;
  level.downsample = 1.0;
  level.compression = "none (generated)";
  info_.levels.push_back(level);
  info_.mpp_x = info_.mpp_y = spec_.mpp;
  const MacroGeometry m = macro_geometry(spec_);
  info_.associated.push_back({"label", kLabelSide, kLabelSide});
  info_.associated.push_back({"macro", m.width, m.height});
  info_.properties.emplace_back("synthetic.seed", std::to_string(spec_.seed));
  info_.properties.emplace_back("synthetic.tissue-scale-px",
                                std::to_string(std::llround(synthetic::tissue_scale(spec_))));
}

Image SyntheticSource::read_associated(const std::string& name) const {
  if (name == "label") return make_label(spec_.seed);
  if (name == "macro") {
    const MacroGeometry m = macro_geometry(spec_);
    Image img(kRgb8, Rect(0, 0, m.width, m.height));
    synthetic::render(spec_, {m.x0, m.y0, m.step, m.width, m.height}, kRgb8, img.data(), img.stride());
    return img;
  }
  return TileSource::read_associated(name);
}

void SyntheticSource::read_inside(int, const ImageView& dst) const {
  synthetic::render(spec_, {dst.rect.x, dst.rect.y, 1, dst.rect.w, dst.rect.h}, dst.fmt, dst.data, dst.stride);
}

}  // namespace tw
