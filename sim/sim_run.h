// One simulated launch: the options and sites every block shares, the global buffers with their
// cross-block shadow, and the results merged from every block into one report.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/bank_rules.h"
#include "sim/findings.h"
#include "sim/global_shadow.h"
#include "sim/sim_types.h"

namespace tessel::sim {

struct SimOptions {
  BankModel banks = BankModel::nvidia();  ///< bank geometry and phase rules; warp size
  bool detectors = true;  ///< races, uninitialised reads, async races (bounds are always checked)
  bool counters = true;   ///< bank wavefronts and global sectors
  /// Keep, per shared-memory site, its request with the worst phase (for bank maps); off by
  /// default, so a run that draws nothing pays nothing.
  bool bank_samples = false;
  /// The most bytes the cross-block shadow (GlobalShadow) may allocate; 0: no limit.
  int64_t shadow_limit_bytes = 0;
};

/// The merged result of a launch.
struct SimReport {
  int warp_size = 32;
  Counters total;
  std::vector<Site> sites;
  std::vector<Counters> per_site;  ///< indexed like `sites`
  /// With SimOptions::bank_samples: indexed like `sites`, the costliest request of each shared
  /// site (max_degree 0 for the others); ties keep the lowest block, then the first request.
  std::vector<BankSample> worst_bank;
  std::vector<Finding> findings;  ///< in block order, then order of occurrence
  int64_t blocks = 0;
  int64_t barriers = 0;             ///< barrier rounds executed, summed over blocks
  int64_t async_bytes = 0;          ///< bytes copied by cp.async, summed over blocks
  int64_t max_async_in_flight = 0;  ///< the most cp.async bytes one block has in flight at
                                    ///< one instant (BlockSim::max_async_in_flight), max over
                                    ///< blocks

  /// True when a finding that is not benign was made.
  bool has_errors() const;
  /// Findings of one kind.
  std::vector<const Finding*> of_kind(FindingKind kind) const;
  /// The terminal report: a table per site (requests, wavefronts, ideal, conflicts, sectors),
  /// a line of barrier and cp.async counts, and the findings.
  std::string text() const;
};

class BlockSim;

class SimRun {
 public:
  SimRun(SimOptions options, std::vector<Site> sites);

  /// Registers a global tensor (before any block starts); ids are dense from 0.
  int add_global(BufferDesc desc);
  int num_globals() const { return static_cast<int>(globals_.size()); }
  const BufferDesc& global(int id) const { return globals_[id]; }
  const SimOptions& options() const { return options_; }
  const std::vector<Site>& sites() const { return sites_; }
  GlobalShadow& shadow() { return shadow_; }
  /// "block (1, 0)" for a linear block id (set by set_grid).
  std::vector<int64_t> block_index(uint32_t linear) const;
  /// The grid, for naming blocks: linear id = x + gx * (y + gy * z).
  void set_grid(std::vector<int64_t> grid) { grid_ = std::move(grid); }

  /// Turns make the cross-block checks independent of how blocks overlap on CPU threads: a block
  /// given turn n (BlockSim::set_turn) holds its global accesses and checks them against the
  /// shadow only once every block of an earlier turn has finished, as if blocks ran one after
  /// another in turn order. Waits until turn `turn` may go.
  void wait_turn(int64_t turn);
  /// The block of `turn` finished (or failed): later turns may go.
  void finish_turn(int64_t turn);

  /// A block found a race or write conflict with another block (set by BlockSim). Blocks that
  /// share global elements see each other's stores as the CPU threads happen to interleave, so
  /// the values they load and store — and with them a finding's benign verdict — depend on
  /// timing: run_thread_level runs such a launch again, one block after another.
  void note_cross_block() { cross_block_.store(true, std::memory_order_relaxed); }
  bool cross_block() const { return cross_block_.load(std::memory_order_relaxed); }

  /// Adds a finished block's counters and findings (thread-safe).
  void absorb(const BlockSim& block);
  /// The merged report (after every block was absorbed): findings in block-id order.
  SimReport report() const;

 private:
  SimOptions options_;
  std::vector<Site> sites_;
  std::vector<BufferDesc> globals_;
  std::vector<int64_t> grid_;
  GlobalShadow shadow_;
  std::mutex turn_lock_;
  std::condition_variable turn_done_;
  int64_t next_turn_ = 0;
  std::set<int64_t> finished_turns_;  ///< finished ahead of next_turn_
  std::atomic<bool> cross_block_{false};
  mutable std::mutex lock_;
  std::vector<Counters> per_site_;
  std::vector<BankSample> worst_bank_;
  std::map<uint32_t, FindingLog> block_findings_;
  int64_t blocks_ = 0;
  int64_t barriers_ = 0;
  int64_t async_bytes_ = 0;
  int64_t max_async_in_flight_ = 0;
};

/// "(1, 0)".
std::string block_string(const std::vector<int64_t>& index);

}  // namespace tessel::sim
