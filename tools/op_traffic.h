// Memory traffic per tile operator: the simulator counts per instruction of the lowered kernel;
// every lowered statement keeps the source location of the tile operator (or T.Parallel loop)
// it came from, so the rows sum up per operator of the tile-level kernel.
#pragma once

#include <string>
#include <vector>

#include "core/kernel.h"
#include "sim/sim_run.h"

namespace tessel::cli {

struct OperatorTraffic {
  std::string op;  ///< "T.copy at gemm.py:24:17"
  sim::Counters counters;
};

/// The report's per-instruction counters summed per tile operator and Parallel loop of
/// `tile_kernel`, in program order; instructions from elsewhere are summed as "other".
std::vector<OperatorTraffic> traffic_per_operator(const Kernel& tile_kernel,
                                                  const sim::SimReport& report);

/// The terminal table of traffic_per_operator.
std::string traffic_table(const std::vector<OperatorTraffic>& rows);

}  // namespace tessel::cli
