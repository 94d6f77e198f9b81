#include "engine/error.hpp"

namespace tw {

void throw_internal(const char* expr, const char* file, int line) {
  throw InternalError(std::string("internal error: assertion '") + expr + "' failed at " + file + ":" +
                      std::to_string(line));
}

}  // namespace tw
