#pragma once
// Small string tests shared by the layers (output names, list files).
#include <cctype>
#include <string>

namespace tw {

// Whether s ends with `lower_tail` (given in lower case), ignoring the case
// of s: ".TIF" and ".tif" name the same kind of file.
inline bool ends_with_nocase(const std::string& s, const std::string& lower_tail) {
  if (s.size() < lower_tail.size()) return false;
  for (size_t i = 0; i < lower_tail.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - lower_tail.size() + i])) != lower_tail[i]) return false;
  return true;
}

}  // namespace tw
