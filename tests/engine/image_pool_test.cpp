#include "engine/image_pool.hpp"

#include <gtest/gtest.h>

namespace tw {
namespace {

const PixelFormat kRgb{SampleType::kU8, 3};

// An idle buffer goes to a request of about its size, not to one far
// smaller: the pyramid's cascade asks one pool for bands of every level,
// each half the size of the one above, and handing a level-0 buffer to a
// level-1 band made every level-0 band after it a new one.
TEST(ImagePool, IdleBuffersGoToRequestsOfTheirSize) {
  ImagePool pool;
  const Rect band0(0, 0, 4096, 256), band1(0, 0, 2048, 256);
  const uint8_t* big = nullptr;
  {
    auto b = pool.acquire(kRgb, band0);
    big = b->view().data;
  }
  EXPECT_EQ(pool.idle_bytes(), Image::bytes_for(kRgb, band0));
  {
    auto small = pool.acquire(kRgb, band1);  // half the size: a new buffer
    EXPECT_NE(small->view().data, big);
    auto again = pool.acquire(kRgb, band0);  // the idle one
    EXPECT_EQ(again->view().data, big);
  }
  // Both idle now; a request somewhat smaller than a buffer still takes it,
  // the smallest that fits.
  EXPECT_EQ(pool.idle_bytes(), Image::bytes_for(kRgb, band0) + Image::bytes_for(kRgb, band1));
  {
    auto shorter = pool.acquire(kRgb, Rect(0, 0, 4096, 200));  // the last band of a level
    EXPECT_EQ(shorter->view().data, big);
    EXPECT_EQ(shorter->rect(), Rect(0, 0, 4096, 200));
    auto mid = pool.acquire(kRgb, Rect(0, 0, 1600, 256));
    EXPECT_NE(mid->view().data, big);
    EXPECT_EQ(pool.idle_bytes(), 0u);
  }
}

}  // namespace
}  // namespace tw
