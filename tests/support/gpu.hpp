#pragma once
// GPU tests skip (and CTest reports them skipped, not passed) where no CUDA
// device can be used.
#include <gtest/gtest.h>

#include "engine/cuda/device.hpp"

#define TW_REQUIRE_GPU()                                                     \
  do {                                                                       \
    if (::tw::cuda_devices().empty()) {                                      \
      GTEST_SKIP() << "no CUDA device: " << ::tw::cuda_unavailable_reason(); \
    }                                                                        \
  } while (0)
