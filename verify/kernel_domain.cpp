// The values a kernel's own variables take (see kernel_domain.h).
#include "verify/kernel_domain.h"

#include <limits>

namespace tessel {

VarDomain kernel_domain(const Kernel& kernel) {
  VarDomain d;
  d.bound(kernel->thread_var, 0, kernel->threads - 1);
  for (const Var& v : kernel->dynamic_vars) {
    if (!v.dtype().is_integral()) continue;
    const int bits = v.dtype().bits;
    const int64_t max =
        bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    d.bound(v, 0, max);
  }
  for (size_t k = 0; k < kernel->block_vars.size() && k < kernel->grid.size(); ++k) {
    const Var& b = kernel->block_vars[k];
    std::optional<int64_t> g = as_const_int(kernel->grid[k]);
    if (g && *g >= 1) {
      d.bound(b, 0, *g - 1);
    } else {
      d.assume(b >= make_int(0) && b < kernel->grid[k]);
    }
  }
  return d;
}

}  // namespace tessel
