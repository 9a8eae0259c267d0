// Conversions between host tensors and Eigen matrices for the examples' references, and the
// parallel loops that spread a reference over the machine's cores.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>

#include "interp/host_tensor.h"

namespace tessel {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A 2-d tensor's values as a double matrix (its rows converted in parallel, parallel_for).
MatrixD to_matrix(const HostTensor& t);
/// Writes a matrix into a 2-d tensor of the same shape (rounding to its dtype).
void from_matrix(HostTensor& t, const MatrixD& m);

/// Runs body(i) for every i in [0, n), the range cut into one contiguous slice per core
/// (std::thread::hardware_concurrency). Requires: the iterations write disjoint elements of
/// tensors of whole-byte dtypes (no two share a byte) and read nothing another one writes.
void parallel_for(int64_t n, const std::function<void(int64_t)>& body);

/// a * b (a * b^T with transpose_b), the rows of a cut into one slice per core, each slice an
/// Eigen product: every element is the same dot product as in a * b (Eigen may block the k loop
/// differently per slice, so the last bits of a double may differ).
MatrixD parallel_product(const MatrixD& a, const MatrixD& b, bool transpose_b = false);

}  // namespace tessel
