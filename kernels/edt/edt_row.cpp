#include "kernels/edt/edt_row.hpp"

#include "kernels/edt/edt.hpp"

namespace tw {

void edt_row(const int64_t* g2, int64_t n, int64_t, int64_t* out, int64_t* s, int64_t* t) {
  edt::row_pass_runs<int64_t>(g2, n, out, s, t);
}

}  // namespace tw
