// Element-wise (2-byte) accesses of MFMA operand tiles on gfx942: why a masked element load
// cannot be conflict-free under a layout that keeps 8-byte granules (the parity argument of
// docs/layouts.md), and the T.Parallel store whose vector is capped at the granule, which is.
// Expected numbers are derived by hand in the comments.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "core/bank_rules.h"
#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/thread_interpreter.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

/// 64 threads store a guarded (64 x 16) f16 tile into shared memory in swizzle_mfma and copy
/// it out: the store of convolution.py's im2col tile.
Kernel guarded_store() {
  KernelBuilder T("guarded_store");
  auto A = T.tensor("A", {64, 16}, DataType::f16());
  auto B = T.tensor("B", {64, 16}, DataType::f16());
  T.kernel1(1, 64);
  auto S = T.alloc_shared("S", {64, 16}, DataType::f16());
  T.annotate_layout({{S, swizzle_mfma(64, 16, DataType::f16())}});
  T.parallel(64, 16, [&](Var i, Var j) {
    S(i, j) = if_then_else(j < 15, A(i, j), make_const(DataType::f16(), 0));
  });
  T.copy(S, B);
  return T.finish();
}

}  // namespace

TEST_SUITE("AMD element accesses") {
  TEST_CASE("masked 2-byte loads in MFMA order are 2-way under any 8-byte-granule layout") {
    // The MFMA 16x16x16 operand order gives lane l row l % 16 and k = 4 (l / 16) + v; a masked
    // load reads one 2-byte element v at a time, and ds_read_u16 serves lanes 0-31 in one phase:
    // rows 0-15 at granules 0 and 1. A layout that keeps 8-byte granules whole and aligned puts
    // element v of every granule in word v / 2 of an 8-byte slot, so its bank has the parity of
    // v / 2: the 32 lanes (32 different words, no two lanes share one) meet in the 16 banks of
    // that parity, 2 words a bank: 2-way whatever the granule permutation. Checked here for
    // swizzle_mfma at 32, 64 and 128 columns, every v.
    BankModel amd = BankModel::amd_cdna3();
    for (int64_t cols : {32, 64, 128}) {
      Layout l = swizzle_mfma(64, cols, DataType::f16());
      for (int v = 0; v < 4; ++v) {
        std::vector<int64_t> addr(64, 0);
        std::set<int> banks;
        for (int lane = 0; lane < 32; ++lane) {
          std::vector<int64_t> o = l.map({lane % 16, 4 * (lane / 16) + v});
          addr[lane] = (o[0] * cols + o[1]) * 2;
          banks.insert(amd.bank_of(addr[lane]));
        }
        INFO("cols " << cols << ", v " << v);
        CHECK(banks.size() == 16);
        BankCount c = count_wavefronts(amd, addr, full_mask(32), 2, false);
        CHECK(c.max_degree == 2);
      }
    }
  }

  TEST_CASE("a guarded T.Parallel store into swizzle_mfma is one 8-byte granule a lane") {
    // swizzle_mfma(64, 16, f16) keeps runs of 4 elements (one 8-byte granule), not the 8 of a
    // 16-byte vector: the loop's vector is capped at 4, so each lane stores whole granules
    // (ds_write_b64) instead of 2-byte elements. Lane t of iteration n stores elements
    // 4 t .. 4 t + 3 of rows 16 n + t / 4: the 16 lanes of a phase fill rows 4 p .. 4 p + 3, the
    // 4 granules each, one 128-byte line (4 rows of 32 bytes) whose 16 slots the XOR keeps
    // distinct: 4 stores of 4 phases, 16 wavefronts, no conflict.
    Kernel kernel = guarded_store();
    const Target& gfx942 = find_target("gfx942");
    LoweredKernel lowered = lower_kernel(kernel, gfx942);
    std::string text = print_kernel(lowered.kernel);
    CHECK(text.find("T.vectorized(4)") != std::string::npos);
    KernelProofs proofs = prove_kernel(lowered, gfx942);
    bool seen = false;
    for (const KernelCheck& c : proofs.checks) {
      if (c.what.find("store S[") == std::string::npos) continue;
      seen = true;
      INFO(c.what);
      CHECK(c.what.find("8 B per lane") != std::string::npos);
      CHECK(c.result == "proved");
    }
    CHECK(seen);
    TensorMap tensors;
    tensors.emplace("A", HostTensor(DataType::f16(), {64, 16}));
    tensors.emplace("B", HostTensor(DataType::f16(), {64, 16}));
    ThreadRunResult run = run_thread_level(lowered.kernel, tensors, ThreadRunOptions{});
    CHECK(run.report.total.bank_conflicts == 0);
    CHECK(run.report.findings.empty());
  }
}  // TEST_SUITE
