// The one list of the ops: each line names an op folder whose
// `tw::ops::register_<name>(OpRegistry&)` adds its entries to the registry
// (engine/op_registry.hpp). Adding an op is its folder plus one line here.
#include "engine/op_registry.hpp"

#define TW_OP_FOLDERS(X) \
  X(point_ops)           \
  X(gaussian)            \
  X(morphology)          \
  X(sobel)               \
  X(canny)               \
  X(hed)                 \
  X(gamma)               \
  X(channel)             \
  X(convert)             \
  X(math)                \
  X(stats)               \
  X(reconstruct_ops)     \
  X(edt)                 \
  X(label_ops)           \
  X(watershed)           \
  X(overlay)

namespace tw {
namespace ops {
#define TW_DECLARE(name) void register_##name(OpRegistry&);
TW_OP_FOLDERS(TW_DECLARE)
#undef TW_DECLARE
}  // namespace ops

void register_all_ops(OpRegistry& r) {
#define TW_REGISTER(name) ops::register_##name(r);
  TW_OP_FOLDERS(TW_REGISTER)
#undef TW_REGISTER
}

}  // namespace tw
