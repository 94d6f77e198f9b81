#pragma once
// A TileSource computed pixel by pixel from other sources of the same size
// (pixel -> pixel ops: h-dome markers, differences, thresholds, ...). Each
// read reads the inputs over the same rect and maps them row by row.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tile_source.hpp"

namespace tw {

class MapSource : public TileSource {
 public:
  // in[k] points at row y of input k (at column x0); out at row y of the result.
  using RowFn =
      std::function<void(const std::vector<const uint8_t*>& in, uint8_t* out, int64_t x0, int64_t y, int64_t n)>;
  // Inputs must outlive this source; all have level 0 of the same size.
  MapSource(std::vector<const TileSource*> inputs, PixelFormat out_fmt, RowFn fn, std::string name);

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  void compute(const ImageView& dst) const;  // one piece of a read
  std::vector<const TileSource*> inputs_;
  RowFn fn_;
};

// A MapSource that keeps its inputs alive (a result outlives the caller's
// handles on them: in a pipeline, in a result handed to the writer).
class OwningMapSource : public MapSource {
 public:
  OwningMapSource(std::vector<std::shared_ptr<const TileSource>> in, PixelFormat fmt, RowFn fn, std::string name)
      : MapSource(raw(in), fmt, std::move(fn), std::move(name)), keep_(std::move(in)) {}

 private:
  static std::vector<const TileSource*> raw(const std::vector<std::shared_ptr<const TileSource>>& v) {
    std::vector<const TileSource*> r;
    for (const auto& s : v) r.push_back(s.get());
    return r;
  }
  std::vector<std::shared_ptr<const TileSource>> keep_;
};

}  // namespace tw
