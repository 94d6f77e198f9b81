#pragma once
// The engine's exceptions as Python's (engine/error.hpp): a bad parameter is
// a ValueError, a file that cannot be opened an OSError (FileNotFoundError
// when it is missing), a CUDA failure a RuntimeError, an interrupted job
// KeyboardInterrupt. Messages are the CLI's one line, without its
// "tilewave: error: " prefix.
#include <string>

#include "engine/tile_source.hpp"

namespace tw::python {

// open_source(spec) with the errors of opening a file as OSError /
// FileNotFoundError rather than ValueError.
SourcePtr open_for_python(const std::string& spec);

// ValueError naming `what` for text with a NUL byte: C++ would read it only
// up to the NUL (a path "a.tif\0junk" would open a.tif), where Python's own
// open() refuses it.
void require_text(const std::string& s, const std::string& what);

// The engine's warnings (engine/warnings.hpp) since the last call, as Python
// UserWarnings (the GIL held).
void warn_in_python();

}  // namespace tw::python
