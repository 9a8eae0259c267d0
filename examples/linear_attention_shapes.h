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

/// Read-only chunk views of the SSD inputs in `tensors` (those present: x, B, C, dt, dA_cumsum,
/// prev_states), each filled into a caller's matrix (resized only when its shape differs, so a
/// reference reuses one set of matrices per core). Positions past seq_len read as zero (the
/// kernels' copies stop at the tensor's edge).
class SsdTensors {
 public:
  SsdTensors(const SsdShape& shape, const TensorMap& tensors);
  /// x[b, cQ + l, h, :] for l < positions (the chunk's first positions; all by default): a
  /// (positions x headdim) matrix.
  void x_chunk(int64_t b, int64_t c, int64_t h, MatrixD& out, int64_t positions = -1) const;
  /// B[b, cQ + l, g, :] (or C): a (chunk x dstate) matrix.
  void B_chunk(int64_t b, int64_t c, int64_t g, MatrixD& out) const {
    group_chunk(B_, b, c, g, out);
  }
  void C_chunk(int64_t b, int64_t c, int64_t g, MatrixD& out) const {
    group_chunk(C_, b, c, g, out);
  }
  /// C[b, cQ + l, g, :] for the positions l in `rows`: a (|rows| x dstate) matrix.
  void C_rows(int64_t b, int64_t c, int64_t g, const std::vector<int64_t>& rows,
              MatrixD& out) const;
  /// prev_states[b, c, h, :, :]: a (headdim x dstate) matrix.
  void state(int64_t b, int64_t c, int64_t h, MatrixD& out) const;
  /// dA_cumsum[b, h, c, :] and dt[b, h, c, :]: chunk values each.
  void dA_chunk(int64_t b, int64_t c, int64_t h, Eigen::VectorXd& out) const;
  void dt_chunk(int64_t b, int64_t c, int64_t h, Eigen::VectorXd& out) const;

 private:
  /// t[b, cQ + l, g, :] for the positions l in rows[0, n) (0, 1, ... when rows is null).
  void group_rows(const HostTensor* t, int64_t b, int64_t c, int64_t g, const int64_t* rows,
                  int64_t n, MatrixD& out) const;
  void group_chunk(const HostTensor* t, int64_t b, int64_t c, int64_t g, MatrixD& out) const {
    group_rows(t, b, c, g, nullptr, s_.chunk, out);
  }
  const SsdShape& s_;
  const HostTensor *x_, *B_, *C_, *dt_, *dA_, *prev_;  ///< null where `tensors` has none
};

}  // namespace tessel
