// The report of a kernel run: the terminal text `tessel run` prints, and the JSON object of
// `tessel run --json` (DESIGN.md lists the keys scripts may rely on), which the Python package
// also turns into its report objects.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tools/kernel_run.h"

namespace tessel::cli {

/// The terminal report: the run's line, the checks, at thread level the traffic per operator,
/// the simulator's tables and findings; the last line is PASSED or FAILED.
std::string run_text(const KernelRun& run);

/// The JSON report (`tessel run --json`).
nlohmann::json run_json(const KernelRun& run);

}  // namespace tessel::cli
