// The rare cases of element_access.h's f16 rounding, out of line so the common case inlines.
#include "interp/element_access.h"

namespace tessel::element_access {

double round_f16_rare(double x) {
  const float f = float_round_to_odd(x);
  if (std::fabs(f) < 0x1p-14f) return std::nearbyint(f * 0x1p24f) * 0x1p-24f;
  return static_cast<float>(Eigen::half(f));
}

}  // namespace tessel::element_access
