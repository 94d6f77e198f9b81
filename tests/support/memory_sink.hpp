#pragma once
// A PyramidSink that keeps every tile as raw pixels, for checking the job's
// output without any codec in the way.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "jobs/pyramid/pyramid_job.hpp"

namespace tw::test {

class MemorySink : public PyramidSink {
 public:
  MemorySink(PixelFormat fmt, int64_t tile) : fmt_(fmt), tile_(tile) {}
  void encode(int, const ImageView& t, std::vector<uint8_t>& out) override {
    EXPECT_EQ(t.rect.w, tile_);
    EXPECT_EQ(t.rect.h, tile_);
    out.clear();
    for (int64_t y = t.rect.y; y < t.rect.y1(); ++y)
      out.insert(out.end(), t.row_bytes(y), t.row_bytes(y) + t.row_length_bytes());
  }
  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    EXPECT_TRUE(tiles_.emplace(std::make_tuple(level, tx, ty), bytes).second)
        << "tile " << tx << "," << ty << " of level " << level << " written twice";
  }
  Image assemble(int level, int64_t w, int64_t h) const {
    Image img(fmt_, Rect(0, 0, w, h));
    const size_t bpp = fmt_.bytes_per_pixel();
    for (int64_t ty = 0; ty * tile_ < h; ++ty)
      for (int64_t tx = 0; tx * tile_ < w; ++tx) {
        auto it = tiles_.find(std::make_tuple(level, tx, ty));
        if (it == tiles_.end()) {
          ADD_FAILURE() << "missing tile " << tx << "," << ty << " of level " << level;
          continue;
        }
        for (int64_t y = 0; y < tile_ && ty * tile_ + y < h; ++y) {
          const int64_t n = std::min(tile_, w - tx * tile_);
          std::memcpy(img.ptr_bytes(tx * tile_, ty * tile_ + y), it->second.data() + y * tile_ * bpp, n * bpp);
        }
      }
    return img;
  }
  size_t tile_count() const { return tiles_.size(); }
  const std::map<std::tuple<int, int64_t, int64_t>, std::vector<uint8_t>>& tiles() const { return tiles_; }

 private:
  PixelFormat fmt_;
  int64_t tile_;
  std::mutex mu_;
  std::map<std::tuple<int, int64_t, int64_t>, std::vector<uint8_t>> tiles_;
};

}  // namespace tw::test
