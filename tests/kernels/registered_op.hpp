#pragma once
// Helpers for the tests of filter channel, filter convert and the math ops:
// running a registered op (engine/op_registry.hpp) as every front end does,
// its type-check errors, random samples with the cases that break
// conversions (rounding boundaries, NaN, inf, -0, subnormals), and a
// bit-exact comparison that treats NaNs by their bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/memory_source.hpp"
#include "engine/op_registry.hpp"
#include "jobs/op_runner.hpp"
#include "tests/support/op_test.hpp"

namespace tw::test {

using SourceP = std::shared_ptr<const TileSource>;
using Params = std::map<std::string, std::string>;

// A copy of img as a source named `name` (the name appears in messages).
inline SourceP named_source(const Image& img, const std::string& name) {
  Image c(img.fmt(), img.rect());
  copy_overlap(img.view(), c.view());
  return std::make_shared<MemorySource>(std::move(c), 0, name);
}

inline OpParams params_of(const OpDef& op, const Params& given) {
  OpParams p = op.params_for();
  for (const auto& [k, v] : given) p.set(k, v);
  return p;
}

struct OpRun {
  Image image;
  nlohmann::json values;
};

// Registered op `name` on `in`, its result read back in tiles of `tile`
// pixels (0: in one read).
inline OpRun run_registered(const std::string& name, const std::vector<SourceP>& in, const Params& given,
                            int64_t tile = 0, const Backend& backend = {}) {
  const OpDef* op = op_registry().find(name);
  if (!op) throw std::runtime_error("no op " + name);
  ExecContext ctx;
  ctx.backend = backend;
  OpResult r = run_registered_op(*op, in, params_of(*op, given), ctx);
  return {read_tiled(*r.image, tile), r.values};
}

// The message of the error checking these inputs and parameters throws
// ("" for none); *param says whether it was a ParamError (exit status 2).
inline std::string check_error(const std::string& name, const std::vector<ImageType>& in, const Params& given = {},
                               bool* param = nullptr) {
  const OpDef* op = op_registry().find(name);
  if (!op) return "no op " + name;
  try {
    check_op(*op, in, params_of(*op, given));
  } catch (const ParamError& e) {
    if (param) *param = true;
    return e.what();
  } catch (const InputError& e) {
    if (param) *param = false;
    return e.what();
  }
  return "";
}

template <class T>
std::string sample_text(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  std::ostringstream o;
  if constexpr (std::is_same_v<T, float>) {
    uint32_t bits;
    std::memcpy(&bits, p, 4);
    o.precision(9);
    o << v << " (0x" << std::hex << bits << ")";
  } else {
    o << static_cast<int64_t>(v);
  }
  return o.str();
}

inline std::string sample_text(SampleType t, const uint8_t* p) {
  switch (t) {
    case SampleType::kU8:
      return sample_text<uint8_t>(p);
    case SampleType::kU16:
      return sample_text<uint16_t>(p);
    case SampleType::kI32:
      return sample_text<int32_t>(p);
    case SampleType::kU32:
      return sample_text<uint32_t>(p);
    case SampleType::kF32:
      break;
  }
  return sample_text<float>(p);
}

// "" when a and b hold the same bits; else the count of differing samples,
// the first (x, y, channel) and both values.
inline std::string bits_diff(const ImageView& a, const ImageView& b) {
  if (a.fmt != b.fmt) return "formats differ: " + a.fmt.str() + " vs " + b.fmt.str();
  if (a.rect.w != b.rect.w || a.rect.h != b.rect.h) return "sizes differ: " + a.rect.str() + " vs " + b.rect.str();
  const size_t sb = sample_bytes(a.fmt.type);
  int64_t count = 0;
  std::string first;
  for (int64_t y = 0; y < a.rect.h; ++y)
    for (int64_t x = 0; x < a.rect.w; ++x)
      for (int c = 0; c < a.fmt.channels; ++c) {
        const uint8_t* p = a.ptr_bytes(a.rect.x + x, a.rect.y + y) + c * sb;
        const uint8_t* q = b.ptr_bytes(b.rect.x + x, b.rect.y + y) + c * sb;
        if (std::memcmp(p, q, sb) == 0) continue;
        if (count++ == 0)
          first = "first at (" + std::to_string(x) + ", " + std::to_string(y) + ") channel " + std::to_string(c) +
                  ": " + sample_text(a.fmt.type, p) + " vs " + sample_text(b.fmt.type, q);
      }
  return count == 0 ? "" : std::to_string(count) + " samples differ; " + first;
}

// Floats that test a conversion from [lo, hi] to 0..max: the values whose
// scaled value is k + 0.5 and their neighbours a few ulps away, NaN, +-inf,
// +-0, subnormals, the largest floats, and plain values in and around the
// range.
inline float tricky_float(std::mt19937_64& rng, double lo, double hi, int max) {
  std::uniform_real_distribution<double> u(0, 1);
  const double pick = u(rng);
  if (pick < 0.35) {
    const int k = static_cast<int>(u(rng) * (max + 1)) - 1;
    float v = static_cast<float>(lo + (k + 0.5) * (hi - lo) / max);
    for (int s = static_cast<int>(u(rng) * 5) - 2; s != 0; s += s > 0 ? -1 : 1)
      v = std::nextafter(v, s > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
    return v;
  }
  if (pick < 0.45) {
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              0.f,
                              -0.f,
                              std::numeric_limits<float>::denorm_min(),
                              -std::numeric_limits<float>::denorm_min() * 77,
                              std::numeric_limits<float>::min() * 0.5f,
                              std::numeric_limits<float>::max(),
                              -std::numeric_limits<float>::max(),
                              static_cast<float>(lo),
                              static_cast<float>(hi)};
    return specials[static_cast<size_t>(u(rng) * (sizeof specials / sizeof specials[0]))];
  }
  return static_cast<float>(lo + (u(rng) * 1.4 - 0.2) * (hi - lo));
}

// A w x h image of fmt: random bits for integer samples (plus values near
// the range's rounding boundaries for i32), tricky_float for floats.
inline Image random_samples(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed, double lo = 0, double hi = 1,
                            int max = 255) {
  Image img(fmt, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y) {
    uint8_t* row = img.row_bytes(y);
    for (int64_t i = 0; i < w * fmt.channels; ++i) {
      if (fmt.type == SampleType::kF32) {
        const float v = tricky_float(rng, lo, hi, max);
        std::memcpy(row + 4 * i, &v, 4);
      } else if (fmt.type == SampleType::kI32) {
        const uint64_t r = rng();
        const double near = lo + (static_cast<double>(r >> 40) / (1 << 24) * 1.4 - 0.2) * (hi - lo);
        const int32_t v =
            r % 2 ? static_cast<int32_t>(r >> 32)
                  : static_cast<int32_t>(std::llround(std::min(2147483647.0, std::max(-2147483648.0, near))));
        std::memcpy(row + 4 * i, &v, 4);
      } else {
        for (size_t b = 0; b < sample_bytes(fmt.type); ++b) row[sample_bytes(fmt.type) * i + b] = rng() & 0xff;
      }
    }
  }
  return img;
}

}  // namespace tw::test
