// What `tessel emit` and `tessel verify --json` produce for a kernel, shared by the command line
// and the Python package (python/tessel_module.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "codegen/emit.h"
#include "core/kernel.h"
#include "core/target.h"
#include "verify/kernel_proofs.h"

namespace tessel::cli {

/// `kernel` lowered for `target` when it is tile level, refused (UserError, naming `command`)
/// unless every aligned access of every launch is proved aligned, and emitted as CUDA or HIP
/// source.
EmittedSource emit_kernel(const Kernel& kernel, const Target& target,
                          const LowerOptions& options = {}, const std::string& command = "emit");

/// The JSON object of `tessel verify --json`: kernel, target, proved/failed/undecided counts,
/// total ms and one entry per check (what, result, counterexample, ms).
nlohmann::json verify_json(const Kernel& kernel, const std::string& target,
                           const KernelProofs& proofs);

}  // namespace tessel::cli
