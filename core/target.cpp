// The supported targets. Shared-memory sizes are the largest a block can opt into: 163 KiB on
// A100 (sm_80) and 227 KiB on H100 (sm_90) per the CUDA C++ Programming Guide ("Features and
// Technical Specifications"), 64 KiB of LDS per workgroup on CDNA2/CDNA3 (AMD CDNA ISA guides).
#include "core/target.h"

#include "core/error.h"

namespace tessel {

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = [] {
    Target sm80{"sm80", true, 32, 163 * 1024, BankModel::nvidia(), true, true, true, false,
                "NVIDIA Ampere (A100): mma.sync m16n8k16, ldmatrix, cp.async"};
    Target sm90 = sm80;
    sm90.name = "sm90";
    sm90.shared_bytes = 227 * 1024;
    sm90.description = "NVIDIA Hopper (H100), sm80's instructions for now (no wgmma/TMA yet)";
    Target gfx90a{"gfx90a", false, 64, 64 * 1024, BankModel::amd_cdna3(), false, false, false,
                  true, "AMD CDNA2 (MI200): MFMA 16x16x16 and 32x32x8, wave64"};
    Target gfx942 = gfx90a;
    gfx942.name = "gfx942";
    gfx942.description = "AMD CDNA3 (MI300): MFMA 16x16x16 and 32x32x8, wave64";
    return std::vector<Target>{sm80, sm90, gfx90a, gfx942};
  }();
  return targets;
}

std::string target_names() {
  std::string out;
  for (const Target& t : all_targets()) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

const Target& find_target(std::string_view name) {
  for (const Target& t : all_targets()) {
    if (t.name == name) return t;
  }
  user_error("unknown target '" + std::string(name) + "'; the targets are " + target_names());
}

}  // namespace tessel
