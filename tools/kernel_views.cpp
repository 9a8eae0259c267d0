// Emitted source and the verify report of a kernel (see kernel_views.h).
#include "tools/kernel_views.h"

#include "core/passes.h"
#include "verify/alignment_proofs.h"

namespace tessel::cli {

EmittedSource emit_kernel(const Kernel& kernel, const Target& t, const LowerOptions& options,
                          const std::string& command) {
  Kernel lowered = is_tile_level(kernel) ? lower_kernel(kernel, t, options).kernel : kernel;
  for (const Kernel& launch : launches_of(lowered)) {
    require_alignment(launch, t, command);  // no instruction that faults on the GPU
  }
  return emit_source(lowered, t);
}

nlohmann::json verify_json(const Kernel& kernel, const std::string& target,
                           const KernelProofs& proofs) {
  nlohmann::json checks = nlohmann::json::array();
  for (const KernelCheck& c : proofs.checks) {
    checks.push_back({{"what", c.what},
                      {"result", c.result},
                      {"counterexample", c.counterexample ? nlohmann::json(*c.counterexample)
                                                          : nlohmann::json(nullptr)},
                      {"ms", c.ms}});
  }
  return {{"kernel", kernel->name},
          {"target", target},
          {"proved", proofs.count("proved")},
          {"failed", proofs.count("failed")},
          {"undecided", proofs.count("undecided")},
          {"ms", proofs.total_ms()},
          {"checks", checks}};
}

}  // namespace tessel::cli
