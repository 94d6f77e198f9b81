// SideTask (engine/side_task.hpp): the work runs beside the caller, finish()
// waits for it and rethrows what it threw, and a task the caller leaves
// (an exception unwinding it) is waited for before it goes.
#include "engine/side_task.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace tw {
namespace {

TEST(SideTask, RunsBesideAndFinishWaits) {
  std::atomic<bool> done{false};
  SideTask t;
  t.start([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  });
  t.finish();
  EXPECT_TRUE(done.load());
  t.finish();  // again: nothing to wait for, nothing to rethrow
}

TEST(SideTask, FinishRethrowsWhatItThrew) {
  SideTask t;
  t.start([] { throw std::runtime_error("side failed"); });
  try {
    t.finish();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "side failed");
  }
}

TEST(SideTask, LeftByAnExceptionItIsWaitedFor) {
  std::atomic<int> writes{0};
  try {
    SideTask t;
    t.start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ++writes;
    });
    throw std::runtime_error("the caller's");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(writes.load(), 1) << "the task finished before it went";
}

TEST(SideTask, NeverStartedIsHarmless) {
  SideTask t;
  t.finish();
}

}  // namespace
}  // namespace tw
