// Shapes and host-tensor access shared by the Mamba-2 SSD examples (chunk_state, chunk_scan):
// the parameters batch, nheads, ngroups, seq_len, chunk_size, headdim, dstate and the chunk-wise
// views of x, B, C, dt and dA_cumsum that their double-precision references read.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "examples/reference_math.h"
#include "examples/registry.h"

namespace tessel {

/// The problem size of an SSD kernel, read from its parameters.
struct SsdShape {
  int64_t batch, nheads, ngroups, seq_len, chunk, headdim, dstate, nchunks;
  /// Heads sharing one group of B and C.
  int64_t heads_per_group() const { return nheads / ngroups; }
  /// Reads the shape parameters of `kernel`. ParamError (a usage error) when nheads is not a
  /// multiple of ngroups.
  static SsdShape from(const Params& p, const std::string& kernel);
};

/// The shape parameters with their defaults (small: a thread-level run takes seconds), followed
/// by `blocks` (the kernel's tile sizes).
std::vector<ParamSpec> ssd_params(std::vector<ParamSpec> blocks);

/// Read-only chunk views of the SSD inputs in `tensors` (those present: x, B, C, dt, dA_cumsum).
/// Positions past seq_len read as zero (the kernels' copies stop at the tensor's edge).
class SsdTensors {
 public:
  SsdTensors(const SsdShape& shape, const TensorMap& tensors);
  /// x[b, cQ + l, h, :] for l < Q: a (chunk x headdim) matrix.
  MatrixD x_chunk(int64_t b, int64_t c, int64_t h) const;
  /// B[b, cQ + l, g, :] (or C): a (chunk x dstate) matrix.
  MatrixD B_chunk(int64_t b, int64_t c, int64_t g) const { return group_chunk("B", b, c, g); }
  MatrixD C_chunk(int64_t b, int64_t c, int64_t g) const { return group_chunk("C", b, c, g); }
  /// dA_cumsum[b, h, c, :].
  Eigen::VectorXd dA_chunk(int64_t b, int64_t c, int64_t h) const;
  double dt_at(int64_t b, int64_t c, int64_t h, int64_t l) const;

 private:
  MatrixD group_chunk(const std::string& name, int64_t b, int64_t c, int64_t g) const;
  const SsdShape& s_;
  const TensorMap& t_;
};

}  // namespace tessel
