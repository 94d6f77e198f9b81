#pragma once
// The library's three kinds of failure (STYLE.md §3): the user's input, a CUDA
// call, or a broken internal invariant. Each message is one line.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace tw {

// The user's file, option, or pixel type is unusable. The message names it.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// A memory budget too small for the work: what it needs and what it had,
// so that a caller that gave the work only part of the user's --memory can
// say how much more to give, in the user's terms.
class BudgetTooSmall : public InputError {
 public:
  BudgetTooSmall(const std::string& what, size_t needed, size_t had) : InputError(what), needed(needed), had(had) {}
  size_t needed, had;
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
