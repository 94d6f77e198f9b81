#pragma once
// Warnings from the library (an associated image left out, the GPU not
// taking part) are collected, not printed: the front end decides. The CLI
// prints them when a command succeeds, and only its one-line error when it
// fails, so a failed run's stderr stays one line.
#include <string>
#include <vector>

namespace tw {

void warn(const std::string& message);  // thread-safe; one line, without "warning:"
std::vector<std::string> take_warnings();

}  // namespace tw
