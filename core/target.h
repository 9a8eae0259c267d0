// Target descriptions: what the lowering may assume about a GPU (warp size, shared memory, bank
// rules, which instructions of the intrinsic table exist). One entry per supported target.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bank_rules.h"

namespace tessel {

struct Target {
  std::string name;                 ///< "sm80", "sm90", "gfx90a", "gfx942"
  bool nvidia = true;               ///< NVIDIA (CUDA) or AMD (HIP)
  int warp_size = 32;               ///< 32 (NVIDIA warp) or 64 (AMD wavefront)
  int64_t shared_bytes = 0;         ///< shared memory / LDS one block may use
  int max_threads = 1024;           ///< threads per block
  int max_registers = 255;          ///< 32-bit registers one thread may use
  int64_t block_registers = 65536;  ///< 32-bit registers the threads of one block share
  BankModel banks;
  bool mma_sync = false;    ///< mma.sync.m16n8k16 (f16/bf16 in, f32 accumulate)
  bool ldmatrix = false;    ///< ldmatrix.x1/x2/x4[.trans]
  bool cp_async = false;    ///< cp.async with commit/wait groups
  bool mfma = false;        ///< v_mfma_f32_16x16x16 / 32x32x8 (f16/bf16)
  std::string description;  ///< one line: the GPU and the source of the numbers
};

/// Every supported target, in a stable order.
const std::vector<Target>& all_targets();

/// The target called `name`. User error listing the known names otherwise.
const Target& find_target(std::string_view name);

/// "sm80, sm90, gfx90a, gfx942" for messages.
std::string target_names();

}  // namespace tessel
