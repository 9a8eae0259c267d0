// The report page's lower sections: inferred layouts as pictures, the verify proofs with their
// counterexamples, and the run's checks and per-instruction counters.
#pragma once

#include <functional>
#include <string>

#include "tools/report.h"

namespace tessel::cli {

/// Shared layouts (bank colouring) and fragments (thread/register grid), one folded picture each.
void layouts_section(std::string& out, const ReportData& d);

/// The verify checks; `link_of(text)` turns a text naming "at FILE:LINE:COL" into a link ("").
void verify_section(std::string& out, const ReportData& d,
                    const std::function<std::string(const std::string&)>& link_of);

/// The run's value checks, tile-level comparison and per-instruction counters.
void run_section(std::string& out, const ReportData& d);

}  // namespace tessel::cli
