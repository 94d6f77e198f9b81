#include "engine/geometry.hpp"

namespace tw {

std::string Rect::str() const {
  return std::to_string(w) + "x" + std::to_string(h) + "+" + std::to_string(x) + "+" + std::to_string(y);
}

}  // namespace tw
