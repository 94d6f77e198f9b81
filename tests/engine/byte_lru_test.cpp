// The byte-bounded LRU (engine/byte_lru.hpp) that caches decoded chunks.
#include "engine/byte_lru.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace tw {
namespace {

std::shared_ptr<const int> v(int x) {
  return std::make_shared<const int>(x);
}

TEST(ByteLru, EvictsTheLeastRecentlyUsed) {
  ByteLru<int> c;
  EXPECT_FALSE(c.enabled());
  c.put(1, v(1), 10);
  EXPECT_EQ(c.get(1), nullptr);  // no capacity: nothing is kept
  c.set_capacity(30);
  c.put(1, v(1), 10), c.put(2, v(2), 10), c.put(3, v(3), 10);
  ASSERT_NE(c.get(1), nullptr);  // 1 is now the most recent
  c.put(4, v(4), 10);            // evicts 2
  EXPECT_EQ(c.get(2), nullptr);
  EXPECT_EQ(*c.get(1), 1);
  EXPECT_EQ(*c.get(3), 3);
  EXPECT_EQ(*c.get(4), 4);
  c.put(5, v(5), 31);  // larger than the capacity: not taken, nothing evicted
  EXPECT_EQ(c.get(5), nullptr);
  EXPECT_NE(c.get(1), nullptr);
  c.set_capacity(10);  // shrinking evicts down to the new capacity
  EXPECT_NE(c.get(1), nullptr);
  EXPECT_EQ(c.get(3), nullptr);
}

TEST(ByteLru, PutIfRoomEvictsNothing) {
  ByteLru<int> c;
  c.set_capacity(25);
  EXPECT_TRUE(c.has_room(25));
  c.put_if_room(1, v(1), 10);
  c.put_if_room(2, v(2), 10);
  EXPECT_TRUE(c.has_room(5));
  EXPECT_FALSE(c.has_room(6));
  c.put_if_room(3, v(3), 10);  // no room: not taken
  EXPECT_EQ(c.get(3), nullptr);
  EXPECT_EQ(*c.get(1), 1);
  EXPECT_EQ(*c.get(2), 2);
  c.put_if_room(1, v(9), 1);  // a key already held keeps its value
  EXPECT_EQ(*c.get(1), 1);
  c.put(3, v(3), 10);  // put still evicts (the least recent: 2)
  EXPECT_EQ(c.get(2), nullptr);
  EXPECT_EQ(*c.get(1), 1);
  EXPECT_EQ(*c.get(3), 3);
}

}  // namespace
}  // namespace tw
