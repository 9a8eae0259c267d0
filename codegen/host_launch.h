// How a host launches emitted source: each kernel function in launch order with its grid placed
// on the hardware axes, its block shape, its dynamic shared memory and its TMA tensor maps. Pure
// host-side arithmetic, the same for one launch and for a kernel of several T.Kernel launches.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "core/int_eval.h"
#include "core/kernel.h"

namespace tessel {

/// One kernel function as the host launches it.
struct HostLaunch {
  std::string entry;              ///< the extern "C" symbol
  std::array<int64_t, 3> grid{};  ///< blocks along the hardware axes x, y, z
  std::array<int, 3> block{};     ///< threads along x, y, z
  int64_t dynamic_shared_bytes = 0;
  std::vector<TensorMapArg> tensor_maps;  ///< passed after the arguments
};

/// The block-index extents of every launch of `kernel` in launch order (its own grid when it has
/// one launch), evaluated in `env` (bind_tensors).
std::vector<std::vector<int64_t>> launch_grids(const Kernel& kernel, const IntEnv& env);

/// The launches of `source` in order (source itself, or source.launches), launch i with the
/// block-index extents `grids[i]` placed on the axes its grid_axes name. User error when the
/// number of grids is not the number of launches, or when an extent is not positive or exceeds
/// what the hardware launches (2^31 - 1 blocks along x, 65535 along y and z).
std::vector<HostLaunch> host_launches(const EmittedSource& source,
                                      const std::vector<std::vector<int64_t>>& grids);

}  // namespace tessel
