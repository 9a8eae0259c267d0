// The thread-level SIMT interpreter: runs every thread of every block of a thread-level kernel,
// warp by warp in lock-step, and feeds each memory instruction to the hardware models of sim/
// (banks, sectors, races, bounds, uninitialised reads, barriers, async copies). Blocks run on
// the CPU's cores.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel.h"
#include "interp/tile_interpreter.h"
#include "sim/sim_run.h"

namespace tessel {

/// The order in which warps run between two barriers, and in which blocks start.
struct Schedule {
  enum class Kind : uint8_t { kInOrder, kReverse, kRandom };
  Kind kind = Kind::kInOrder;
  uint64_t seed = 0;  ///< kRandom

  /// "in-order", "reverse" or "random:SEED"; nullopt for anything else.
  static std::optional<Schedule> parse(std::string_view text);
  /// The text parse() reads back.
  std::string name() const;
};

struct ThreadRunOptions {
  std::string target = "sm80";  ///< a core/target.h name: the warp size, bank rules and limits
  Schedule schedule;
  int workers = 0;                ///< CPU threads running blocks; 0 = all cores
  bool detectors = true;          ///< races, uninitialised reads, async races
  bool counters = true;           ///< bank wavefronts and global sectors
  RunControl* control = nullptr;  ///< step and time limits, progress counters (optional)
  bool bank_samples = false;      ///< keep each shared site's worst request (SimReport::worst_bank)
  /// Keep the values of the trees a kernel spells more than once (CExpr::reuse); the results and
  /// every count are the same without (tests compare the two).
  bool reuse_repeated_trees = true;
  /// The most bytes the cross-block race shadow may take (sim::GlobalShadow); 0: no limit.
  int64_t shadow_limit_bytes = 0;
  /// Simulate only these linear block ids (x + gx * (y + gy * z)); every block when empty. The
  /// schedule orders them.
  std::vector<int64_t> only_blocks;
  /// The tensors as they are before this run, kept by the caller (its written ones at least):
  /// a launch that runs again in block order restores its written tensors from here instead of
  /// copying them first. Tensors it writes that are missing here it copies itself.
  const TensorMap* before = nullptr;
};

struct ThreadRunResult {
  sim::SimReport report;
  int64_t blocks = 0;     ///< blocks of the grid
  int64_t simulated = 0;  ///< blocks simulated (all of them unless only_blocks was given)
  std::vector<int64_t> grid;
  int threads = 0;  ///< per block
  int warp_size = 32;
  int workers = 1;
  /// Blocks raced on global elements with several workers, so the launch ran again one block
  /// after another (workers is then 1): a tile-level run to compare with should do the same.
  bool in_block_order = false;
  double seconds = 0;
  /// Simulated lane-operations: every expression node and memory access, once per active lane.
  int64_t lane_ops = 0;
};

/// Runs `kernel` at thread level on `tensors` (updated in place). User error when the kernel is
/// not thread-level IR (tile operators, T.Parallel: they need the lowering pass), when the
/// target is unknown, when tensors do not match the signature, or on an integer division by
/// zero; the error of the first failing block in block order, whatever the number of workers.
/// RunStopped past the limits of `options.control`. Problems the hardware would hide (races,
/// out-of-bounds accesses, ...) are findings in the report, not errors.
ThreadRunResult run_thread_level(const Kernel& kernel, TensorMap& tensors,
                                 const ThreadRunOptions& options = {});

/// Appends the result of one launch of a kernel of several launches to `total` (start it with
/// threads and workers 0): its sites after the earlier launches', each site and finding opened
/// with `label` (launch_label), the counts summed.
void append_launch(ThreadRunResult& total, ThreadRunResult one, const std::string& label);

}  // namespace tessel
