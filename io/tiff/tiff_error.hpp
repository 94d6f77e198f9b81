#pragma once
// libtiff reports through global callbacks; we keep the last message per
// thread (each TIFF handle is used by one thread at a time) so a failed call
// can be turned into a one-line InputError naming the file.
#include <string>

namespace tw {

void install_tiff_handlers();   // idempotent
std::string take_tiff_error();  // last error on this thread, then cleared
void clear_tiff_error();
std::string take_tiff_warnings();  // warnings on this thread since the last call, one a line

}  // namespace tw
