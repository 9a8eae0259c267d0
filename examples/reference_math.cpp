// Host tensor <-> Eigen conversions.
#include "examples/reference_math.h"

#include "core/error.h"

namespace tessel {

MatrixD to_matrix(const HostTensor& t) {
  internal_check(t.shape().size() == 2, "to_matrix needs a 2-d tensor");
  MatrixD m(t.shape()[0], t.shape()[1]);
  for (int64_t i = 0; i < t.size(); ++i) m.data()[i] = t.at(i);
  return m;
}

void from_matrix(HostTensor& t, const MatrixD& m) {
  internal_check(t.shape().size() == 2 && t.shape()[0] == m.rows() && t.shape()[1] == m.cols(),
                 "from_matrix shape mismatch");
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, m.data()[i]);
}

}  // namespace tessel
