// The AMD (gfx90a, gfx942) shared-memory layout of MFMA operands: swizzle_mfma against the CDNA3
// LDS phase rules (REFERENCE.md), each expectation derived by hand in a comment; and verify's
// bank proofs agreeing with the simulator on the accesses the lowering emits.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "core/bank_rules.h"
#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/passes.h"
#include "interp/thread_interpreter.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

const DataType kF16 = DataType::f16();

/// The byte address of element (i, j) of a 2-D layout over elements of `bytes` bytes.
int64_t byte_of(const Layout& l, int64_t i, int64_t j, int64_t bytes) {
  std::vector<int64_t> o = l.map({i, j});
  return (o.size() == 2 ? o[0] * l.output_shape()[1] + o[1]
                        : (o[0] * l.output_shape()[1] + o[1]) * l.output_shape()[2] + o[2]) *
         bytes;
}

/// The 64 lane addresses of the MFMA 16x16x16 operand load at k step `ko` of rows [0, 16):
/// lane l reads row l % 16, k = 16 ko + 4 (l / 16) .. + 3 (8 bytes, one ds_read_b64).
std::vector<int64_t> mfma_operand_read(const Layout& l, int64_t ko) {
  std::vector<int64_t> addr;
  for (int lane = 0; lane < 64; ++lane)
    addr.push_back(byte_of(l, lane % 16, 16 * ko + 4 * (lane / 16), 2));
  return addr;
}

/// 32 lanes each read 4 f16 of a shared tile at a 32-byte stride inside T.vectorized(4), the
/// load in the arm of a T.if_then_else whose condition depends on the vector index.
Kernel select_in_vector_loop() {
  KernelBuilder T("select_in_vector_loop");
  auto B = T.tensor("B", {128}, DataType::f16());
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {512}, DataType::f16());
  T.serial(16, [&](Var i) { S(i * 32 + tx) = cast(DataType::f16(), tx); });
  T.sync_threads();
  T.vectorized(4, [&](Var v) {
    B(tx * 4 + v) = if_then_else(v < 2, S(tx * 16 + v), make_const(DataType::f16(), 0));
  });
  return T.finish();
}

}  // namespace

TEST_SUITE("AMD MFMA operand layouts") {
  TEST_CASE("verify counts a shared load in a T.if_then_else of the vector index per element") {
    // The generated code evaluates `v < 2 ? S[16 tx + v] : 0` element by element (a `?:`), and
    // the thread level masks each element's load by its condition: one 2-byte request per
    // element, never one 8-byte vector. On sm80 (one phase of 32 lanes for 2 bytes) lane t reads
    // word 8 t (element 0 or 1 of its run): bank 8 t % 32, so lanes t, t + 4, ..., t + 28 share a
    // bank with 8 different words: 8-way. As one 8-byte vector (two phases of 16) it would be
    // 4-way: verify must report the 8-way degree, and the simulator the same wavefronts.
    Kernel kernel = select_in_vector_loop();
    const Target& sm80 = find_target("sm80");
    LoweredKernel lowered = lower_kernel(kernel, sm80);
    KernelProofs proofs = prove_kernel(lowered, sm80);
    bool seen = false;
    for (const KernelCheck& c : proofs.checks) {
      if (c.what.find("load S[") == std::string::npos) continue;
      seen = true;
      INFO(c.what);
      CHECK(c.what.find("2 B per lane") != std::string::npos);
      CHECK(c.result == "failed");
      REQUIRE(c.counterexample);
      CHECK(c.counterexample->find("8-way bank conflict") != std::string::npos);
    }
    CHECK(seen);
    TensorMap tensors;
    tensors.emplace("B", HostTensor(DataType::f16(), {128}));
    ThreadRunResult run = run_thread_level(lowered.kernel, tensors, ThreadRunOptions{});
    // Store loop: 16 conflict-free requests. Loads: elements 0 and 1 (v < 2) each one request
    // of 8 wavefronts; elements 2 and 3 load nothing. 16 + 2 requests, 16 + 16 wavefronts.
    CHECK(run.report.total.bank_conflicts == 14);
    CHECK(run.report.total.wavefronts == 32);
  }

  TEST_CASE("swizzle_mfma of a 32-column f16 tile XORs 8-byte granules with the row pair") {
    // vec = 64 / 16 = 4 elements a granule, G = 32 / 4 = 8 granules a row, so a 128-byte line
    // holds per_phase = 16 / 8 = 2 rows and max_phase = min(8, 16 / 2) = 8. The phase of row i
    // is h = (i / 2) % 8 with bits 1 and 2 swapped: bits (i / 2) % 2, (i / 8) % 2, (i / 4) % 2,
    // i.e. h -> phase 0->0 1->1 2->4 3->5 4->2 5->3 6->6 7->7; then
    //   (i, j) -> (i, ((j / 4) ^ phase) * 4 + j % 4).
    Layout l = swizzle_mfma(128, 32, kF16);
    CHECK(l.map({0, 0}) == std::vector<int64_t>{0, 0});
    CHECK(l.map({1, 5}) == std::vector<int64_t>{1, 5});     // phase 0: unchanged
    CHECK(l.map({2, 0}) == std::vector<int64_t>{2, 4});     // h 1, phase 1: granule 0 ^ 1 = 1
    CHECK(l.map({5, 6}) == std::vector<int64_t>{5, 22});    // h 2, phase 4: 1 ^ 4 = 5, offset 2
    CHECK(l.map({9, 0}) == std::vector<int64_t>{9, 8});     // h 4, phase 2: 0 ^ 2 = 2
    CHECK(l.map({15, 31}) == std::vector<int64_t>{15, 3});  // h 7, phase 7: 7 ^ 7 = 0, offset 3
    CHECK(l.map({16, 4}) == std::vector<int64_t>{16, 4});   // row 16: h 0 again
  }

  TEST_CASE("one ds_read_b64 phase of the MFMA operand load hits 16 bank pairs") {
    // Lanes 0-15 (one phase of 16) read rows 0-15 at granule 0. Row r starts at byte 64 r, so
    // its first word is in bank (16 r + 2 phase(r)) % 32 = 16 (r % 2) + 2 phase(r), with the
    // phases of the test above:
    //   r:     0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
    //   phase: 0  0  1  1  4  4  5  5  2  2  3  3  6  6  7  7
    //   bank:  0 16  2 18  8 24 10 26  4 20  6 22 12 28 14 30
    // 16 distinct even banks, each lane taking b and b + 1: all 32 banks once, no conflict.
    Layout l = swizzle_mfma(128, 32, kF16);
    BankModel amd = BankModel::amd_cdna3();
    std::set<int> banks;
    for (int r = 0; r < 16; ++r) banks.insert(amd.bank_of(byte_of(l, r, 0, 2)));
    CHECK(banks.size() == 16);
    CHECK(amd.bank_of(byte_of(l, 4, 0, 2)) == 8);
    CHECK(amd.bank_of(byte_of(l, 8, 0, 2)) == 4);
    CHECK(amd.bank_of(byte_of(l, 15, 0, 2)) == 30);
    for (int64_t ko = 0; ko < 2; ++ko) {
      BankCount c = count_wavefronts(amd, mfma_operand_read(l, ko), full_mask(64), 8, false);
      CHECK(c.wavefronts == 4);  // four phases of 16 lanes, one wavefront each
      CHECK(c.bank_conflicts == 0);
    }
  }

  TEST_CASE("the sm80 64B swizzle leaves the same MFMA load 2-way conflicted on gfx942") {
    // swizzle_64b permutes 16-byte chunks with the period of 8 rows: rows r and r + 8 put the
    // same granule at the same offset of their 128-byte line (64 r + 64 (r + 8) = 512 bytes
    // apart, a multiple of 128), so rows 0 and 8 share banks: 2 wavefronts in each phase.
    Layout l = swizzle_64b(128, 32, kF16);
    BankCount c =
        count_wavefronts(BankModel::amd_cdna3(), mfma_operand_read(l, 0), full_mask(64), 8, false);
    CHECK(c.max_degree == 2);
    CHECK(c.wavefronts == 8);
  }

  TEST_CASE("2-byte accumulator stores along rows r and r + 4 are conflict-free") {
    // An MFMA 16x16 accumulator copied out: lane l writes row 4 (l / 16) + reg, column l % 16,
    // 2 bytes; one ds_write_b16 phase is lanes 0-31, rows reg and reg + 4. In the 32-column
    // tile, row 1 (phase 0) holds columns 0-15 in granules 0-3 = bytes 64-95 of line 0, banks
    // 16-23; row 5 (phase 4) in granules 4-7 = bytes 64 + 32 .. 64 + 63 of its line, banks 24-31.
    // With (i / 2) % 8 unswapped row 5 would have phase 2, granules 0-3 again: banks 16-23, 2-way.
    Layout l = swizzle_mfma(16, 32, kF16);
    for (int reg = 0; reg < 4; ++reg) {
      std::vector<int64_t> addr;
      for (int lane = 0; lane < 64; ++lane)
        addr.push_back(byte_of(l, 4 * (lane / 16) + reg, lane % 16, 2));
      BankCount c = count_wavefronts(BankModel::amd_cdna3(), addr, full_mask(64), 2, false, true);
      CHECK(c.wavefronts == 2);  // two phases of 32 lanes, one wavefront each
      CHECK(c.bank_conflicts == 0);
    }
    CHECK(BankModel::amd_cdna3().bank_of(byte_of(l, 1, 0, 2)) == 16);
    CHECK(BankModel::amd_cdna3().bank_of(byte_of(l, 5, 0, 2)) == 24);
  }

  TEST_CASE("a 16-column tile also trades rows within a line, parting rows r and r + 4") {
    // f16, 16 columns: vec 4, G = 4 granules (32 bytes) a row, per_phase = 4 rows a line,
    // max_phase = 4, phase L = (i / 4) % 4. Granules XOR L, and row i moves to row
    // 4 (i / 4) + ((i % 4) ^ L) of the storage (its quarter of the 128-byte line).
    Layout l = swizzle_mfma(16, 16, kF16);
    CHECK(l.map({1, 0}) == std::vector<int64_t>{1, 0});  // L 0: unchanged
    CHECK(l.map({5, 0}) == std::vector<int64_t>{4, 4});  // L 1: row 4 + (1 ^ 1), granule 0 ^ 1
    // Row 14: L 3, 14 % 4 = 2, 2 ^ 3 = 1 -> row 13; granule 9 / 4 = 2, 2 ^ 3 = 1 -> column 5.
    CHECK(l.map({14, 9}) == std::vector<int64_t>{13, 5});
    // The MFMA accumulator stores (lanes 0-15 row reg, 16-31 row reg + 4, 2 bytes, one 32-lane
    // phase): row reg in quarter reg of line 0, row reg + 4 in quarter reg ^ 1 of line 1, banks
    // 8 reg .. + 7 and 8 (reg ^ 1) .. + 7: 16 words in 16 banks, one wavefront a phase. Before
    // the row trade both rows took quarter reg: 2-way.
    for (int reg = 0; reg < 4; ++reg) {
      std::vector<int64_t> addr;
      for (int lane = 0; lane < 64; ++lane)
        addr.push_back(byte_of(l, 4 * (lane / 16) + reg, lane % 16, 2));
      BankCount c = count_wavefronts(BankModel::amd_cdna3(), addr, full_mask(64), 2, false, true);
      CHECK(c.wavefronts == 2);
      CHECK(c.bank_conflicts == 0);
    }
    // The MFMA operand load (rows 0-15 at granule 0, 8 bytes, 16-lane phases): row i lands in
    // slot 4 ((i % 4) ^ L) + L of its line, 16 distinct slots.
    BankCount c =
        count_wavefronts(BankModel::amd_cdna3(), mfma_operand_read(l, 0), full_mask(64), 8, false);
    CHECK(c.wavefronts == 4);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("8-byte global-to-LDS stores into swizzle_mfma are conflict-free") {
    // The copy gives lane l granule l of the tile in row-major order: lanes 0-15 (one
    // ds_write_b64 phase) write rows 0 and 1, granules 0-7 each. Both rows have phase 0, so row 0
    // fills bytes 0-63 and row 1 bytes 64-127 of one line: 32 banks, once each.
    Layout l = swizzle_mfma(128, 32, kF16);
    std::vector<int64_t> addr;
    for (int lane = 0; lane < 64; ++lane) addr.push_back(byte_of(l, lane / 8, 4 * (lane % 8), 2));
    BankCount c = count_wavefronts(BankModel::amd_cdna3(), addr, full_mask(64), 8, false, true);
    CHECK(c.wavefronts == 4);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("a 128-column tile XORs granules with the row modulo 16") {
    // G = 32 granules (256 bytes a row): per_phase = 1, max_phase = 16, phase = i % 16. Row r,
    // granule g sits at granule g ^ (r % 16) of the row; rows are 256 bytes, a multiple of the
    // 128-byte line, so lanes 0-15 reading granule 5 of rows 0-15 hit slots (5 ^ r) % 16: all 16.
    Layout l = swizzle_mfma(64, 128, kF16);
    CHECK(l.map({3, 20}) == std::vector<int64_t>{3, 24});      // granule 5 ^ 3 = 6
    CHECK(l.map({17, 127}) == std::vector<int64_t>{17, 123});  // granule 31 ^ 1 = 30, offset 3
    std::set<int64_t> slots;
    for (int r = 0; r < 16; ++r) slots.insert(byte_of(l, r, 20, 2) % 128 / 8);
    CHECK(slots.size() == 16);
  }

  TEST_CASE("the 4-byte granule form spreads 16 rows of 16 bytes over 16 banks") {
    // A packed int8 tile of 16 columns: vec = 4, G = 4 words a row, 32 words a line, so
    // per_phase = 8 rows share a line and max_phase = min(4, 16 / 8) = 2: rows 8-15 XOR their
    // word with 1. Lanes 0-15 reading word 0 of rows 0-15: rows 0-7 banks 0, 4, ..., 28; rows
    // 8-15 banks 1, 5, ..., 29 (word 1 of their row): 16 distinct banks.
    Layout l = swizzle_mfma(128, 16, DataType::i8(), 4);
    CHECK(l.map({8, 0}) == std::vector<int64_t>{8, 4});
    CHECK(l.map({7, 13}) == std::vector<int64_t>{7, 13});
    std::set<int> banks;
    for (int r = 0; r < 16; ++r) banks.insert(BankModel::amd_cdna3().bank_of(byte_of(l, r, 0, 1)));
    CHECK(banks.size() == 16);
  }

  TEST_CASE("mfma_operand_layout picks swizzle_mfma for 16-bit and k-contiguous int8 tiles") {
    CHECK(mfma_operand_layout_kind(128, 32, kF16) == "swizzle_mfma");
    CHECK(mfma_operand_layout_kind(32, 128, kF16, false) == "swizzle_mfma");
    CHECK(mfma_operand_layout(128, 32, kF16) == swizzle_mfma(128, 32, kF16));
    // int8 with k contiguous (the int8 MFMA reads 4 or 8 bytes of a row a lane): 8-byte granules.
    CHECK(mfma_operand_layout_kind(128, 64, DataType::i8()) == "swizzle_mfma");
    CHECK(mfma_operand_layout(64, 32, DataType::i8()) == swizzle_mfma(64, 32, DataType::i8()));
    // int8 with M or N contiguous (1-byte reads): the sm80 rule unchanged.
    CHECK(mfma_operand_layout_kind(128, 64, DataType::i8(), false) ==
          gemm_operand_layout_kind(128, 64, DataType::i8(), false));
    // 24 granules a row is neither a power of two nor a multiple of 16.
    CHECK(mfma_operand_layout_kind(64, 96, kF16) == gemm_operand_layout_kind(64, 96, kF16));
  }

  TEST_CASE("swizzle_mfma refuses rows of 24 granules and odd granules with a user error") {
    CHECK_THROWS_WITH_AS(swizzle_mfma(64, 96, kF16),
                         doctest::Contains("a power of two or a multiple of 16"), UserError);
    CHECK_THROWS_WITH_AS(swizzle_mfma(64, 64, kF16, 2), doctest::Contains("4 or 8 bytes"),
                         UserError);
  }
}
