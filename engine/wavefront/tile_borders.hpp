#pragma once
// The tile step that both wavefront engines share (wavefront.cpp in one
// process, ranked_wavefront.cpp over ranks): the edges each tile last showed
// its neighbours, a tile's halo assembled from them, and the test of whether
// a changed edge can reach a neighbour at all. The engines keep what differs:
// queuing, and for ranks, messages and termination.
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/image.hpp"
#include "engine/scratch_store.hpp"
#include "engine/wavefront/wavefront.hpp"

namespace tw {

// The overlap of two views; a GPU-sized tile (4096^2 or 8192^2) on all
// threads (one thread took ~15 ms for each copy of an 8192^2 tile).
void copy_tile(const ImageView& src, const ImageView& dst);

// A tile's four edge lines, pixels in edge order left->right / top->bottom.
struct TileEdges {
  std::vector<uint8_t> top, bottom, left, right;
};

// One recording of a tile's edges: the values, and what differs from the
// previous recording (an edge, or one corner pixel: the ends of the top and
// bottom lines, which touch the diagonal neighbours).
struct EdgeRecord {
  TileEdges edges;
  bool top = false, bottom = false, left = false, right = false;
  bool top_left = false, top_right = false, bottom_left = false, bottom_right = false;
  uint64_t seq = 0;  // the tile's publications so far, this one included
};

// A remote tile's edge taken in (TileBorders::take_edge).
struct EdgeTaken {
  bool newer = false;                                 // false: older than the one held, and dropped
  bool changed = false, first = false, last = false;  // the line; its first and last pixel
};

// Per tile: its published edges and the mask on them (fixed), each tile
// behind its own mutex: tiles run in parallel and read their neighbours'.
class TileBorders {
 public:
  enum Side : int { kTop = 0, kBottom = 1, kLeft = 2, kRight = 3 };

  TileBorders(const TileGrid& grid, PixelFormat fmt, int connectivity, const TilePropagator& rule);

  int64_t index(int64_t tx, int64_t ty) const { return ty * grid_.cols() + tx; }
  bool eight() const { return eight_; }

  // Records the mask's edges of tile t (its view over the tile's core).
  void record_mask(int64_t t, const ImageView& mask, const Rect& core);

  // The tile's values with a one-pixel halo in buf (reused between calls):
  // its neighbours' published edges, neutral outside the image.
  ImageView load_with_halo(int64_t tx, int64_t ty, const ImageView& tile, Image& buf);

  // One visit of tile t: the rule runs on its values in j and mask in i
  // against its neighbours' published edges (in buf, load_with_halo); if a
  // pixel changed, the tile is written back and changed(hv, core) called
  // with the new values (hv: the tile with its halo), the tile still pinned.
  template <class F>
  void step(ScratchStore& j, ScratchStore& i, int64_t t, Image& buf, F&& changed) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const Rect core = grid_.tile_rect(tx, ty);
    ScratchStore::Pin jp = j.acquire(tx, ty);
    ScratchStore::Pin ip = i.acquire(tx, ty);
    const ImageView hv = load_with_halo(tx, ty, jp.image().view(), buf);
    if (!rule_.propagate(hv, ip.image().view().sub(core), core)) return;
    copy_tile(hv.sub(core), jp.image().view());
    jp.mark_dirty();
    changed(hv, core);
  }

  // Whether pixels of `mine` (an edge) can change tile nt's edge `side` (its
  // published values and mask): pixel k touches the neighbour's k, and with
  // 8-connectivity k-1 and k+1. `only_mine` >= 0 tests one pixel of mine
  // against one of theirs (diagonal neighbours' corners). An edge not yet
  // published is reached.
  bool reaches(const std::vector<uint8_t>& mine, int64_t nt, Side side, int64_t only_mine = -1,
               int64_t only_theirs = -1);

  // Records tile t's edges from v (the tile's values over core) and says
  // which changed. An initial recording does not count as a publication.
  EdgeRecord record(int64_t t, const ImageView& v, const Rect& core, bool initial);

  // Records one edge (kTop or kBottom) of tile t that another rank
  // published as its publication `seq`, unless an edge as new is held
  // already: messages from different threads carry no order of their own.
  EdgeTaken take_edge(int64_t t, Side side, const std::vector<uint8_t>& edge, uint64_t seq);

 private:
  // A tile's record starts a cache line: a neighbour's lock and edges are
  // read at every visit, and records straddling lines (240 bytes each) made
  // the one-process step measurably slower.
  struct alignas(64) Tile {
    std::mutex mu;
    TileEdges values, mask;
    uint64_t seq = 0;
  };

  static const std::vector<uint8_t>& edge_of(const TileEdges& e, Side side) {
    return side == kTop ? e.top : side == kBottom ? e.bottom : side == kLeft ? e.left : e.right;
  }
  TileEdges lines(const ImageView& v, const Rect& core) const;
  // Copies `count` pixels of tile nt's published edge from `offset` on.
  void halo_from(int64_t nt, Side side, uint8_t* dst, size_t stride, int64_t count, int64_t offset);

  const TilePropagator& rule_;
  TileGrid grid_;
  PixelFormat fmt_;
  size_t bpp_;
  bool eight_;
  std::vector<uint8_t> neutral_;
  std::vector<Tile> tiles_;
};

}  // namespace tw
