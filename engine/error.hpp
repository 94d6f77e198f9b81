#pragma once
// The library's three kinds of failure (STYLE.md §3): the user's input, a CUDA
// call, or a broken internal invariant. Each message is one line.
#include <stdexcept>
#include <string>

namespace tw {

// The user's file, option, or pixel type is unusable. The message names it.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// A CUDA runtime call failed: call text, file:line and CUDA's message.
class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};

// A bug in Tilewave itself (a failed TW_ASSERT).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void throw_internal(const char* expr, const char* file, int line);

}  // namespace tw

#define TW_ASSERT(cond)                                           \
  do {                                                            \
    if (!(cond)) ::tw::throw_internal(#cond, __FILE__, __LINE__); \
  } while (0)
