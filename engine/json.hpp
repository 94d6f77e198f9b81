#pragma once
// JSON text through nlohmann-json, for everything the tool prints or writes.
#include <nlohmann/json.hpp>
#include <string>

namespace tw {

// Strings from files (a TIFF's ImageDescription, a path) need not be UTF-8:
// invalid bytes become U+FFFD instead of failing the dump.
inline std::string dump_json(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tw
