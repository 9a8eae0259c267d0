// Gathers what the report shows: the kernel built, lowered, run at thread level with bank samples,
// and verified, each step's user error kept instead of thrown.
#include <chrono>

#include "core/error.h"
#include "tools/cli.h"
#include "tools/report.h"

#ifndef TESSEL_SOURCE_DIR
#define TESSEL_SOURCE_DIR ""
#endif

namespace tessel::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool ReportData::passed() const {
  if (!lower_error.empty() || !run_error.empty() || !verify_error.empty()) return false;
  if (run && !run->passed) return false;
  if (proofs && !proofs->all_proved()) return false;
  return true;
}

ReportData collect_report(const ResolvedKernel& k, const std::string& kernel_arg,
                          const ReportOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ReportData d;
  d.kernel_arg = kernel_arg;
  d.target = options.run.target;
  d.source_dir = TESSEL_SOURCE_DIR;
  d.tile_kernel = k.example->build(k.params);
  const Target& target = find_target(options.run.target);
  if (is_tile_level(d.tile_kernel)) {
    try {
      d.lowered = lower_kernel(d.tile_kernel, target);
    } catch (const UserError& e) {
      d.lower_error = e.what();
    }
  }
  if (d.lower_error.empty()) {
    RunRequest request = options.run;
    request.level = "thread";
    request.bank_samples = true;
    try {
      d.run = run_kernel(k, request);
    } catch (const UserError& e) {
      d.run_error = e.what();
    }
  }
  if (options.verify) {
    auto verify_start = std::chrono::steady_clock::now();
    try {
      d.proofs = verify_kernel(d.tile_kernel, target, {options.timeout_ms});
    } catch (const UserError& e) {
      d.verify_error = e.what();
    }
    d.verify_seconds = seconds_since(verify_start);
  }
  d.total_seconds = seconds_since(start);
  return d;
}

}  // namespace tessel::cli
