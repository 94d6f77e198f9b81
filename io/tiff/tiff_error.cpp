#include "io/tiff/tiff_error.hpp"

#include <tiffio.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace tw {
namespace {

thread_local std::string t_last_error;
thread_local std::string t_warnings;

void on_error(const char* module, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  t_last_error = module ? std::string(module) + ": " + buf : std::string(buf);
}

void on_warning(const char* module, const char* fmt, va_list ap) {
  // Vendor files carry private tags libtiff warns about: never printed, but
  // kept, for the few warnings that mean a damaged file.
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (t_warnings.size() < 65536) t_warnings += (module ? std::string(module) + ": " : std::string()) + buf + "\n";
}

}  // namespace

void install_tiff_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(on_error);
    TIFFSetWarningHandler(on_warning);
  });
}

std::string take_tiff_error() {
  std::string s = t_last_error.empty() ? std::string("unknown libtiff error") : t_last_error;
  t_last_error.clear();
  return s;
}

void clear_tiff_error() {
  t_last_error.clear();
}

std::string take_tiff_warnings() {
  std::string s;
  s.swap(t_warnings);
  return s;
}

}  // namespace tw
