#include "jobs/features/trace.hpp"

#include <unordered_map>

#include "engine/error.hpp"

namespace tw::features {
namespace {

// Directions: 0 east (+x), 1 south (+y), 2 west, 3 north. A right turn (the
// object's side, y down) is d + 1.
constexpr int kDx[4] = {1, 0, -1, 0};
constexpr int kDy[4] = {0, 1, 0, -1};

// The next direction at a vertex with outgoing edges `bits`, arriving along
// d: the right turn first, so diagonal neighbours stay apart.
int next_direction(int d, unsigned bits) {
  for (int t : {1, 0, 3}) {
    const int nd = (d + t) & 3;
    if (bits & (1u << nd)) return nd;
  }
  throw InternalError("features: a boundary ring does not close");
}

// Cuts a closed walk that passes a corner more than once into simple rings.
void split_simple(const Ring& walk, std::vector<Ring>& out) {
  Ring stack;
  std::unordered_map<int64_t, size_t> at;
  auto key = [](const Corner& c) { return (c.second << 32) ^ c.first; };
  for (const Corner& p : walk) {
    auto it = at.find(key(p));
    if (it == at.end()) {
      at.emplace(key(p), stack.size());
      stack.push_back(p);
      continue;
    }
    const size_t i = it->second;
    out.emplace_back(stack.begin() + static_cast<std::ptrdiff_t>(i), stack.end());
    for (size_t j = i + 1; j < stack.size(); ++j) at.erase(key(stack[j]));
    stack.resize(i + 1);
  }
  if (!stack.empty()) out.push_back(std::move(stack));
}

// Whether the doubled-coordinate point (px, py) (odd: a pixel centre) lies
// inside ring r (axis-aligned edges): crossings of the ray to +x.
bool contains(const Ring& r, int64_t px, int64_t py) {
  bool in = false;
  for (size_t i = 0; i < r.size(); ++i) {
    const Corner& a = r[i];
    const Corner& b = r[(i + 1) % r.size()];
    if (a.first != b.first) continue;
    if (((2 * a.second > py) != (2 * b.second > py)) && 2 * a.first > px) in = !in;
  }
  return in;
}

}  // namespace

int64_t twice_area(const Ring& r) {
  int64_t s = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const Corner& a = r[i];
    const Corner& b = r[(i + 1) % r.size()];
    s += a.first * b.second - b.first * a.second;
  }
  return s;
}

std::vector<Polygon> trace_polygons(const uint8_t* mask, int64_t w, int64_t h, int64_t ox, int64_t oy) {
  const int64_t vw = w + 1;
  auto in = [&](int64_t x, int64_t y) { return x >= 0 && y >= 0 && x < w && y < h && mask[y * w + x] != 0; };
  // Outgoing boundary edges per vertex, one bit per direction.
  std::vector<uint8_t> out(static_cast<size_t>(vw * (h + 1)), 0);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      if (!in(x, y)) continue;
      if (!in(x, y - 1)) out[y * vw + x] |= 1u << 0;            // top: east
      if (!in(x + 1, y)) out[y * vw + x + 1] |= 1u << 1;        // right: south
      if (!in(x, y + 1)) out[(y + 1) * vw + x + 1] |= 1u << 2;  // bottom: west
      if (!in(x - 1, y)) out[(y + 1) * vw + x] |= 1u << 3;      // left: north
    }
  std::vector<Ring> rings;
  for (int64_t sy = 0; sy <= h; ++sy)
    for (int64_t sx = 0; sx < vw; ++sx)
      while (out[sy * vw + sx] != 0) {
        const unsigned b0 = out[sy * vw + sx];
        const int d0 = (b0 & 1) ? 0 : (b0 & 2) ? 1 : (b0 & 4) ? 2 : 3;
        Ring walk;
        int64_t x = sx, y = sy;
        int d = d0;
        // A walk can pass a corner twice only where two boundary edges leave
        // it (pixels meeting at a corner); without one it is a simple ring.
        bool pinch = (b0 & (b0 - 1)) != 0;
        for (;;) {
          out[y * vw + x] &= static_cast<uint8_t>(~(1u << d));
          x += kDx[d], y += kDy[d];
          const unsigned here = out[y * vw + x];
          pinch |= (here & (here - 1)) != 0;
          const bool at_start = x == sx && y == sy;
          const unsigned bits = here | (at_start ? 1u << d0 : 0u);
          const int nd = next_direction(d, bits);
          if (nd != d) walk.emplace_back(x, y);
          if (at_start && nd == d0) break;
          d = nd;
        }
        if (pinch)
          split_simple(walk, rings);
        else
          rings.push_back(std::move(walk));
      }
  // Outer rings in the order found, then each hole to the innermost outer
  // ring holding a pixel inside it (the one left of its first edge).
  std::vector<Polygon> polys;
  std::vector<int64_t> areas;
  for (const Ring& r : rings)
    if (twice_area(r) > 0) polys.push_back({r, {}}), areas.push_back(twice_area(r));
  for (Ring& r : rings) {
    if (twice_area(r) > 0) continue;
    size_t best = 0;
    if (polys.size() > 1) {
      const Corner a = r[0], b = r[1];
      const int d = b.first > a.first ? 0 : b.second > a.second ? 1 : b.first < a.first ? 2 : 3;
      // The pixel on the left of the edge leaving a (the hole's inside).
      static constexpr int kLx[4] = {0, 0, -1, -1}, kLy[4] = {-1, 0, 0, -1};
      const int64_t px = 2 * (a.first + kLx[d]) + 1, py = 2 * (a.second + kLy[d]) + 1;
      bool found = false;
      for (size_t i = 0; i < polys.size(); ++i)
        if (contains(polys[i].shell, px, py) && (!found || areas[i] < areas[best])) best = i, found = true;
      TW_ASSERT(found);
    }
    polys[best].holes.push_back(std::move(r));
  }
  for (Polygon& p : polys) {
    for (Corner& c : p.shell) c.first += ox, c.second += oy;
    for (Ring& hole : p.holes)
      for (Corner& c : hole) c.first += ox, c.second += oy;
  }
  return polys;
}

}  // namespace tw::features
