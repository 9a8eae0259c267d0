// Runs a resolved kernel on the CPU, at tile or thread level, on seeded random inputs or the
// user's arrays, and checks the results: against the built-in reference, against the user's
// expected arrays, and (at thread level) against the tile level on the same inputs. The command
// line (`tessel run`) and the Python package (`Kernel.run`) both call run_kernel.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tools/host_data.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

/// A user's array for one parameter; `origin` says where it came from in errors
/// ("--input A=a.npy", "inputs['A']").
struct NamedArray {
  std::string name;
  NpyArray array;
  std::string origin;
};

struct RunRequest {
  std::string level = "tile";  ///< "tile" or "thread"
  uint64_t seed = 0;
  int workers = 0;                    ///< CPU threads running blocks; 0 = all cores
  std::string schedule = "in-order";  ///< thread level: Schedule::parse spelling
  std::string target = "sm80";        ///< thread level: the simulated GPU
  bool warp_specialize = true;        ///< thread level, sm90: LowerOptions::warp_specialize
  std::vector<NamedArray> inputs;     ///< values of parameters (the others are random)
  std::vector<NamedArray> expected;   ///< values parameters must have after the run
  std::optional<double> atol, rtol;   ///< tolerance of `expected` (default: by dtype)
  /// Initial values of parameters by name: "zeros", "random" or "nan" (NaN bytes). Outputs
  /// start as NaN bytes and inputs random unless named here; the reference starts from the
  /// same values (a kernel that accumulates into its output is checked with NAME=zeros).
  std::map<std::string, std::string> init;
  RunControl* control = nullptr;  ///< step and time limits, progress counters (optional)
  bool bank_samples = false;      ///< thread level: keep worst requests for bank maps
  /// Thread level: the blocks simulated (interp/block_selection.h spec, e.g. "edges"); the
  /// others run at tile level into the same tensors. "" or "all": every block is simulated.
  std::string blocks;
  /// What the built-in reference computes: "full" (every output element), "sampled" (an
  /// example's sampled reference: the simulated blocks' outputs in full, a seeded sample of the
  /// others; needs a block sample) or "auto": sampled when the run samples blocks, the example
  /// has a sampled reference and its full reference costs more than sample_above_macs (4e11:
  /// about 10 s of the GEMMs' double reference on the 2-core CI machine and 35 s of
  /// chunk_state's, which also bounds every product's rounding).
  std::string reference = "auto";
  double sample_above_macs = 4e11;
};

/// A sampled thread-level run (RunRequest::blocks): which blocks the simulator ran, and the
/// factor that scales its counters to the whole grid.
struct BlockSample {
  std::string spec;                ///< as given
  std::vector<int64_t> grid;       ///< the launch grid
  std::vector<int64_t> simulated;  ///< linear ids, ascending
  int64_t total = 0;               ///< blocks of the grid
  /// total / simulated.size(): a counter of the simulated blocks times this estimates the grid's.
  double scale() const {
    return static_cast<double>(total) / static_cast<double>(simulated.size());
  }
  /// The simulated blocks' counters scaled to the whole grid (rounded to the nearest integer).
  sim::Counters scaled(const sim::Counters& measured) const;
};

/// One launch's block sample in a kernel of several launches (split-KV's partials, then their
/// combine), with the counters measured over that launch's simulated blocks: each launch scales
/// by its own grid.
struct LaunchSample {
  std::string launch;  ///< launch_label: "launch 1 of 2 ('...')"
  BlockSample sample;
  sim::Counters measured;
};

/// The seconds one part of a run took: on the clock, and of CPU time summed over its threads.
struct PhaseTime {
  double wall = 0;
  double cpu = 0;
};

/// The time of each part of a run, as a user waits for them.
struct PhaseSeconds {
  PhaseTime inputs;      ///< building the kernel, random inputs, the user's arrays
  PhaseTime reference;   ///< the built-in reference
  PhaseTime tile_rest;   ///< sampled thread level: the blocks left out, at tile level
  PhaseTime run;         ///< the run at the requested level (the sampled blocks, if sampled)
  PhaseTime tile_check;  ///< thread level: the tile level again, to compare with
  PhaseTime checks;      ///< comparing the tensors
};

struct KernelRun {
  Kernel kernel;  ///< as built (tile level for tile-level kernels)
  RunRequest request;
  bool has_reference = true;  ///< a built-in reference checked the values
  bool lowered = false;       ///< thread level: the kernel was lowered for the target
  std::vector<ParamInfo> signature;
  TensorMap tensors;  ///< every parameter after the run, at the run's level
  /// Thread level: the tile level's results (when it ran) of the tensors the kernel writes; the
  /// others it only reads, unchanged (tile_tensor).
  TensorMap tile_tensors;
  std::vector<OutputCheck> vs_reference;  ///< the built-in reference's outputs
  std::vector<OutputCheck> vs_expected;   ///< the user's expected arrays
  std::vector<OutputCheck> vs_tile;       ///< thread level: every tensor against the tile level
  bool tile_ran = false;
  std::string tile_note;  ///< thread level: why the tile level did not run
  int64_t blocks = 0;
  int threads = 0;
  double seconds = 0;
  PhaseSeconds phases;
  int64_t shadow_budget = 0;  ///< bytes of host memory left beside the tensors (check_host_memory)
  std::optional<ThreadRunResult> thread;  ///< thread level: the simulator's report and counts
  std::optional<BlockSample> sample;      ///< thread level with --blocks naming fewer than all
  /// The same for a kernel of several launches: each launch's sample, drawn from its own grid by
  /// the one spec (`sample` stays empty).
  std::vector<LaunchSample> launch_samples;
  bool passed = true;
  double max_abs_err = 0, max_rel_err = 0;  ///< over the reference and expected checks

  /// The parameters the kernel writes, and those the reference or the user checked.
  std::vector<std::string> output_names() const;
  /// Parameter `name` after the tile level (requires tile_ran): its copy where the kernel writes
  /// it, else the tensor itself, which the thread level left unchanged (vs_tile says so).
  const HostTensor& tile_tensor(const std::string& name) const;
};

/// Runs `k` as `request` says. UsageError for a bad level, schedule, target or block spec (or
/// a block spec naming fewer than all blocks of a kernel the tile level cannot run), an array for
/// no parameter of the kernel, or one whose shape or dtype does not fit (tools/host_data.h);
/// UserError for errors of the kernel itself.
KernelRun run_kernel(const ResolvedKernel& k, const RunRequest& request);

}  // namespace tessel::cli
