// The device compilers on this machine and one call to compile generated source with them:
// nvcc (-cubin for sm_80 / sm_90a) for NVIDIA targets, a clang with the AMDGPU backend
// (device-only HIP, no ROCm install needed) for gfx90a / gfx942. A compiler that is missing, or
// that does not know the target, is reported as a reason to skip — never as a pass.
#pragma once

#include <optional>
#include <string>

#include "codegen/emit.h"
#include "core/target.h"

namespace tessel {

/// nvcc: $TESSEL_NVCC, else `nvcc` on PATH, else /usr/local/cuda/bin/nvcc.
std::optional<std::string> find_nvcc();
/// A clang that compiles HIP device code for `arch`: $TESSEL_HIP_CLANG, else the newest of
/// clang++-20 .. clang++-17 and clang++ that accepts --offload-arch=arch (checked once).
std::optional<std::string> find_amd_clang(const std::string& arch);

struct CompileResult {
  bool compiled = false;   ///< the compiler ran and succeeded
  std::string skipped;     ///< why nothing ran (no compiler for the target); empty when it ran
  std::string command;     ///< the command line
  std::string log;         ///< the compiler's output (errors)
  double seconds = 0;      ///< wall time of the compiler
  std::string output;      ///< the cubin / assembly file
};

/// Writes `source` into `dir` and compiles it for `target` (nvcc -cubin -O3, or clang -S -O3
/// for AMD).
CompileResult compile_device_code(const EmittedSource& source, const Target& target,
                                  const std::string& dir);

}  // namespace tessel
