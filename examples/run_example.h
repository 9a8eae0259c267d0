// Runs a built-in example on the tile-level interpreter with seeded random inputs and checks
// every output against the example's independent reference.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "examples/registry.h"
#include "interp/host_tensor.h"
#include "interp/tile_interpreter.h"

namespace tessel {

struct OutputCheck {
  std::string name;
  Comparison comparison;
  Tolerance tolerance;
  std::vector<int64_t> shape;
  /// Set when only some elements were compared (a sampled reference): how many, and which in
  /// words; `comparison.first_mismatch` is still a flat index into the whole tensor.
  std::optional<int64_t> sampled;
  std::string sample_note;
  /// Why it failed, where no element comparison says (a tensor the kernel only reads that the
  /// thread level changed); `comparison.first_mismatch` then points into the changed part.
  std::string note = {};
};

struct ExampleRun {
  Kernel kernel;
  TileRunStats stats;
  std::vector<OutputCheck> outputs;
  bool passed = true;
  double max_abs_err = 0;
  double max_rel_err = 0;
};

/// Builds the example, makes its tensors (inputs random from `seed`, outputs filled with NaN
/// bytes so unwritten elements show), runs it at tile level and compares with the reference.
ExampleRun run_example_tile(const Example& example, const Params& params, uint64_t seed,
                            TileRunOptions options = {});

/// Tensors for every parameter of `kernel` (only those named in `only`, when given): inputs
/// random from `seed`, each parameter's values the same whichever others are made, `outputs`
/// NaN-filled.
TensorMap make_tensors(const Kernel& kernel, const std::map<std::string, int64_t>& dims,
                       const std::vector<std::string>& outputs, uint64_t seed,
                       const std::vector<std::string>* only = nullptr);

}  // namespace tessel
