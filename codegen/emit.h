// CUDA and HIP source from thread-level IR (what core/passes.h lower_kernel produces). The same
// IR the simulator checked becomes one `extern "C"` kernel: named variables from the IR, a comment
// naming the source location each block of code came from, and the instructions of the intrinsic
// table spelled from the table (inline PTX for NVIDIA, amdgcn builtins for AMD). No CUTLASS, CuTe
// or HIP runtime headers: CUDA includes only cuda_fp16.h/cuda_bf16.h; HIP is device-only code
// that any clang with the AMDGPU backend compiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/instruction_family.h"
#include "core/kernel.h"
#include "core/target.h"

namespace tessel {

/// A TMA tensor map the kernel takes after its other arguments (`const __grid_constant__
/// CUtensorMap`): the host encodes it for `tensor` with box `box` (outermost first), swizzle
/// `swizzle` (bytes: 0, 32, 64, 128), zero fill out of bounds (cuTensorMapEncodeTiled).
struct TensorMapArg {
  std::string name;
  std::string tensor;
  std::vector<int64_t> box;
  int swizzle = 0;
  DataType dtype;  ///< the tensor's element type
};

/// One kernel function of a kernel with several launches, as the host launches it.
struct EmittedLaunch {
  std::string entry;              ///< its symbol (extern "C")
  std::vector<std::string> grid;  ///< blocks along x, y, z (expressions of the sizes), as launched
  std::vector<int> grid_axes;     ///< as EmittedSource::grid_axes, for this launch's grid
  int threads = 0;
  std::vector<int> thread_dims;
  int64_t dynamic_shared_bytes = 0;
  std::vector<TensorMapArg> tensor_maps;  ///< this launch's, passed after the arguments
};

struct EmittedSource {
  Language language = Language::kCuda;
  std::string code;              ///< the whole translation unit
  std::string entry;             ///< the kernel's symbol (extern "C")
  int threads = 0;               ///< threads per block to launch with
  std::vector<int> thread_dims;  ///< the block's shape (x, y, z; 1 to 3 extents)
  /// The hardware axis (0 x, 1 y, 2 z) each of the kernel's block indices runs on: the identity,
  /// except that an extent above 65535 along y or z is launched along x (and x's along its axis).
  /// A host launches grid[d] blocks along axis grid_axes[d].
  std::vector<int> grid_axes;
  /// The blocks to launch along x, y, z (expressions of the sizes): the kernel's grid placed by
  /// grid_axes, as the header comment's "Launch: grid (...)".
  std::vector<std::string> grid;
  int64_t dynamic_shared_bytes = 0;  ///< CUDA: dynamic shared memory to launch with
  /// The kernel's arguments in order: tensors (device pointers), then symbolic dimensions (int).
  std::vector<std::string> arguments;
  /// TMA tensor maps, passed after `arguments`.
  std::vector<TensorMapArg> tensor_maps;
  /// A kernel of several launches (T.Kernel launches with T.alloc_global scratch): its kernel
  /// functions in launch order (every one takes `arguments`: the parameters, then the scratch
  /// tensors, then the symbolic sizes; `entry` and the fields above are the first launch's),
  /// and the scratch tensors the host allocates before the first launch. Empty for one launch.
  std::vector<EmittedLaunch> launches;
  std::vector<std::string> scratch;
};

/// The source of a lowered kernel for `target` (CUDA for sm80/sm90, HIP for gfx90a/gfx942).
/// User error naming the kernel and the construct when the IR has something codegen cannot
/// express (a tile operator left unlowered, a 4-bit tensor).
EmittedSource emit_source(const Kernel& lowered, const Target& target);

}  // namespace tessel
