// Conversions between host tensors and Eigen matrices for the examples' references.
#pragma once

#include <Eigen/Dense>

#include "interp/host_tensor.h"

namespace tessel {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A 2-d tensor's values as a double matrix.
MatrixD to_matrix(const HostTensor& t);
/// Writes a matrix into a 2-d tensor of the same shape (rounding to its dtype).
void from_matrix(HostTensor& t, const MatrixD& m);

}  // namespace tessel
