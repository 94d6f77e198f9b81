#include "io/synthetic/synthetic_model.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

// How the slide is made. Every pixel is a pure function of (x, y, seed, size):
//  - Slowly varying fields (tissue mask, stain density, cellularity, fibre
//    warp, ...) are fractal value noise evaluated on a global 8 px grid and
//    bilinearly interpolated, so a pixel needs only the four grid points
//    around it whatever region it is read with.
//  - The tissue edge is a level set of a fractal field. Its anti-aliased
//    coverage comes from the field divided by its gradient magnitude (a
//    first-order signed distance), which gives a ~1.5 px edge at any zoom.
//  - Stroma fibres are stripes across a per-layer direction, bent by the warp
//    field and cut into segments; all in fixed point so that far-out
//    coordinates (2^31 px) lose no precision and no transcendental is needed.
//  - Nuclei sit on a jittered 16 px grid of cells. Each cell's nucleus is a
//    function of the cell alone; a pixel adds the nuclei whose boxes cover it,
//    always in row-major cell order, so sums are bit-identical across tilings.
//  - Colour follows Beer-Lambert: optical densities of hematoxylin and eosin
//    add, intensity = 255 * 10^-OD (a table, not pow per pixel).

//
// The model is one translation unit on purpose, past the house's ~600 lines:
// its per-sample helpers (hashing, noise, fibres, nuclei) are inline and the
// renderer's inner loops depend on their being inlined; spread over files
// they would need link-time optimisation.

namespace tw::synthetic {
namespace {

constexpr float kInvGrid = 1.0f / kGrid;
// Block of samples rendered by one task: its scratch (16 bytes a sample) stays
// in L2, and a grid row of 33 points serves 256 samples.
constexpr int64_t kBlockW = 256, kBlockH = 64;

constexpr int64_t kCell = 16;        // one nucleus candidate per 16 x 16 px
constexpr int64_t kCellMargin = 13;  // > a nucleus box's reach from its centre
// Past this lattice step, iterating a block's cells costs more than asking
// each sample for the few cells around it (the macro image).
constexpr int64_t kPerSampleNucleiStep = 32;

// Tissue: pieces of kTissueArea of the slide between them, nominally; they
// overlap, crowd in the middle and the noise bites bays and holes out, so
// 30-55% of a slide ends up tissue. They are warped by up to kIslandWarp of
// their radius and centred kIslandMargin radii from the edges where there is
// room; kTissueNoise weighs the fractal against the pieces' cones (1 at the
// centre, 0 on the nominal outline).
constexpr double kTissueArea = 0.8;
constexpr double kTissueNoise = 0.9;
constexpr double kIslandWarp = 0.3;
constexpr double kIslandMargin = 1.1;
constexpr float kEdgeSlope = 0.7f;  // tissue coverage ramp: ~1.4 px wide

// Optical density per unit stain (R, G, B). Hematoxylin 1.0 gives the
// blue-purple of a nucleus (~(88, 61, 142)), eosin 1.0 dense stroma pink
// (~(218, 140, 188)); the background is the glass seen through the scanner.
constexpr float kOdH[3] = {0.44f, 0.60f, 0.24f};
constexpr float kOdE[3] = {0.055f, 0.235f, 0.105f};
constexpr float kOdBackground[3] = {0.0185f, 0.0205f, 0.0135f};

// ---------------------------------------------------------------- hashing

inline uint64_t hash2(int64_t x, int64_t y, uint64_t salt) {
  return mix64(static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(y) * 0xC2B2AE3D27D4EB4Full +
               salt);
}

inline double unit(uint64_t h) {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}
inline float unit32(uint32_t h) {
  return static_cast<float>(h >> 8) * 0x1.0p-24f;
}

inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline float clamp01(float v) {
  return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
}
inline float smoothstep(float a, float b, float v) {
  const float t = clamp01((v - a) / (b - a));
  return t * t * (3.f - 2.f * t);
}
// smoothstep with the reciprocal of (b - a) given: no division per pixel.
inline float smoothstep_r(float a, float inv_range, float v) {
  const float t = clamp01((v - a) * inv_range);
  return t * t * (3.f - 2.f * t);
}
inline float lerp(float a, float b, float t) {
  return a + (b - a) * t;
}

// ---------------------------------------------------------------- noise

// One octave of value noise: a hash per lattice point, blended with a C1
// smoothstep so the gradient (needed for the tissue edge) is continuous. Each
// octave is rotated and shifted so that lattices of octaves do not line up.
struct Octave {
  double inv_lambda = 1, amp = 1;
  double c = 1, s = 0;
  double ox = 0, oy = 0;
  uint64_t salt = 0;
};

class Fractal {
 public:
  Fractal() = default;
  // Octaves of wavelength lambda, lambda / 2, ... down to min_lambda (at
  // least one, at most max_octaves), amplitudes 1, gain, gain^2, ...
  Fractal(uint64_t seed, uint64_t tag, double lambda, double min_lambda, double gain, int max_octaves) {
    double amp = 1;
    for (int k = 0; k < max_octaves && (k == 0 || lambda >= min_lambda); ++k) {
      Octave o;
      const uint64_t h = hash2(static_cast<int64_t>(tag), k, seed * 0xD1B54A32D192ED03ull + 0x5851F42D4C957F2Dull);
      const double angle = unit(h) * 6.283185307179586;
      o.inv_lambda = 1.0 / lambda;
      o.amp = amp;
      o.c = std::cos(angle);
      o.s = std::sin(angle);
      o.ox = unit(mix64(h + 1)) * 1024.0;
      o.oy = unit(mix64(h + 2)) * 1024.0;
      o.salt = mix64(h + 3);
      octaves_.push_back(o);
      amp *= gain;
      lambda *= 0.5;
    }
  }

  double amplitude() const {
    double a = 0;
    for (const Octave& o : octaves_) a += o.amp;
    return a;
  }

  // Value in about [-1, 1] (sum of amplitudes at most); optional gradient in
  // units per pixel.
  template <bool kGradient>
  double eval(double x, double y, double* gx = nullptr, double* gy = nullptr) const {
    double v = 0, dx = 0, dy = 0;
    for (const Octave& o : octaves_) {
      const double u = (x * o.c - y * o.s) * o.inv_lambda + o.ox;
      const double w = (x * o.s + y * o.c) * o.inv_lambda + o.oy;
      const double fu = std::floor(u), fw = std::floor(w);
      const int64_t iu = static_cast<int64_t>(fu), iw = static_cast<int64_t>(fw);
      const double tu = u - fu, tw = w - fw;
      const double su = tu * tu * (3 - 2 * tu), sw = tw * tw * (3 - 2 * tw);
      const double a = lattice(iu, iw, o.salt), b = lattice(iu + 1, iw, o.salt);
      const double c = lattice(iu, iw + 1, o.salt), d = lattice(iu + 1, iw + 1, o.salt);
      const double ab = a + (b - a) * su, cd = c + (d - c) * su;
      v += o.amp * (ab + (cd - ab) * sw);
      if (kGradient) {
        const double du = ((b - a) + ((d - c) - (b - a)) * sw) * 6 * tu * (1 - tu);
        const double dw = (cd - ab) * 6 * tw * (1 - tw);
        // Back through the rotation: u = (x c - y s)/lambda, w = (x s + y c)/lambda.
        dx += o.amp * o.inv_lambda * (du * o.c + dw * o.s);
        dy += o.amp * o.inv_lambda * (-du * o.s + dw * o.c);
      }
    }
    if (kGradient) *gx = dx, *gy = dy;
    return v;
  }

 private:
  static double lattice(int64_t i, int64_t j, uint64_t salt) { return unit(hash2(i, j, salt)) * 2 - 1; }
  std::vector<Octave> octaves_;
};

// 255 * 10^-OD through tables rather than pow() per pixel. OD is counted
// in steps of 1/4096 (a step is under 0.15 grey levels): 8-bit output reads
// the rounded intensity of the step; 16-bit output interpolates a float table
// at the unrounded OD for its fine detail but keeps the 8-bit value, so the
// formats agree.
constexpr int kOdSteps = 4096;  // per unit OD
constexpr int kU8Size = 4 * kOdSteps;
constexpr int kFloatPerOd = 1024;
constexpr int kFloatSize = 4 * kFloatPerOd;

struct OdTables {
  std::array<uint8_t, kU8Size> u8{};
  std::array<float, kFloatSize + 2> f{};
  OdTables() {
    for (int i = 0; i < kU8Size; ++i)
      u8[i] = static_cast<uint8_t>(std::lround(255.0 * std::pow(10.0, -static_cast<double>(i) / kOdSteps)));
    for (int i = 0; i < kFloatSize + 2; ++i)
      f[i] = static_cast<float>(255.0 * std::pow(10.0, -static_cast<double>(i) / kFloatPerOd));
  }
};

const OdTables& od_tables() {
  static const OdTables tables;
  return tables;
}

inline int od_to_u8(const OdTables& t, int step) {
  return t.u8[step < 0 ? 0 : (step >= kU8Size ? kU8Size - 1 : step)];
}

// od in steps of 1/kOdSteps, unrounded.
inline float od_to_intensity(const OdTables& t, float od) {
  float x = od * (static_cast<float>(kFloatPerOd) / kOdSteps);
  x = x < 0.f ? 0.f : (x > kFloatSize ? static_cast<float>(kFloatSize) : x);
  const int i = static_cast<int>(x);
  const float r = x - static_cast<float>(i);
  return t.f[i] + (t.f[i + 1] - t.f[i]) * r;
}

// ---------------------------------------------------------------- the model

// Slowly varying fields at one grid point.
struct GridPoint {
  float f;      // tissue field (> 0 inside)
  float g;      // |grad f| per px, floored
  float warp;   // fibre phase warp, px
  float blend;  // 0: fibre layer 0, 1: layer 1
  float eden;   // eosin density factor
  float cel;    // cellularity: 0 stroma, 1 packed epithelium
  float loose;  // strength of clefts between fibres
  float bg;     // slight OD variation of the glass (uneven illumination)
};

// Stripes across `angle`, period kFibrePeriod px, each stripe cut into
// segments along its length.
struct FibreLayer {
  int64_t cu = 0, su = 0;  // u = x cu + y su: periods * 2^16
  int64_t cv = 0, sv = 0;  // v = y cv - x sv: px * 2^16
  float warp_scale = 0;    // px of warp -> u units
  uint32_t salt = 0;
  double angle = 0;
};
constexpr double kFibrePeriod = 5.5;
constexpr double kFibreWarp = 34.0;  // px: bundles wave over a few hundred px

// Reciprocals (2^16 / length) of segment lengths 18..63 px.
struct SegmentTable {
  std::array<int64_t, 16> recip{};
  SegmentTable() {
    for (int i = 0; i < 16; ++i) recip[i] = std::llround(65536.0 / (18.0 + 3.0 * i));
  }
};

// One stripe of a fibre layer: brightness, and where along its length its
// segments break.
struct Strand {
  float amp;
  int64_t recip;  // 2^16 / segment length
  int64_t phase;  // segment offset, 2^-16 segments
};
struct StrandCache {
  int64_t k = INT64_MIN + 1;  // strands k and k + 1 are held
  Strand s[2];
};

struct Nucleus {
  double x = 0, y = 0;                     // centre, px
  float ca = 1, sa = 0;                    // orientation of the major axis
  float ia2 = 1, ib2 = 1;                  // 1/a^2, 1/b^2
  float lim2 = 1;                          // d^2 past which a pixel is surely outside
  float minor = 1;                         // b, px
  float hn = 1;                            // hematoxylin density
  float rim = 0;                           // extra density at the membrane
  float chrom = 0;                         // chromatin texture amplitude
  float pale = 0;                          // vesicular nuclei: a paler interior...
  float nucleolus = 0;                     // ...with a dark nucleolus
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // box of covered pixels, half-open
};

class SlideModel {
 public:
  explicit SlideModel(const SyntheticSpec& spec);

  // Renders lat into out (sample (i, j) at out + j*stride + i*bpp), in fmt.
  void render(const Lattice& lat, PixelFormat fmt, uint8_t* out, size_t stride) const;

  double tissue_scale() const { return tissue_scale_; }

 private:
  struct Scratch;
  void render_block(const Lattice& lat, int64_t i0, int64_t j0, int64_t ni, int64_t nj, PixelFormat fmt, uint8_t* out,
                    size_t stride) const;
  // The grid point's tissue field and glass tint; its stroma fields.
  void grid_tissue(int64_t gx, int64_t gy, GridPoint* p) const;
  void grid_stroma(int64_t gx, int64_t gy, GridPoint* p) const;
  double tissue_field(double x, double y, double* gx, double* gy) const;
  Strand strand(const FibreLayer& layer, int64_t k) const;
  float fibre(const FibreLayer& layer, int64_t x, int64_t y, float warp, StrandCache* cache) const;
  // The nucleus of cell (cx, cy), if it has one (and, given `near`, if it
  // may cover the pixel near[0], near[1]).
  bool nucleus_at(int64_t cx, int64_t cy, Nucleus* n, const int64_t* near = nullptr) const;
  static void apply_nucleus(const Nucleus& n, int64_t x, int64_t y, uint32_t seed32, float at, float* h, float* e);

  int64_t width_, height_;
  uint64_t seed_;
  uint32_t seed32_;
  double tissue_scale_;
  double tissue_norm_;  // 1 / sum of the octaves' amplitudes
  struct Island {
    double x, y, c, s, inv_a, inv_b;
  };
  std::vector<Island> islands_;
  double island_radius_;
  Fractal warp_x_, warp_y_;  // bend the islands' ellipses
  Fractal tissue_, warp_, blend_, eden_, cel_, loose_, bg_;
  FibreLayer layers_[2];
  SegmentTable segments_;
  uint64_t nucleus_salt_;
};

SlideModel::SlideModel(const SyntheticSpec& spec) : width_(spec.width), height_(spec.height), seed_(spec.seed) {
  seed32_ = static_cast<uint32_t>(mix64(seed_ ^ 0xA0761D6478BD642Full));
  // A few tissue pieces (more on long slides), sized from the slide so that
  // a 300x200 image and a 200000x100000 one look alike.
  const double w = static_cast<double>(width_), hgt = static_cast<double>(height_);
  const double aspect = std::max(w, hgt) / std::min(w, hgt);
  uint64_t is_state = mix64(seed_ ^ 0x15A4D5ull);
  auto next = [&is_state]() {
    is_state = mix64(is_state + 0x9E3779B97F4A7C15ull);
    return unit(is_state);
  };
  // Capped before the conversion: a 2147483647x1 slide's aspect is past int.
  const int count = static_cast<int>(std::min(8.0, 3 + std::round(aspect) + next() * 3));
  const double radius = std::sqrt(kTissueArea * w * hgt / (count * 3.141592653589793));
  for (int k = 0; k < count; ++k) {
    // Best of a few candidate places: pieces mostly lie apart, like sections
    // laid on a slide.
    Island best{};
    double best_gap = -1e300;
    for (int attempt = 0; attempt < 12; ++attempt) {
      Island is;
      const double a = std::min(radius * (0.8 + 0.5 * next()), 0.4 * std::min(w, hgt) + 1);
      const double b = a * (0.45 + 0.5 * next());
      const double angle = next() * 3.141592653589793;
      // Inside the slide with a margin for the warp, where there is room.
      const double mx = std::min(0.5 * w, kIslandMargin * a), my = std::min(0.5 * hgt, kIslandMargin * a);
      is.x = mx + (w - 2 * mx) * next();
      is.y = my + (hgt - 2 * my) * next();
      is.c = std::cos(angle), is.s = std::sin(angle);
      is.inv_a = 1 / a, is.inv_b = 1 / b;
      double gap = 1e300;
      for (const Island& o : islands_)
        gap = std::min(gap, std::hypot(is.x - o.x, is.y - o.y) - (1 / is.inv_a + 1 / o.inv_a) * 0.7);
      if (gap > best_gap) best_gap = gap, best = is;
      if (gap > 0) break;
    }
    islands_.push_back(best);
  }
  island_radius_ = radius;
  warp_x_ = Fractal(seed_, 8, std::max(64.0, radius * 1.2), 1.0, 0.5, 2);
  warp_y_ = Fractal(seed_, 9, std::max(64.0, radius * 1.2), 1.0, 0.5, 2);
  // Noise on the scale of the pieces, down to 32 px (gain 0.58, rougher
  // than 1/f, keeps outlines ragged at the scale of cells on big slides).
  tissue_scale_ = std::min(20000.0, std::max(96.0, radius));
  tissue_ = Fractal(seed_, 1, tissue_scale_, 32.0, 0.58, 12);
  tissue_norm_ = 1.0 / tissue_.amplitude();
  warp_ = Fractal(seed_, 2, 300.0, 100.0, 0.4, 2);
  blend_ = Fractal(seed_, 3, 450.0, 450.0, 0.5, 1);
  eden_ = Fractal(seed_, 4, 900.0, 300.0, 0.5, 2);
  cel_ = Fractal(seed_, 5, 750.0, 300.0, 0.5, 2);
  loose_ = Fractal(seed_, 6, 520.0, 520.0, 0.5, 1);
  bg_ = Fractal(seed_, 7, 3000.0, 3000.0, 0.5, 1);
  const double base_angle = unit(mix64(seed_ * 31 + 11)) * 3.141592653589793;
  for (int l = 0; l < 2; ++l) {
    const double angle = base_angle + l * (0.9 + 0.6 * unit(mix64(seed_ * 31 + 12)));
    FibreLayer& f = layers_[l];
    f.angle = angle;
    f.cu = std::llround(std::cos(angle) / kFibrePeriod * 65536.0);
    f.su = std::llround(std::sin(angle) / kFibrePeriod * 65536.0);
    f.cv = std::llround(std::cos(angle) * 65536.0);
    f.sv = std::llround(std::sin(angle) * 65536.0);
    f.warp_scale = static_cast<float>(65536.0 / kFibrePeriod);
    f.salt = static_cast<uint32_t>(mix64(seed_ * 131 + 17 + l));
  }
  nucleus_salt_ = mix64(seed_ * 0x9E3779B97F4A7C15ull + 0x1234567);
}

double SlideModel::tissue_field(double x, double y, double* gx, double* gy) const {
  // The nearest island's elliptical cone (1 at its centre, 0 on its nominal
  // outline), so the margins of the slide stay bare and pieces stay apart...
  // Warped coordinates (x', y') = (x, y) + A (n1, n2): irregular, elongated
  // pieces rather than ellipses. The gradient goes back through the warp's
  // Jacobian.
  const double amp = kIslandWarp * island_radius_;
  double n1x, n1y, n2x, n2y;
  const double wx = x + amp * warp_x_.eval<true>(x, y, &n1x, &n1y);
  const double wy = y + amp * warp_y_.eval<true>(x, y, &n2x, &n2y);
  double best = -1e300, bx = 0, by = 0;
  for (const Island& is : islands_) {
    const double dx = wx - is.x, dy = wy - is.y;
    const double u = (dx * is.c + dy * is.s) * is.inv_a, w = (dy * is.c - dx * is.s) * is.inv_b;
    const double d = std::sqrt(u * u + w * w) + 1e-12;
    if (1 - d > best) {
      best = 1 - d;
      bx = -(u * is.c * is.inv_a - w * is.s * is.inv_b) / d;
      by = -(u * is.s * is.inv_a + w * is.c * is.inv_b) / d;
    }
  }
  *gx = bx * (1 + amp * n1x) + by * amp * n2x;
  *gy = bx * amp * n1y + by * (1 + amp * n2y);
  // ...and fractal noise frays the outlines, bites bays and holes out and
  // drops small fragments nearby. The noise is at most kTissueNoise in
  // size, so far out on the glass its upper bound stands in for it: still a
  // pure function of (x, y), well below 0 there and at the neighbouring grid
  // points, so no pixel near it is tissue. Saves most of the field's cost.
  if (best + kTissueNoise < -0.5) return best + kTissueNoise;
  double tx, ty;
  const double v = best + kTissueNoise * tissue_norm_ * tissue_.eval<true>(x, y, &tx, &ty);
  *gx += kTissueNoise * tissue_norm_ * tx;
  *gy += kTissueNoise * tissue_norm_ * ty;
  return v;
}

void SlideModel::grid_tissue(int64_t gx, int64_t gy, GridPoint* p) const {
  const double x = static_cast<double>(gx * kGrid), y = static_cast<double>(gy * kGrid);
  double dx, dy;
  p->f = static_cast<float>(tissue_field(x, y, &dx, &dy));
  p->g = static_cast<float>(std::max(std::sqrt(dx * dx + dy * dy), 1e-5));
  p->bg = static_cast<float>(0.004 * bg_.eval<false>(x, y));
}

void SlideModel::grid_stroma(int64_t gx, int64_t gy, GridPoint* p) const {
  const double x = static_cast<double>(gx * kGrid), y = static_cast<double>(gy * kGrid);
  p->warp = static_cast<float>(kFibreWarp * warp_.eval<false>(x, y));
  p->blend = smoothstep(-0.22f, 0.22f, static_cast<float>(blend_.eval<false>(x, y)));
  p->eden = static_cast<float>(0.88 + 0.32 * eden_.eval<false>(x, y));
  p->cel = smoothstep(0.12f, 0.30f, static_cast<float>(cel_.eval<false>(x, y)));
  p->loose = 0.9f * smoothstep(-0.1f, 0.5f, static_cast<float>(loose_.eval<false>(x, y)));
}

inline Strand SlideModel::strand(const FibreLayer& l, int64_t k) const {
  const uint32_t h = mix32(static_cast<uint32_t>(k) * 0x9E3779B1u ^ l.salt);
  return {0.15f + 0.85f * static_cast<float>(h & 0xFF) * (1.f / 255.f), segments_.recip[(h >> 8) & 15],
          static_cast<int64_t>(h >> 16)};
}

inline float SlideModel::fibre(const FibreLayer& l, int64_t x, int64_t y, float warp, StrandCache* c) const {
  const int64_t u = x * l.cu + y * l.su + static_cast<int64_t>(warp * l.warp_scale);
  const int64_t v = y * l.cv - x * l.sv;
  const int64_t k = u >> 16;
  // Neighbouring pixels mostly lie between the same two strands.
  if (k != c->k) {
    if (k == c->k + 1) {
      c->s[0] = c->s[1];
      c->s[1] = strand(l, k + 1);
    } else if (k == c->k - 1) {
      c->s[1] = c->s[0];
      c->s[0] = strand(l, k);
    } else {
      c->s[0] = strand(l, k);
      c->s[1] = strand(l, k + 1);
    }
    c->k = k;
  }
  const float fu = static_cast<float>(u & 0xFFFF) * (1.f / 65536.f);
  float s[2];
  for (int n = 0; n < 2; ++n) {
    const Strand& st = c->s[n];
    const int64_t seg = ((v * st.recip) >> 16) + st.phase;
    const float f = static_cast<float>(seg & 0xFFFF) * (1.f / 65536.f);
    const float w = 4.f * f * (1.f - f);  // 0 at the ends of a segment
    s[n] = st.amp * (0.5f + 0.5f * w);
  }
  return lerp(s[0], s[1], fu * fu * (3.f - 2.f * fu));
}

bool SlideModel::nucleus_at(int64_t cx, int64_t cy, Nucleus* n, const int64_t* near) const {
  const uint64_t h0 = hash2(cx, cy, nucleus_salt_);
  constexpr float kMaxPresence = 0.86f;
  const float presence = static_cast<float>(h0 & 0xFFFF) * (1.f / 65536.f);
  if (presence >= kMaxPresence) return false;
  n->x = static_cast<double>(cx * kCell) + static_cast<double>((h0 >> 16) & 0xFFFF) * (kCell / 65536.0);
  n->y = static_cast<double>(cy * kCell) + static_cast<double>((h0 >> 32) & 0xFFFF) * (kCell / 65536.0);
  if (near && (std::abs(static_cast<double>(near[0]) - n->x) > kCellMargin ||
               std::abs(static_cast<double>(near[1]) - n->y) > kCellMargin))
    return false;
  const float cel = smoothstep(0.12f, 0.30f, static_cast<float>(cel_.eval<false>(n->x, n->y)));
  if (presence >= 0.09f + 0.77f * cel) return false;

  uint64_t h = mix64(h0 ^ 0x6A09E667F3BCC909ull);
  auto next = [&h]() {
    h = mix64(h + 0x9E3779B97F4A7C15ull);
    return static_cast<float>(unit(h));
  };
  const float kind = next();
  float a, b, angle;
  n->chrom = 0.22f;
  n->pale = 0;
  n->nucleolus = 0;
  n->rim = 0.25f;
  if (kind < 0.10f) {  // lymphocyte: small, round, very dark
    a = 3.0f + 0.9f * next();
    b = a * (0.85f + 0.15f * next());
    angle = 6.2831853f * next();
    n->hn = 1.15f + 0.3f * next();
    n->rim = 0.1f;
    n->chrom = 0.12f;
  } else if (next() < cel) {  // epithelial: larger, roundish, often vesicular
    a = 4.3f + 3.2f * next();
    b = a * (0.62f + 0.36f * next());
    angle = 6.2831853f * next();
    n->hn = 0.55f + 0.35f * next();
    if (next() < 0.2f) {
      n->pale = 0.35f + 0.2f * next();
      n->nucleolus = 0.6f;
      n->rim = 0.35f;
    }
  } else {  // fibroblast: spindle along the fibres
    a = 6.0f + 3.4f * next();
    b = 1.9f + 1.2f * next();
    // Along the local fibres: across the gradient of the stripes' phase
    // x cos + y sin + warp(x, y).
    const float blend = smoothstep(-0.22f, 0.22f, static_cast<float>(blend_.eval<false>(n->x, n->y)));
    const double la = layers_[blend < 0.5f ? 0 : 1].angle;
    double wx, wy;
    warp_.eval<true>(n->x, n->y, &wx, &wy);
    angle = static_cast<float>(std::atan2(std::sin(la) + kFibreWarp * wy, std::cos(la) + kFibreWarp * wx)) +
            1.5707963f + 0.3f * (next() - 0.5f);
    n->hn = 0.7f + 0.35f * next();
  }
  n->ca = std::cos(angle);
  n->sa = std::sin(angle);
  n->ia2 = 1.f / (a * a);
  n->ib2 = 1.f / (b * b);
  n->minor = b;
  const float lim = 1.f + 0.75f / b;
  n->lim2 = lim * lim;
  const double r = a + 1.5;
  n->x0 = static_cast<int64_t>(std::floor(n->x - r));
  n->y0 = static_cast<int64_t>(std::floor(n->y - r));
  n->x1 = static_cast<int64_t>(std::ceil(n->x + r)) + 1;
  n->y1 = static_cast<int64_t>(std::ceil(n->y + r)) + 1;
  return true;
}

inline void SlideModel::apply_nucleus(const Nucleus& n, int64_t x, int64_t y, uint32_t seed32, float at, float* h,
                                      float* e) {
  const float dx = static_cast<float>(static_cast<double>(x) - n.x);
  const float dy = static_cast<float>(static_cast<double>(y) - n.y);
  const float u = dx * n.ca + dy * n.sa, v = dy * n.ca - dx * n.sa;
  const float d2 = u * u * n.ia2 + v * v * n.ib2;
  if (d2 >= n.lim2) return;
  // Distance to the ellipse ~ (d - 1) / |grad d| with d the normalised
  // radius: exact for circles, good to a fraction of a pixel near the edge.
  const float gu = u * n.ia2, gv = v * n.ib2;
  const float gn = std::sqrt(gu * gu + gv * gv);
  const float d = std::sqrt(d2);
  const float sd = gn > 1e-6f ? (d - 1.f) * d / gn : -n.minor;
  const float alpha = clamp01(0.5f - sd);
  if (alpha <= 0.f) return;
  const float rim = clamp01(1.f + sd * (1.f / 1.6f));
  // Chromatin: coarse (2 px) and fine grain.
  const uint32_t c1 =
      mix32(static_cast<uint32_t>(x >> 1) * 0x9E3779B1u + static_cast<uint32_t>(y >> 1) * 0x85EBCA77u + seed32);
  const uint32_t c2 = mix32((static_cast<uint32_t>(x) * 0x85EBCA77u + static_cast<uint32_t>(y) * 0xC2B2AE35u) ^ seed32);
  const float grain = 0.65f * unit32(c1) + 0.35f * unit32(c2) - 0.5f;
  float dens = 1.f - n.pale * (1.f - rim) + n.rim * rim + n.chrom * 2.f * grain;
  if (n.nucleolus > 0.f) dens += n.nucleolus * clamp01((0.3f - d) * 6.f);
  const float cover = at * alpha;
  *h += cover * n.hn * dens;
  *e *= 1.f - 0.6f * cover;
}

struct SlideModel::Scratch {
  std::vector<int64_t> xs, ys, gcols, grows;
  std::vector<int32_t> kx, ky;
  std::vector<float> fx, fy;
  std::vector<GridPoint> grid, row;
  std::vector<uint8_t> tissue, col_used, row_used;
  std::vector<float> h, e, at, bg;
};

void SlideModel::render(const Lattice& lat, PixelFormat fmt, uint8_t* out, size_t stride) const {
  const int64_t bx = ceil_div(lat.nx, kBlockW), by = ceil_div(lat.ny, kBlockH);
  const size_t bpp = fmt.bytes_per_pixel();
  auto block = [&](int64_t b) {
    const int64_t i0 = (b % bx) * kBlockW, j0 = (b / bx) * kBlockH;
    render_block(lat, i0, j0, std::min(kBlockW, lat.nx - i0), std::min(kBlockH, lat.ny - j0), fmt,
                 out + static_cast<size_t>(j0) * stride + static_cast<size_t>(i0) * bpp, stride);
  };
  if (bx * by == 1) {
    block(0);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, bx * by), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t b = r.begin(); b != r.end(); ++b) block(b);
  });
}

// Grid lines that the samples xs need: each sample's cell start and end, in
// order without repeats; k[i] indexes sample i's cell start. A sample on a
// grid line (frac 0) takes nothing from the next one (a + (b - a) * 0 is a
// for any finite b), so `used` marks the lines whose values matter: samples
// aligned to the grid, as the macro's are, cost one grid point, not four.
void grid_lines(const std::vector<int64_t>& xs, std::vector<int64_t>& lines, std::vector<uint8_t>& used,
                std::vector<int32_t>& k, std::vector<float>& frac) {
  lines.clear();
  used.clear();
  k.resize(xs.size());
  frac.resize(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t g = floor_div(xs[i], kGrid);
    if (lines.empty() || lines.back() < g) lines.push_back(g), used.push_back(0);
    if (lines.back() == g) lines.push_back(g + 1), used.push_back(0);
    k[i] = static_cast<int32_t>(lines.size() - 2);
    frac[i] = static_cast<float>(xs[i] - g * kGrid) * kInvGrid;
    used[k[i]] = 1;
    if (frac[i] != 0.f) used[k[i] + 1] = 1;
  }
}

void SlideModel::render_block(const Lattice& lat, int64_t i0, int64_t j0, int64_t ni, int64_t nj, PixelFormat fmt,
                              uint8_t* out, size_t stride) const {
  // Reused by the blocks a thread renders: no allocation (nor page faults)
  // per block. render_block starts no parallel work, so cannot re-enter.
  thread_local Scratch s;
  s.xs.resize(ni);
  s.ys.resize(nj);
  for (int64_t i = 0; i < ni; ++i) s.xs[i] = lat.x0 + (i0 + i) * lat.step;
  for (int64_t j = 0; j < nj; ++j) s.ys[j] = lat.y0 + (j0 + j) * lat.step;
  grid_lines(s.xs, s.gcols, s.col_used, s.kx, s.fx);
  grid_lines(s.ys, s.grows, s.row_used, s.ky, s.fy);
  const size_t gw = s.gcols.size(), gh = s.grows.size();
  s.grid.resize(gw * gh);
  for (size_t r = 0; r < gh; ++r)
    for (size_t c = 0; c < gw; ++c) {
      GridPoint& p = s.grid[r * gw + c];
      if (s.row_used[r] && s.col_used[c]) {
        grid_tissue(s.gcols[c], s.grows[r], &p);
      } else {
        p.f = -1.f, p.g = 1.f, p.bg = 0.f;  // finite, and no tissue
      }
    }
  // Stroma fields only where a pixel may use them: at the corners of grid
  // cells with tissue. A cell has none when f + g <= 0 at its four corners
  // (see row_tissue below), so a point is needed when some point of its 3x3
  // neighbourhood has f + g > 0. Elsewhere the fields are never read.
  s.tissue.assign(gw * gh, 0);
  for (size_t r = 0; r < gh; ++r)
    for (size_t c = 0; c < gw; ++c) {
      const GridPoint& p = s.grid[r * gw + c];
      if (p.f + p.g <= 0.f) continue;
      for (size_t rr = r > 0 ? r - 1 : 0; rr <= std::min(r + 1, gh - 1); ++rr)
        for (size_t cc = c > 0 ? c - 1 : 0; cc <= std::min(c + 1, gw - 1); ++cc) s.tissue[rr * gw + cc] = 1;
    }
  for (size_t r = 0; r < gh; ++r)
    for (size_t c = 0; c < gw; ++c) {
      GridPoint& p = s.grid[r * gw + c];
      if (s.tissue[r * gw + c])
        grid_stroma(s.gcols[c], s.grows[r], &p);
      else
        p.warp = p.blend = p.eden = p.cel = p.loose = 0.f;
    }

  const size_t n = static_cast<size_t>(ni * nj);
  s.h.resize(n);
  s.e.resize(n);
  s.at.resize(n);
  s.bg.resize(n);
  s.row.resize(gw);
  bool any_tissue = false;

  // Fields, tissue and stroma.
  for (int64_t j = 0; j < nj; ++j) {
    const int64_t y = s.ys[j];
    const GridPoint* g0 = &s.grid[static_cast<size_t>(s.ky[j]) * gw];
    const GridPoint* g1 = g0 + gw;
    const float fy = s.fy[j];
    bool row_tissue = false;
    for (size_t c = 0; c < gw; ++c) {
      GridPoint& p = s.row[c];
      p.f = lerp(g0[c].f, g1[c].f, fy);
      p.g = lerp(g0[c].g, g1[c].g, fy);
      p.warp = lerp(g0[c].warp, g1[c].warp, fy);
      p.blend = lerp(g0[c].blend, g1[c].blend, fy);
      p.eden = lerp(g0[c].eden, g1[c].eden, fy);
      p.cel = lerp(g0[c].cel, g1[c].cel, fy);
      p.loose = lerp(g0[c].loose, g1[c].loose, fy);
      p.bg = lerp(g0[c].bg, g1[c].bg, fy);
      // Coverage is > 0 only where f > -g / (2 kEdgeSlope); f + g is linear
      // along the row, so columns all <= 0 mean no tissue between them.
      row_tissue |= p.f + p.g > 0.f;
    }
    const size_t o = static_cast<size_t>(j * ni);
    StrandCache cache[2];
    for (int64_t i = 0; i < ni; ++i) {
      const GridPoint& a = s.row[s.kx[i]];
      const GridPoint& b = s.row[s.kx[i] + 1];
      const float fx = s.fx[i];
      s.bg[o + i] = lerp(a.bg, b.bg, fx);
      s.h[o + i] = s.e[o + i] = s.at[o + i] = 0.f;
      if (!row_tissue) continue;
      const float f = lerp(a.f, b.f, fx);
      const float q = f / lerp(a.g, b.g, fx);  // signed distance to the edge, px
      const float at = clamp01(q * kEdgeSlope + 0.5f);
      if (at <= 0.f) continue;
      any_tissue = true;
      const int64_t x = s.xs[i];
      const float warp = lerp(a.warp, b.warp, fx);
      const float eden = lerp(a.eden, b.eden, fx);
      const float cel = lerp(a.cel, b.cel, fx);
      // Epithelium: pale, even cytoplasm with a hint of H; stroma: fibres
      // over a pink ground, opened into white clefts where it is loose.
      float e = eden * 0.71f;
      if (cel < 1.f) {
        const float blend = lerp(a.blend, b.blend, fx);
        float fib;
        if (blend <= 0.f)
          fib = fibre(layers_[0], x, y, warp, &cache[0]);
        else if (blend >= 1.f)
          fib = fibre(layers_[1], x, y, warp, &cache[1]);
        else
          fib = lerp(fibre(layers_[0], x, y, warp, &cache[0]), fibre(layers_[1], x, y, warp, &cache[1]), blend);
        const float loose = lerp(a.loose, b.loose, fx);
        float stroma = eden * (0.42f + 0.8f * fib);
        stroma *= 1.f - loose * smoothstep_r(0.34f, 1.f / (0.06f - 0.34f), fib);
        e = lerp(stroma, e, cel);
      }
      s.e[o + i] = at * e;
      s.h[o + i] = at * lerp(0.03f, 0.05f, cel);
      s.at[o + i] = at;
    }
  }

  // Nuclei. Each pixel takes the nuclei covering it in row-major cell order
  // whichever path runs, so both give the same bits.
  if (any_tissue) {
    const int64_t step = lat.step;
    if (step <= kPerSampleNucleiStep) {
      const int64_t cx0 = floor_div(s.xs.front() - kCellMargin, kCell);
      const int64_t cx1 = floor_div(s.xs.back() + kCellMargin, kCell);
      const int64_t cy0 = floor_div(s.ys.front() - kCellMargin, kCell);
      const int64_t cy1 = floor_div(s.ys.back() + kCellMargin, kCell);
      Nucleus nu;
      for (int64_t cy = cy0; cy <= cy1; ++cy) {
        for (int64_t cx = cx0; cx <= cx1; ++cx) {
          if (!nucleus_at(cx, cy, &nu)) continue;
          // Samples inside the nucleus box.
          const int64_t ia = std::max<int64_t>(0, ceil_div(std::max<int64_t>(nu.x0 - s.xs.front(), 0), step));
          const int64_t ib = std::min<int64_t>(ni, floor_div(nu.x1 - 1 - s.xs.front(), step) + 1);
          const int64_t ja = std::max<int64_t>(0, ceil_div(std::max<int64_t>(nu.y0 - s.ys.front(), 0), step));
          const int64_t jb = std::min<int64_t>(nj, floor_div(nu.y1 - 1 - s.ys.front(), step) + 1);
          for (int64_t j = ja; j < jb; ++j) {
            const size_t o = static_cast<size_t>(j * ni);
            for (int64_t i = ia; i < ib; ++i) {
              if (s.at[o + i] <= 0.f) continue;
              apply_nucleus(nu, s.xs[i], s.ys[j], seed32_, s.at[o + i], &s.h[o + i], &s.e[o + i]);
            }
          }
        }
      }
    } else {
      Nucleus nu;
      for (int64_t j = 0; j < nj; ++j) {
        const int64_t y = s.ys[j];
        for (int64_t i = 0; i < ni; ++i) {
          const size_t o = static_cast<size_t>(j * ni + i);
          if (s.at[o] <= 0.f) continue;
          const int64_t x = s.xs[i];
          const int64_t at_xy[2] = {x, y};
          for (int64_t cy = floor_div(y - kCellMargin, kCell); cy <= floor_div(y + kCellMargin, kCell); ++cy)
            for (int64_t cx = floor_div(x - kCellMargin, kCell); cx <= floor_div(x + kCellMargin, kCell); ++cx) {
              if (!nucleus_at(cx, cy, &nu, at_xy)) continue;
              if (x < nu.x0 || x >= nu.x1 || y < nu.y0 || y >= nu.y1) continue;
              apply_nucleus(nu, x, y, seed32_, s.at[o], &s.h[o], &s.e[o]);
            }
        }
      }
    }
  }

  // Colour: Beer-Lambert with scanner noise, then the requested format.
  // OD in steps: glass + hematoxylin + eosin (+ the glass tint, which is
  // tiny), plus scanner noise. The sum of the float terms is offset to stay
  // positive, so truncation rounds it.
  const OdTables& tables = od_tables();
  constexpr float kSteps = kOdSteps;
  constexpr float kStepsH[3] = {kOdH[0] * kSteps, kOdH[1] * kSteps, kOdH[2] * kSteps};
  constexpr float kStepsE[3] = {kOdE[0] * kSteps, kOdE[1] * kSteps, kOdE[2] * kSteps};
  constexpr int kOffset = 1 << 12;
  // Noise: 5 bits of the pixel's hash a channel, -16..15 steps (+-0.004 OD,
  // about +-2.3 grey levels on the glass).
  constexpr uint32_t kNoiseMask = 31;
  constexpr int kNoiseMid = 16;
  int glass[3];
  for (int c = 0; c < 3; ++c) glass[c] = static_cast<int>(std::lround(kOdBackground[c] * kSteps)) - kOffset - kNoiseMid;
  const bool u16 = fmt.type == SampleType::kU16;
  const bool gray = fmt.channels == 1;
  // 16-bit: the 8-bit value * 257 plus the rounding residue, so the data has
  // real sub-8-bit detail yet still rounds back to the 8-bit image.
  auto to16 = [](float f, int v) {
    const int d = std::min(128, std::max(-128, static_cast<int>((f - static_cast<float>(v)) * 257.f + 128.5f) - 128));
    return static_cast<uint16_t>(std::min(65535, std::max(0, v * 257 + d)));
  };
  for (int64_t j = 0; j < nj; ++j) {
    const int64_t y = s.ys[j];
    const uint32_t row_key = mix32(static_cast<uint32_t>(y) * 0x9E3779B1u + seed32_);
    const size_t o = static_cast<size_t>(j * ni);
    const float* h = &s.h[o];
    const float* e = &s.e[o];
    const float* bg = &s.bg[o];
    const float* at = &s.at[o];
    uint8_t* o8 = out + static_cast<size_t>(j) * stride;
    uint16_t* o16 = reinterpret_cast<uint16_t*>(o8);
    for (int64_t i = 0; i < ni; ++i) {
      const uint32_t nh = mix32(static_cast<uint32_t>(s.xs[i]) * 0x85EBCA77u + row_key);
      int base[3], v8[3];
      for (int c = 0; c < 3; ++c) base[c] = glass[c] + static_cast<int>((nh >> (c * 8)) & kNoiseMask);
      const float bgs = bg[i] * kSteps + (kOffset + 0.5f);
      if (!u16 && at[i] <= 0.f) {
        // Bare glass: h = e = 0 exactly, so the sum is bgs for all channels
        // (the general formula below, one conversion instead of three).
        const int b = static_cast<int>(bgs);
        for (int c = 0; c < 3; ++c) v8[c] = tables.u8[base[c] + b];
      } else {
        float sum[3];
        for (int c = 0; c < 3; ++c) {
          sum[c] = bgs + h[i] * kStepsH[c] + e[i] * kStepsE[c];
          v8[c] = od_to_u8(tables, base[c] + static_cast<int>(sum[c]));
        }
        if (u16) {
          float f[3];
          for (int c = 0; c < 3; ++c) f[c] = od_to_intensity(tables, static_cast<float>(base[c]) + sum[c] - 0.5f);
          if (gray)
            o16[i] = to16(0.299f * f[0] + 0.587f * f[1] + 0.114f * f[2],
                          (299 * v8[0] + 587 * v8[1] + 114 * v8[2] + 500) / 1000);
          else
            for (int c = 0; c < 3; ++c) o16[3 * i + c] = to16(f[c], v8[c]);
          continue;
        }
      }
      if (gray)
        o8[i] = static_cast<uint8_t>((299 * v8[0] + 587 * v8[1] + 114 * v8[2] + 500) / 1000);  // BT.601
      else
        for (int c = 0; c < 3; ++c) o8[3 * i + c] = static_cast<uint8_t>(v8[c]);
    }
  }
}

}  // namespace

void render(const SyntheticSpec& spec, const Lattice& lat, PixelFormat fmt, uint8_t* out, size_t stride) {
  SlideModel(spec).render(lat, fmt, out, stride);
}

double tissue_scale(const SyntheticSpec& spec) {
  return SlideModel(spec).tissue_scale();
}

}  // namespace tw::synthetic
