// Shared-memory bank rules, in one place: how a warp-wide access splits into phases and how many
// wavefronts (bank passes) it costs. Used by the simulator (counting) and verify/ (proofs); which
// target uses which model is core/target.h's business.
//
// Sources (see shared/REFERENCE.md):
// - NVIDIA, compute capability 5.x-9.x (CUDA C++ Programming Guide, "Shared Memory"): 32 banks of
//   4 bytes, bank = (byte_addr / 4) % 32. Accesses of <= 4 bytes per lane form one phase of 32
//   lanes, 8 bytes two phases of 16, 16 bytes four phases of 8 contiguous lanes. Lanes touching the
//   same 4-byte word are served together (broadcast). `ldmatrix`: lanes 8m..8m+7 give the 16-byte
//   row addresses of matrix m; each matrix is one phase. Per phase the cost is the largest number
//   of distinct words any one bank must deliver; this is what Nsight Compute counts as wavefronts
//   (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_*).
// - AMD CDNA3 (gfx942, MI300) LDS (AMD kernel-optimisation guides, CK-Tile's "LDS bank conflicts"):
//   32 banks of 4 bytes, wave64. ds_read/write_b32 (and narrower): two phases, lanes 0-31 and
//   32-63; b64: four phases of 16 contiguous lanes; ds_write_b128: eight contiguous groups of 8;
//   ds_read_b128: eight phases of non-contiguous lane groups {0-3, 20-23}, {32-35, 52-55},
//   {4-7, 16-19}, {36-39, 48-51}, {8-11, 28-31}, {40-43, 60-63}, {12-15, 24-27}, {44-47, 56-59}.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessel {

/// Which vendor's phase rules a BankModel follows.
enum class BankVendor : uint8_t { kNvidia, kAmd };

/// The bank geometry of one target and its phase rules.
struct BankModel {
  BankVendor vendor = BankVendor::kNvidia;
  int num_banks = 32;  ///< banks per shared-memory / LDS array
  int bank_bytes = 4;  ///< bytes one bank delivers per pass (the "word")
  int warp_size = 32;  ///< lanes of one warp (NVIDIA) or wavefront (AMD)

  /// NVIDIA sm_50 .. sm_90: 32 banks x 4 B, warp of 32.
  static BankModel nvidia();
  /// AMD CDNA3 (gfx942) and CDNA2 (gfx90a) LDS: 32 banks x 4 B, wave64.
  static BankModel amd_cdna3();

  /// The lane groups that are checked for conflicts together, in issue order. Every lane of the
  /// warp is in exactly one group. `access_bytes` is the width each lane reads or writes;
  /// `ldmatrix` selects NVIDIA's ldmatrix rule (each 8-lane group of row addresses is one phase);
  /// `write` selects AMD's ds_write_b128 grouping (reads and writes differ only there).
  /// Requires: access_bytes in {1, 2, 4, 8, 16} (ldmatrix: 16); ldmatrix only on NVIDIA (user
  /// error otherwise).
  std::vector<std::vector<int>> phases(int access_bytes, bool ldmatrix, bool write = false) const;

  /// The bank of a byte address: (addr / bank_bytes) mod num_banks (floor semantics).
  int bank_of(int64_t byte_addr) const;
};

/// The cost of one warp-wide shared-memory request.
struct BankCount {
  int64_t wavefronts = 0;        ///< sum over phases of the max distinct words in one bank
  int64_t ideal_wavefronts = 0;  ///< phases with at least one active lane
  int64_t bank_conflicts = 0;    ///< wavefronts - ideal_wavefronts
  int max_degree = 0;            ///< the largest per-phase wavefront count (1 = conflict-free)
  friend bool operator==(const BankCount&, const BankCount&) = default;
};

/// Counts the wavefronts of one request exactly. `byte_addr[l]` is the first byte lane l accesses
/// (ldmatrix: the first byte of the 16-byte row lane l addresses); bit l of `active_mask` says
/// whether lane l takes part. A lane touches every bank word overlapping
/// [byte_addr, byte_addr + access_bytes). Requires: byte_addr.size() >= model.warp_size for
/// every active lane index (lanes past the span's end are treated as inactive).
BankCount count_wavefronts(const BankModel& model, std::span<const int64_t> byte_addr,
                           uint64_t active_mask, int access_bytes, bool ldmatrix,
                           bool write = false);

/// A mask with the low `lanes` bits set (all lanes of a warp of that size active).
constexpr uint64_t full_mask(int lanes) {
  return lanes >= 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1;
}

}  // namespace tessel
