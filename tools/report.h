// `tessel report`: everything Tessel learns about one kernel — a thread-level run with the
// simulator's counters and findings, the lowered IR, the inferred layouts and the verify proofs —
// gathered once (collect_report) and written as one self-contained HTML page (report_html).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/passes.h"
#include "tools/kernel_run.h"
#include "tools/kernel_source.h"
#include "verify/kernel_proofs.h"

namespace tessel::cli {

struct ReportOptions {
  RunRequest run;               ///< thread level; bank samples on
  bool verify = true;           ///< run `tessel verify`'s proofs
  unsigned timeout_ms = 60000;  ///< per Z3 query
};

/// What the page shows. A step that failed with a user error keeps its message and the page
/// says so; the other steps still appear.
struct ReportData {
  std::string kernel_arg;  ///< KERNEL as given
  std::string target;
  Kernel tile_kernel;                    ///< as built
  std::optional<LoweredKernel> lowered;  ///< tile-level kernels, lowered for `target`
  std::string lower_error;
  std::optional<KernelRun> run;  ///< the thread-level run
  std::string run_error;
  std::optional<KernelProofs> proofs;
  std::string verify_error;
  double verify_seconds = 0;
  double total_seconds = 0;
  std::string source_dir;  ///< where built-in examples' C++ files are looked up

  /// True when the run passed, nothing non-benign was found and every proof held.
  bool passed() const;
};

/// Builds, lowers, runs at thread level (with bank samples) and verifies `k`. UsageError for bad
/// options; the kernel's own errors are kept in the data, not thrown (except building it).
ReportData collect_report(const ResolvedKernel& k, const std::string& kernel_arg,
                          const ReportOptions& options);

/// The whole page: summary, annotated source with findings and bank maps at their lines, the
/// lowered IR (folded), layouts, verify results. Self-contained HTML: inline CSS and SVG, no
/// scripts, no external resources.
std::string report_html(const ReportData& data);

}  // namespace tessel::cli
