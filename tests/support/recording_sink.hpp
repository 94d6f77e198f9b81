#pragma once
// A PyramidSink that records its writes in order, for checking that a
// slide split over ranks writes what a single pass writes, in its order.
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/pyramid_sink.hpp"

namespace tw::test {

// Records writes in order; encodes a tile as its raw pixels (no codec in
// the way of the comparison).
class RecordingSink : public PyramidSink {
 public:
  void encode(int level, const ImageView& t, std::vector<uint8_t>& out) override {
    out.assign(1, static_cast<uint8_t>(level));
    for (int64_t y = t.rect.y; y < t.rect.y1(); ++y)
      out.insert(out.end(), t.row_bytes(y), t.row_bytes(y) + t.row_length_bytes());
  }
  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    writes.emplace_back(level, tx, ty, bytes);
  }
  std::vector<std::tuple<int, int64_t, int64_t, std::vector<uint8_t>>> writes;

 private:
  std::mutex mu_;
};

// The tile order as text, for a readable failure.
inline std::string order_of(const RecordingSink& s, size_t from, size_t n) {
  std::string o;
  for (size_t i = from; i < std::min(s.writes.size(), from + n); ++i)
    o += std::to_string(std::get<0>(s.writes[i])) + ":" + std::to_string(std::get<1>(s.writes[i])) + "," +
         std::to_string(std::get<2>(s.writes[i])) + " ";
  return o;
}

}  // namespace tw::test
