// The supported targets, with their limits per block (checked by core/capacity.h):
//   - NVIDIA, CUDA C++ Programming Guide, "Features and Technical Specifications" (table
//     "Technical Specifications per Compute Capability"): 1024 threads per block; 255 32-bit
//     registers per thread; 64 K 32-bit registers per block; shared memory per block 48 KB
//     static, up to 163 KB (8.0, A100) and 227 KB (9.0, H100) opted into as dynamic shared
//     memory — the limits used here, since codegen launches with dynamic shared memory.
//   - AMD CDNA2/CDNA3 (gfx90a MI200, gfx942 MI300), the CDNA ISA reference guides and LLVM's
//     AMDGPU backend (AMDGPUUsage, getTotalNumVGPRs): 64 KiB of LDS per workgroup, 1024
//     work-items per workgroup, 512 vector registers per lane of a wave (VGPRs and AccVGPRs share
//     one unified file of 512, at most 256 of each kind) and 512 per SIMD lane in all, four SIMDs
//     per CU: a workgroup's waves share 4 x 512 x 64 = 131072 32-bit registers.
#include "core/target.h"

#include <algorithm>

#include "core/error.h"
#include "core/instruction_family.h"

namespace tessel {

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = [] {
    Target sm80;
    sm80.name = "sm80";
    sm80.nvidia = true;
    sm80.arch = "sm_80";
    sm80.compute_capability = 80;
    sm80.aliases = {"cuda", "nvidia"};
    sm80.warp_size = 32;
    sm80.shared_bytes = 163 * 1024;
    sm80.max_threads = 1024;
    sm80.max_registers = 255;
    sm80.block_registers = 64 * 1024;
    sm80.banks = BankModel::nvidia();
    sm80.families = {&mma_sync_family(), &ldmatrix_family(), &cp_async_family(), &atomic_family()};
    sm80.description = "NVIDIA Ampere (A100): mma.sync m16n8k16, ldmatrix, cp.async";
    Target sm90 = sm80;
    sm90.name = "sm90";
    sm90.arch = "sm_90a";  // the arch-specific feature set (wgmma, setmaxnreg) needs the "a"
    sm90.compute_capability = 90;
    sm90.aliases = {};
    sm90.shared_bytes = 227 * 1024;
    sm90.families.push_back(&mbarrier_family());
    sm90.families.push_back(&tma_family());
    sm90.families.push_back(&wgmma_family());
    sm90.description =
        "NVIDIA Hopper (H100): sm80's instructions, mbarriers, fence.proxy.async, setmaxnreg, "
        "TMA loads, wgmma.mma_async";
    Target gfx90a;
    gfx90a.name = "gfx90a";
    gfx90a.nvidia = false;
    gfx90a.arch = "gfx90a";
    gfx90a.warp_size = 64;
    gfx90a.shared_bytes = 64 * 1024;
    gfx90a.max_threads = 1024;
    gfx90a.max_registers = 512;
    gfx90a.block_registers = 4 * 512 * 64;
    gfx90a.banks = BankModel::amd_cdna3();
    gfx90a.families = {&mfma_family(), &mfma_i8_cdna2_family(), &atomic_family()};
    gfx90a.description = "AMD CDNA2 (MI200): MFMA 16x16x16 and 32x32x8, int8 16x16x16, wave64";
    Target gfx942 = gfx90a;
    gfx942.name = "gfx942";
    gfx942.arch = "gfx942";
    gfx942.aliases = {"hip", "amd"};
    // CDNA3 replaced CDNA2's int8 MFMA shapes with K-doubled ones (16x16x32_i8).
    gfx942.families = {&mfma_family(), &mfma_i8_cdna3_family(), &atomic_family()};
    gfx942.description = "AMD CDNA3 (MI300): MFMA 16x16x16 and 32x32x8, int8 16x16x32, wave64";
    return std::vector<Target>{sm80, sm90, gfx90a, gfx942};
  }();
  return targets;
}

bool Target::has(const InstructionFamily& family) const {
  return std::find(families.begin(), families.end(), &family) != families.end();
}

std::vector<std::string> target_name_list(bool aliases) {
  std::vector<std::string> out;
  for (const Target& t : all_targets()) out.push_back(t.name);
  if (aliases) {
    for (const Target& t : all_targets()) out.insert(out.end(), t.aliases.begin(), t.aliases.end());
  }
  return out;
}

std::string target_names() {
  std::string out;
  for (const Target& t : all_targets()) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

std::string target_aliases() {
  std::string out;
  for (const Target& t : all_targets()) {
    for (const std::string& a : t.aliases) out += (out.empty() ? "" : ", ") + a;
  }
  return out;
}

const Target* lookup_target(std::string_view name, bool aliases) {
  for (const Target& t : all_targets()) {
    if (t.name == name) return &t;
  }
  if (!aliases) return nullptr;
  for (const Target& t : all_targets()) {
    for (const std::string& a : t.aliases) {
      if (a == name) return &t;
    }
  }
  return nullptr;
}

const Target& find_target(std::string_view name) {
  if (const Target* t = lookup_target(name, false)) return *t;
  user_error("unknown target '" + std::string(name) + "'; the targets are " + target_names());
}

const Target& default_target(bool nvidia) {
  for (const Target& t : all_targets()) {
    if (t.nvidia == nvidia && !t.aliases.empty()) return t;
  }
  internal_error("no target of a vendor in the registry");
}

const Target* nvidia_target_for(int cc) {
  const Target* best = nullptr;
  for (const Target& t : all_targets()) {
    // A cubin runs on devices of its own major version and a minor version at least its own.
    if (t.nvidia && t.compute_capability / 10 == cc / 10 && t.compute_capability <= cc &&
        (!best || t.compute_capability > best->compute_capability)) {
      best = &t;
    }
  }
  return best;
}

}  // namespace tessel
