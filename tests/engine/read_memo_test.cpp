// engine/read_memo: a thread's last read served again as a copy, and the
// per-channel split reading its input once per region instead of once per
// channel.
#include "engine/read_memo.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "engine/channel_split.hpp"
#include "engine/map_source.hpp"
#include "engine/memory_source.hpp"

namespace tw {
namespace {

// An image whose reads are counted (and can be made to fail).
class CountingSource final : public TileSource {
 public:
  CountingSource(int channels, int64_t w, int64_t h) : img_(PixelFormat{SampleType::kU16, channels}, Rect(0, 0, w, h)) {
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int c = 0; c < channels; ++c)
          img_.view().ptr<uint16_t>(x, y)[c] = static_cast<uint16_t>((x * 7 + y * 13 + c * 1000) & 0xFFFF);
    info_.fmt = img_.fmt();
    info_.path = "counting";
    LevelInfo l;
    l.width = w, l.height = h, l.tile_w = l.tile_h = 64;
    info_.levels = {l};
  }
  mutable std::atomic<int> reads{0};
  mutable std::atomic<bool> fail{false};
  const Image& image() const { return img_; }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    ++reads;
    if (fail) throw std::runtime_error("damaged");
    const size_t row = static_cast<size_t>(dst.rect.w) * img_.fmt().bytes_per_pixel();
    for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y)
      std::memcpy(dst.row_bytes(y), img_.view().ptr_bytes(dst.rect.x, y), row);
  }

 private:
  Image img_;
};

bool same_pixels(const Image& a, const Image& b) {
  if (!(a.rect() == b.rect()) || !(a.fmt() == b.fmt())) return false;
  const size_t row = static_cast<size_t>(a.rect().w) * a.fmt().bytes_per_pixel();
  for (int64_t y = a.rect().y; y < a.rect().y1(); ++y)
    if (std::memcmp(a.view().row_bytes(y), b.view().row_bytes(y), row) != 0) return false;
  return true;
}

TEST(ReadMemo, TheSameRegionAgainIsACopy) {
  auto src = std::make_shared<CountingSource>(3, 300, 200);
  auto memo = memoize_last_read(src);
  const Rect r(10, 20, 130, 70);
  const Image a = memo->read(0, r);
  const Image b = memo->read(0, r);
  EXPECT_EQ(src->reads.load(), 1);
  EXPECT_TRUE(same_pixels(a, b));
  EXPECT_TRUE(same_pixels(a, src->read(0, r)));
  // Another region, then the first again: one entry only, both read anew.
  memo->read(0, Rect(0, 0, 50, 50));
  memo->read(0, r);
  EXPECT_EQ(src->reads.load(), 1 + 1 + 2);
}

TEST(ReadMemo, MemosAndThreadsDoNotShareEntries) {
  auto src = std::make_shared<CountingSource>(1, 128, 128);
  auto m1 = memoize_last_read(src), m2 = memoize_last_read(src);
  const Rect r(0, 0, 64, 64);
  m1->read(0, r);
  m2->read(0, r);
  EXPECT_EQ(src->reads.load(), 2) << "a memo never serves another's read";
  std::thread([&] { m1->read(0, r); }).join();
  EXPECT_EQ(src->reads.load(), 3) << "each thread keeps its own";
  // A memo destroyed and another made (perhaps at the same address) starts empty.
  m1.reset();
  auto m3 = memoize_last_read(src);
  m3->read(0, r);
  EXPECT_EQ(src->reads.load(), 4);
}

TEST(ReadMemo, AFailedReadLeavesNothingBehind) {
  auto src = std::make_shared<CountingSource>(1, 64, 64);
  auto memo = memoize_last_read(src);
  const Rect r(0, 0, 32, 32);
  memo->read(0, r);
  src->fail = true;
  EXPECT_THROW(memo->read(0, Rect(1, 1, 8, 8)), std::runtime_error);
  src->fail = false;
  const Image again = memo->read(0, Rect(1, 1, 8, 8));
  EXPECT_TRUE(same_pixels(again, src->read(0, Rect(1, 1, 8, 8))));
}

TEST(ReadMemo, PerChannelReadsItsInputOncePerRegion) {
  // Eight channels through a per-channel map (a stand-in for an op defined
  // per channel): the input is read once per region, not once per channel,
  // and the result is each channel's own.
  auto src = std::make_shared<CountingSource>(8, 96, 80);
  auto plus_one = [](const std::shared_ptr<const TileSource>& one) -> std::shared_ptr<const TileSource> {
    return std::make_shared<OwningMapSource>(
        std::vector<std::shared_ptr<const TileSource>>{one}, one->info().fmt,
        [](const std::vector<const uint8_t*>& in, uint8_t* out, int64_t, int64_t, int64_t n) {
          const auto* p = reinterpret_cast<const uint16_t*>(in[0]);
          auto* q = reinterpret_cast<uint16_t*>(out);
          for (int64_t x = 0; x < n; ++x) q[x] = static_cast<uint16_t>(p[x] + 1);
        },
        "plus one");
  };
  auto out = per_channel(src, plus_one, "plus one");
  const Image img = out->read(0, Rect(0, 0, 96, 80));
  EXPECT_EQ(src->reads.load(), 1);
  for (int64_t y = 0; y < 80; ++y)
    for (int64_t x = 0; x < 96; ++x)
      for (int c = 0; c < 8; ++c)
        ASSERT_EQ(img.view().ptr<uint16_t>(x, y)[c],
                  static_cast<uint16_t>(src->image().view().ptr<uint16_t>(x, y)[c] + 1))
            << "at (" << x << ", " << y << ") channel " << c;
}

}  // namespace
}  // namespace tw
