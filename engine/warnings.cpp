#include "engine/warnings.hpp"

#include <mutex>

namespace tw {
namespace {

// Never destroyed: a thread of a job still running while exit() runs may warn.
std::mutex g_mu;
std::vector<std::string>& g_warnings = *new std::vector<std::string>;

}  // namespace

void warn(const std::string& message) {
  std::lock_guard<std::mutex> l(g_mu);
  // The same warning from every band or thread is said once.
  for (const auto& w : g_warnings)
    if (w == message) return;
  if (g_warnings.size() < 100) g_warnings.push_back(message);
}

std::vector<std::string> take_warnings() {
  std::lock_guard<std::mutex> l(g_mu);
  std::vector<std::string> out;
  out.swap(g_warnings);
  return out;
}

}  // namespace tw
