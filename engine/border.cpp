#include "engine/border.hpp"

#include "engine/error.hpp"

namespace tw {

BorderMode parse_border_mode(const std::string& s) {
  if (s == "reflect101" || s == "mirror") return BorderMode::kReflect101;
  if (s == "reflect") return BorderMode::kReflect;
  if (s == "replicate" || s == "nearest") return BorderMode::kReplicate;
  if (s == "constant") return BorderMode::kConstant;
  throw InputError("unknown border mode '" + s + "' (expected reflect101|mirror, reflect, replicate or constant)");
}

const char* border_mode_name(BorderMode m) {
  switch (m) {
    case BorderMode::kReflect101:
      return "reflect101";
    case BorderMode::kReflect:
      return "reflect";
    case BorderMode::kReplicate:
      return "replicate";
    case BorderMode::kConstant:
      return "constant";
  }
  return "?";
}

}  // namespace tw
