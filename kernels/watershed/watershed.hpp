#pragma once
// Marker-controlled watershed as a shortest-path forest (the image foresting
// transform, Falcao, Stolfi & Lotufo 2004, with a lexicographic path cost;
// docs/ops/watershed.md). A pixel's cost is (m, d): m the highest altitude
// on its path from a seed, d the steps since the path last climbed. A path
// ending at cost (m, d) extends to a neighbour q as
//   f(q) > m ? (f(q), 0) : (m, d + 1).
// Each pixel takes the cheapest (m, d) its neighbours offer and, of equal
// offers, the label of the neighbour that is itself cheapest by (m, d,
// label) — the one a flood by increasing cost reaches first, as Meyer's
// flooding (and skimage's) labels a pixel from the first neighbour popped.
// Seeds keep (f(s), 0, their label). Every extension is strictly dearer than
// what it extends, so the fixed point is unique: any tile order, tile size,
// budget or backend gives the same labels.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/image.hpp"
#include "engine/ops/hd.hpp"
#include "engine/wavefront/wavefront.hpp"

namespace tw {

// The working raster J of the wavefront, one pixel: the path cost and the
// label it brings (i32/u32 x3 in the scratch store).
struct WsCost {
  uint32_t m, d, label;
};
// The fixed raster I, one pixel: the altitude as an order-preserving key,
// the seed's label (0: not a seed) and whether the pixel is inside the mask.
// Same size as WsCost because the wavefront engine keeps both rasters in
// one pixel format.
struct WsInput {
  uint32_t key, seed, inside;
};
static_assert(sizeof(WsCost) == 12 && sizeof(WsInput) == 12, "packed as three 32-bit samples");

// Never reached (also the neutral value outside the image): no altitude
// key is all ones (a float's key is at most +inf's, 0xFF800000).
constexpr uint32_t kWsUnreached = 0xFFFFFFFFu;
constexpr WsCost kWsNeutral{kWsUnreached, kWsUnreached, 0};
// Of two neighbours offering the same cost, the one whose own (m, d, label)
// is smaller gives its label.
TW_HD bool ws_before(const WsCost& a, const WsCost& b) {
  if (a.m != b.m) return a.m < b.m;
  if (a.d != b.d) return a.d < b.d;
  return a.label < b.label;
}

// The largest tile side the CPU flood takes: a queued pixel's column and
// row in the tile grown by its halo (0 .. side + 1) fit 16 bits each.
constexpr int64_t kWsTileMax = 65534;

// The raster format of both J and I.
constexpr PixelFormat kWsFormat{SampleType::kU32, 3};

// Altitude keys whose unsigned order is the samples' order. Floats: the
// usual sign-flip of the bits, with -0 taken as +0 (they compare equal);
// NaN has no place in the order, and callers refuse it.
inline uint32_t ws_key(uint8_t v) {
  return v;
}
inline uint32_t ws_key(uint16_t v) {
  return v;
}
inline uint32_t ws_key(float v) {
  if (v == 0.0f) v = 0.0f;
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The cost a path ending at `from` brings to a pixel of altitude key k.
TW_HD WsCost ws_extend(const WsCost& from, uint32_t k) {
  return k > from.m ? WsCost{k, 0, from.label} : WsCost{from.m, from.d + 1, from.label};
}
// Whether a path of cost a is cheaper than one of cost b, labels aside.
TW_HD bool ws_cheaper(const WsCost& a, const WsCost& b) {
  return a.m != b.m ? a.m < b.m : a.d < b.d;
}

// Floods one tile from scratch with the halo held fixed: a Dijkstra on
// (m, d, label) from the tile's seeds and from its halo. j: WsCost over core
// grown by one (the halo: neighbours' values, kWsNeutral outside the image);
// i: WsInput over the core. Returns whether a core pixel changed.
//
// From scratch, not from the changed halo pixels alone: a label is not
// monotone in the cost. Two paths that both climb into q reach it at the
// same (f(q), 0), so when a neighbour's cost falls its label can change to a
// larger one and q's label must rise with it; an incremental flood that only
// lowers values would keep the stale smaller label. The (m, d) part only
// falls, so the wavefront still converges.
bool watershed_flood_tile(const ImageView& j, const ImageView& i, const Rect& core, int connectivity);

// The same flood restricted to `region`: core pixel indices (y * w + x),
// marked non-zero in `in_region` (w * h bytes). The region must be a union
// of whole connected parts of the tile's mask (as 4- or 8-connected as the
// flood): then no path leaves it inside the tile, and flooding it alone
// from its seeds and the halo gives exactly what the whole tile's flood
// gives it. Only the region's pixels of j and i are read or written (and
// the halo ring of j, read). in_region may be null when the region is every
// pixel of i inside the mask (and all of i is set).
void watershed_flood_region(const ImageView& j, const ImageView& i, const Rect& core, int connectivity,
                            const std::vector<uint32_t>& region, const uint8_t* in_region);

// The tile rule for the wavefront engine (engine/wavefront/wavefront.hpp).
std::unique_ptr<TilePropagator> make_watershed_rule(int connectivity);

}  // namespace tw
