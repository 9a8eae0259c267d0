// The tile-level reference interpreter: runs a kernel on host tensors with every tile operator's
// reference semantics. Blocks are spread over the CPU's cores.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/int_eval.h"
#include "core/kernel.h"
#include "interp/host_tensor.h"
#include "interp/run_control.h"

namespace tessel {

/// The kernel's tensors by parameter name.
using TensorMap = std::map<std::string, HostTensor>;

struct TileRunOptions {
  int workers = 0;                ///< CPU threads running blocks; 0 = all cores
  RunControl* control = nullptr;  ///< step and time limits, progress counters (optional)
  /// Only these linear block ids (x + gx * (y + gy * z)), in this order; every block when null.
  const std::vector<int64_t>* only_blocks = nullptr;
  /// T.Parallel nests run compiled (interp/tile_parallel.h); false: through the generic
  /// evaluator only (the tests compare the two).
  bool compiled_parallel = true;
};

struct TileRunStats {
  int64_t blocks = 0;  ///< blocks of the grid (run or not)
  int64_t ran = 0;     ///< blocks run
  double seconds = 0;
};

/// Runs every block of `kernel` on `tensors` (updated in place). Symbolic dimensions are bound
/// from the tensors' shapes. Thread-level code (statements outside tile operators) runs for
/// every thread in lock-step, so barriers and warp shuffles behave as on the GPU.
/// User error when a tensor is missing or its shape or dtype disagrees with the signature, and
/// for any error a block meets (out-of-bounds access, a barrier not reached by all threads...):
/// the error of the first failing block in block order, whatever the number of workers.
/// RunStopped when the run goes past the limits of `options.control`.
TileRunStats run_tile_level(const Kernel& kernel, TensorMap& tensors, TileRunOptions options = {});

/// For a kernel of several launches: adds to `tensors` one tensor per T.alloc_global scratch
/// buffer of `kernel` (shaped from the parameters' shapes, every byte 0xFF — NaN for floats — as
/// uninitialised device memory would be) and returns their names, for remove_scratch_tensors.
/// User error when a parameter's tensor does not fit the signature or a scratch name is taken.
std::vector<std::string> add_scratch_tensors(const Kernel& kernel, TensorMap& tensors);

/// Erases the tensors add_scratch_tensors added (the host frees the scratch after the last launch).
void remove_scratch_tensors(const std::vector<std::string>& names, TensorMap& tensors);

/// Binds the kernel's symbolic dimensions from the tensors' shapes, checking every parameter's
/// dtype and shape against the signature (user error naming the tensor otherwise).
IntEnv bind_tensors(const Kernel& kernel, const TensorMap& tensors);

/// The concrete shape each parameter has once `dims` fixes the symbolic dimensions (by name).
/// User error naming the dimension when one is not given.
std::map<std::string, std::vector<int64_t>> param_shapes(
    const Kernel& kernel, const std::map<std::string, int64_t>& dims);

}  // namespace tessel
