#pragma once
// A PyramidSink that records its writes in order, for checking that a
// slide split over ranks writes what a single pass writes, in its order.
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/memory_source.hpp"
#include "engine/pyramid_sink.hpp"
#include "engine/ranks/local_ranks.hpp"
#include "jobs/pyramid/pyramid_job.hpp"

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

// The pyramid of img once in a single pass and once split over `ranks`
// ranks in this process (rank 0 writing; `per_rank` adjusts each rank's
// options, e.g. its backend); "" when rank 0 wrote what the pass wrote, in
// its order, else where they part.
inline std::string compare_split(const Image& img, const PyramidJobOptions& opt, int ranks,
                                 const std::function<void(PyramidJobOptions&)>& per_rank = nullptr,
                                 PyramidStats* rank0_stats = nullptr) {
  auto source = [&] {
    Image copy(img.fmt(), img.rect());
    copy_overlap(img.view(), copy.view());
    return MemorySource(std::move(copy));
  };
  RecordingSink single, split;
  {
    MemorySource src = source();
    run_pyramid(src, single, opt);
  }
  std::string stray;
  std::mutex mu;
  run_local_ranks(ranks, [&](Ranks& r) {
    MemorySource src = source();
    RecordingSink encoder_only;
    PyramidJobOptions o = opt;
    o.ranks = &r;
    if (per_rank) per_rank(o);
    const PyramidStats st = run_pyramid(src, r.rank() == 0 ? static_cast<PyramidSink&>(split) : encoder_only, o);
    std::lock_guard<std::mutex> l(mu);
    if (!encoder_only.writes.empty()) stray = "rank " + std::to_string(r.rank()) + " wrote tiles";
    if (r.rank() == 0 && rank0_stats) *rank0_stats = st;
  });
  if (!stray.empty()) return stray;
  if (split.writes.size() != single.writes.size())
    return std::to_string(split.writes.size()) + " writes, not " + std::to_string(single.writes.size());
  for (size_t i = 0; i < single.writes.size(); ++i)
    if (split.writes[i] != single.writes[i])
      return "write " + std::to_string(i) + " differs\n single: " + order_of(single, i, 8) +
             "\n split:  " + order_of(split, i, 8);
  return "";
}

}  // namespace tw::test
