#pragma once
// OpenSlide is a library we call, so guarding it is ours: it aborts the
// process (GLib's g_malloc) when a file's header makes it ask for more memory
// than there is (a TileByteCount of 67 TB, tiles of 2^31 pixels), and it
// reads any sample type as 8-bit RGBA. Before a file reaches it:
//  1. a TIFF-based file's directories are checked with libtiff (offsets and
//     byte counts inside the file, tile sizes, 8-bit samples only), and
//  2. OpenSlide itself opens the file and reads a pixel of every level in a
//     child process first: a crash or a hang there costs the child, not us.
#include <string>

namespace tw {

// Why OpenSlide must not be given this TIFF (empty: nothing found). Only
// the structure is read, never pixels; safe on any bytes.
std::string tiff_problem_for_openslide(const std::string& path);

// Throws InputError (one line naming the file) when the file fails either
// check above. timeout_s bounds the child's work.
void check_before_openslide(const std::string& path, double timeout_s = 60);

}  // namespace tw
