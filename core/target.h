// Target descriptions: the only registry of hardware. What the lowering may assume about a GPU
// (warp size, limits per block, bank rules, which instruction families exist), the name its
// compiler knows it by, and the other names that select it. The CLI, the lowering, the simulator
// and codegen read target names and properties from here and nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bank_rules.h"

namespace tessel {

class InstructionFamily;  // core/instruction_family.h

struct Target {
  std::string name;            ///< "sm80", "sm90", "gfx90a", "gfx942"
  bool nvidia = true;          ///< NVIDIA (CUDA) or AMD (HIP)
  std::string arch;            ///< the device compiler's name: nvcc -arch (sm_80, sm_90a)
                               ///< or clang --offload-arch (gfx90a, gfx942)
  int compute_capability = 0;  ///< NVIDIA: major * 10 + minor (80, 90); AMD: 0
  /// Other names that select this target where a command takes one: the vendor's default
  /// target carries "cuda" and "nvidia" (NVIDIA) or "hip" and "amd" (AMD); see lookup_target.
  std::vector<std::string> aliases;
  int warp_size = 32;               ///< 32 (NVIDIA warp) or 64 (AMD wavefront)
  int64_t shared_bytes = 0;         ///< shared memory / LDS one block may use
  int max_threads = 1024;           ///< threads per block
  int max_registers = 255;          ///< 32-bit registers one thread may use
  int64_t block_registers = 65536;  ///< 32-bit registers the threads of one block share
  BankModel banks;
  /// The instruction families it has (core/instruction_family.h): the lowering uses an
  /// instruction only when its family is here.
  std::vector<const InstructionFamily*> families;
  std::string description;  ///< one line: the GPU and the source of the numbers

  /// True when the target has `family`'s instructions.
  bool has(const InstructionFamily& family) const;
};

/// Every supported target, in a stable order.
const std::vector<Target>& all_targets();

/// The target called `name`. User error listing the known names otherwise.
const Target& find_target(std::string_view name);

/// The target called `name`, or — when `aliases` — one of whose aliases is `name`; nullptr
/// when there is none.
const Target* lookup_target(std::string_view name, bool aliases);

/// The default target of a vendor: the one its aliases ("cuda", "hip") select.
const Target& default_target(bool nvidia);

/// The newest NVIDIA target whose cubins a device of compute capability `cc` (major * 10 +
/// minor) runs — same major version, minor at most the device's — or nullptr when there is none.
const Target* nvidia_target_for(int cc);

/// "sm80, sm90, gfx90a, gfx942" for messages.
std::string target_names();

/// The target names, then (when `aliases`) every alias, in registry order: the values a
/// command-line --target option accepts.
std::vector<std::string> target_name_list(bool aliases);

/// "cuda, nvidia, hip, amd": every alias, for messages.
std::string target_aliases();

}  // namespace tessel
