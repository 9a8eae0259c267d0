// Phase rules and exact wavefront counting for shared memory (NVIDIA) and LDS (AMD).
#include "core/bank_rules.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace tessel {

namespace {

int64_t floor_div_pos(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

BankModel BankModel::nvidia() { return {BankVendor::kNvidia, 32, 4, 32}; }
BankModel BankModel::amd_cdna3() { return {BankVendor::kAmd, 32, 4, 64}; }

int BankModel::bank_of(int64_t byte_addr) const {
  int64_t word = floor_div_pos(byte_addr, bank_bytes);
  int64_t bank = word % num_banks;
  return static_cast<int>(bank < 0 ? bank + num_banks : bank);
}

namespace {

/// Writes the phase index of every lane into `phase_of` and returns the number of phases: the one
/// statement of the rules, from which phases() and count_wavefronts() both read.
int assign_phases(const BankModel& m, int access_bytes, bool ldmatrix, bool write,
                  std::array<int8_t, 64>& phase_of) {
  if (access_bytes != 1 && access_bytes != 2 && access_bytes != 4 && access_bytes != 8 &&
      access_bytes != 16) {
    user_error("a shared-memory access of " + std::to_string(access_bytes) +
               " bytes per lane is not a hardware access width; use 1, 2, 4, 8 or 16");
  }
  internal_check(m.warp_size > 0 && m.warp_size <= 64 && m.warp_size % 8 == 0,
                 "bank model warp size must be a multiple of 8 up to 64");
  int group = m.warp_size;  // lanes per contiguous phase
  if (m.vendor == BankVendor::kNvidia) {
    if (ldmatrix && access_bytes != 16) {
      user_error("ldmatrix lanes address 16-byte rows; the access width must be 16, not " +
                 std::to_string(access_bytes));
    }
    if (ldmatrix)
      group = 8;  // one 8x16-byte matrix per phase
    else if (access_bytes == 8)
      group = m.warp_size / 2;
    else if (access_bytes == 16)
      group = m.warp_size / 4;
  } else {
    if (ldmatrix) {
      user_error(
          "ldmatrix is an NVIDIA instruction; AMD targets have no ldmatrix phases "
          "(drop --ldmatrix or pick an sm target)");
    }
    if (access_bytes <= 4)
      group = m.warp_size / 2;  // ds_*_b32 and narrower
    else if (access_bytes == 8)
      group = m.warp_size / 4;  // ds_*_b64
    else if (write)
      group = m.warp_size / 8;  // ds_write_b128
    else {                      // ds_read_b128
      internal_check(m.warp_size == 64, "ds_read_b128 phases are defined for wave64");
      // Phase p holds the 4-lane runs starting at kRuns[p][0] and kRuns[p][1].
      static constexpr int kRuns[8][2] = {{0, 20}, {32, 52}, {4, 16},  {36, 48},
                                          {8, 28}, {40, 60}, {12, 24}, {44, 56}};
      for (int p = 0; p < 8; ++p) {
        for (int start : kRuns[p]) {
          for (int l = 0; l < 4; ++l) phase_of[start + l] = static_cast<int8_t>(p);
        }
      }
      return 8;
    }
  }
  for (int l = 0; l < m.warp_size; ++l) phase_of[l] = static_cast<int8_t>(l / group);
  return m.warp_size / group;
}

}  // namespace

std::vector<std::vector<int>> BankModel::phases(int access_bytes, bool ldmatrix, bool write) const {
  std::array<int8_t, 64> phase_of{};
  int n = assign_phases(*this, access_bytes, ldmatrix, write, phase_of);
  std::vector<std::vector<int>> groups(n);
  for (int l = 0; l < warp_size; ++l) groups[phase_of[l]].push_back(l);
  return groups;
}

BankCount count_wavefronts(const BankModel& model, std::span<const int64_t> byte_addr,
                           uint64_t active_mask, int access_bytes, bool ldmatrix, bool write) {
  internal_check(model.num_banks > 0 && model.num_banks <= 64 && model.bank_bytes >= 4,
                 "bank model out of range");
  std::array<int8_t, 64> phase_of{};
  int num_phases = assign_phases(model, access_bytes, ldmatrix, write, phase_of);
  // Words one phase touches: at most 64 lanes x (16 / 4 + 1) words (5 when misaligned).
  std::array<int64_t, 64 * 5> words{};
  std::array<int, 64> per_bank{};
  BankCount count;
  for (int p = 0; p < num_phases; ++p) {
    int n = 0;
    for (int lane = 0; lane < model.warp_size; ++lane) {
      if (phase_of[lane] != p || lane >= static_cast<int>(byte_addr.size()) ||
          !((active_mask >> lane) & 1)) {
        continue;
      }
      int64_t first = floor_div_pos(byte_addr[lane], model.bank_bytes);
      int64_t last = floor_div_pos(byte_addr[lane] + access_bytes - 1, model.bank_bytes);
      for (int64_t w = first; w <= last; ++w) words[n++] = w;
    }
    if (n == 0) continue;
    std::sort(words.begin(), words.begin() + n);
    auto distinct_end = std::unique(words.begin(), words.begin() + n);
    std::fill(per_bank.begin(), per_bank.begin() + model.num_banks, 0);
    int worst = 0;
    for (auto it = words.begin(); it != distinct_end; ++it) {
      int64_t bank = *it % model.num_banks;
      if (bank < 0) bank += model.num_banks;
      worst = std::max(worst, ++per_bank[bank]);
    }
    count.wavefronts += worst;
    count.ideal_wavefronts += 1;
    count.max_degree = std::max(count.max_degree, worst);
  }
  count.bank_conflicts = count.wavefronts - count.ideal_wavefronts;
  return count;
}

}  // namespace tessel
