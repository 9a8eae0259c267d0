// Host tensor <-> Eigen conversions.
#include "examples/reference_math.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "core/error.h"
#include "interp/element_access.h"

namespace tessel {

void read_elements(const HostTensor& t, int64_t flat, int64_t n, double* out) {
  const element_access::ElemKind kind = element_access::elem_kind(t.dtype());
  if (kind == element_access::ElemKind::kF16) {  // the CPU's conversion, same values
    thread_local std::vector<float> floats;
    element_access::f16_values_row(reinterpret_cast<const uint16_t*>(t.data()) + flat, n, out,
                                   floats);
    return;
  }
  for (int64_t k = 0; k < n; ++k) out[k] = element_access::load_elem(kind, t, flat + k);
}

void write_elements(HostTensor& t, int64_t flat, int64_t n, const double* values) {
  const element_access::ElemKind kind = element_access::elem_kind(t.dtype());
  for (int64_t k = 0; k < n; ++k) element_access::store_elem(kind, t, flat + k, values[k]);
}

MatrixD to_matrix(const HostTensor& t) {
  internal_check(t.shape().size() == 2, "to_matrix needs a 2-d tensor");
  MatrixD m(t.shape()[0], t.shape()[1]);
  const int64_t cols = m.cols();
  parallel_for(m.rows(), [&](int64_t r) { read_elements(t, r * cols, cols, m.row(r).data()); });
  return m;
}

void from_matrix(HostTensor& t, const MatrixD& m) {
  internal_check(t.shape().size() == 2 && t.shape()[0] == m.rows() && t.shape()[1] == m.cols(),
                 "from_matrix shape mismatch");
  const int64_t cols = m.cols();
  if (t.dtype().storage_bits() % 8 != 0 || t.dtype().lanes != 1) {  // elements may share a byte
    for (int64_t i = 0; i < t.size(); ++i) t.set(i, m.data()[i]);
    return;
  }
  parallel_for(m.rows(), [&](int64_t r) { write_elements(t, r * cols, cols, m.row(r).data()); });
}

MatrixD parallel_product(const MatrixD& a, const MatrixD& b, bool transpose_b) {
  MatrixD c(a.rows(), transpose_b ? b.rows() : b.cols());
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t slices = std::min<int64_t>(cores, a.rows());
  parallel_for(slices, [&](int64_t s) {
    const int64_t r0 = a.rows() * s / slices, r1 = a.rows() * (s + 1) / slices;
    if (transpose_b) {
      c.middleRows(r0, r1 - r0).noalias() = a.middleRows(r0, r1 - r0) * b.transpose();
    } else {
      c.middleRows(r0, r1 - r0).noalias() = a.middleRows(r0, r1 - r0) * b;
    }
  });
  return c;
}

}  // namespace tessel
