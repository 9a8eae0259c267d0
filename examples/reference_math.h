// Conversions between host tensors and Eigen matrices for the examples' references, and the
// parallel product that spreads a reference over the machine's cores (core/on_cores.h has the
// loop).
#pragma once

#include <Eigen/Dense>
#include <cstdint>

#include "core/on_cores.h"
#include "interp/host_tensor.h"

namespace tessel {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Reads `n` consecutive elements of `t` from flat index `flat` into `out` (HostTensor::at's
/// values; f16 rows by the CPU's conversion, f32 without its per-element dtype switch).
void read_elements(const HostTensor& t, int64_t flat, int64_t n, double* out);
/// Writes `n` values into consecutive elements of `t` from `flat` (HostTensor::set's rounding).
void write_elements(HostTensor& t, int64_t flat, int64_t n, const double* values);

/// A 2-d tensor's values as a double matrix (its rows converted in parallel, parallel_for).
MatrixD to_matrix(const HostTensor& t);
/// Writes a matrix into a 2-d tensor of the same shape (rounding to its dtype).
void from_matrix(HostTensor& t, const MatrixD& m);

/// a * b (a * b^T with transpose_b), the rows of a cut into one slice per core, each slice an
/// Eigen product: every element is the same dot product as in a * b (Eigen may block the k loop
/// differently per slice, so the last bits of a double may differ).
MatrixD parallel_product(const MatrixD& a, const MatrixD& b, bool transpose_b = false);

}  // namespace tessel
