// T.gemm on sm90 lowered to wgmma.mma_async: the plan and its fallback to mma.sync, the lowered
// calls, thread level against tile level (no findings, no bank conflicts), verify's descriptor
// proofs (and a deliberately wrong layout that fails with a counterexample), and the sm_90a CUDA.
#include <doctest/doctest.h>
#include <z3++.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/builtin_layouts.h"
#include "core/gemm_partition.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/registry.h"
#include "tests/cli_runner.h"
#include "verify/wgmma_proofs.h"

using namespace tessel;

namespace {

Kernel gemm(std::map<std::string, std::string> defines, const char* name = "gemm") {
  const Example* e = find_example(name);
  REQUIRE(e != nullptr);
  return e->build(make_params(*e, defines));
}

/// Calls of each instruction in a lowered kernel, by name.
std::map<std::string, int> calls(const Kernel& k) {
  std::map<std::string, int> n;
  for_each_stmt(k->body, [&](const Stmt& s) {
    if (const auto* c = s.as<IntrinsicCallNode>()) ++n[intrinsic_info(c->intrinsic).name];
  });
  return n;
}

const std::map<std::string, std::string> kSmall = {{"M", "128"}, {"N", "128"}, {"K", "64"}};

}  // namespace

TEST_SUITE("wgmma: lowering T.gemm on sm90") {
  TEST_CASE("the GEMM example lowers to wgmma on sm90 and keeps mma.sync on sm80") {
    LoweredKernel l90 = lower_kernel(gemm(kSmall), find_target("sm90"));
    auto n90 = calls(l90.kernel);
    // block 128 x 128, K step 32: per k step of the loop 2 steps of 16 x 2 tiles of 64 rows,
    // written as one call inside unrolled/serial loops; no mma.sync, no ldmatrix.
    CHECK(n90["wgmma_ss_f16"] >= 1);
    CHECK(n90["mma_m16n8k16_f16"] == 0);
    CHECK(n90["ldmatrix_x4"] == 0);
    CHECK(n90["wgmma_commit_group"] >= 1);
    CHECK(n90["wgmma_wait_group"] >= 1);
    LoweredKernel l80 = lower_kernel(gemm(kSmall), find_target("sm80"));
    auto n80 = calls(l80.kernel);
    CHECK(n80["wgmma_ss_f16"] == 0);
    CHECK(n80["mma_m16n8k16_f16"] >= 1);
  }

  TEST_CASE("the plan: warpgroups, descriptors and the reasons to keep mma.sync") {
    const Target& sm90 = find_target("sm90");
    Kernel k = gemm(kSmall);
    const GemmOp* op = nullptr;
    for_each_stmt(k->body, [&](const Stmt& s) {
      if (const auto* t = s.as<TileOpCallNode>()) {
        if (const auto* g = dynamic_cast<const GemmOp*>(t->op.get())) op = g;
      }
    });
    REQUIRE(op != nullptr);
    GemmPlan p = plan_gemm(*op, "gemm", sm90, 128);
    CHECK(p.path == GemmPath::kWgmma);
    CHECK(p.warpgroups == 1);
    CHECK(p.tiles_m() == 2);  // 128 rows = 2 x 64
    // A 128 x 32 f16: rows of 64 bytes -> 64 B swizzle, K-major, SBO 8 rows x 64 = 512.
    CHECK(p.wgmma_a.swizzle == 64);
    CHECK_FALSE(p.wgmma_a.mn_major);
    CHECK(p.wgmma_a.sbo == 512);
    // B 32 x 128 f16, N-major: rows of 256 bytes -> 128 B panels of 64 columns; LBO = the
    // panel, 32 rows x 128 B = 4096; SBO = 8 k rows x 128 B = 1024.
    CHECK(p.wgmma_b.swizzle == 128);
    CHECK(p.wgmma_b.mn_major);
    CHECK(p.wgmma_b.lbo == 4096);
    CHECK(p.wgmma_b.sbo == 1024);
    // 64 threads are half a warpgroup: mma.sync, with the reason.
    GemmPlan half = plan_gemm(*op, "gemm", sm90, 64);
    CHECK(half.path == GemmPath::kMma);
    CHECK(half.why_not_wgmma.find("not a whole number of warpgroups") != std::string::npos);
  }

  TEST_CASE("tessel lower notes each gemm that sm90 keeps on mma.sync, with the reason") {
    CliResult half =
        run_tessel({"lower", "gemm", "--target", "sm90", "-D", "M=128", "-D", "N=128", "-D", "K=64",
                    "-D", "threads=64", "-D", "block_M=64", "-D", "block_N=64"});
    INFO(half.out << half.err);
    REQUIRE(half.status == 0);
    CHECK(half.out.find(": mma instead of wgmma: threads=64 is not a whole number of warpgroups "
                        "(128)\n") != std::string::npos);
    CHECK(half.out.rfind("# note: T.gemm at ", 0) == 0);
    CliResult whole = run_tessel(
        {"lower", "gemm", "--target", "sm90", "-D", "M=128", "-D", "N=128", "-D", "K=64"});
    CHECK(whole.out.find("# note:") == std::string::npos);
    CliResult sm80 = run_tessel({"lower", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "-D",
                                 "threads=64", "-D", "block_M=64", "-D", "block_N=64"});
    CHECK(sm80.out.find("# note:") == std::string::npos);  // no wgmma to miss on sm80
  }

  TEST_CASE("gemm on sm90 at thread level equals the tile level, no findings, no conflicts") {
    for (const char* dtype : {"float16", "bfloat16"}) {
      INFO(dtype);
      CliResult r =
          run_tessel({"run", "gemm", "--level", "thread", "--target", "sm90", "--json", "-D",
                      "M=128", "-D", "N=128", "-D", "K=64", "-D", std::string("dtype=") + dtype});
      INFO(r.out << r.err);
      REQUIRE(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["passed"] == true);
      CHECK(j["sim"]["findings"].empty());
      CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
    }
  }

  TEST_CASE("gemm_rs (A in registers) on sm90 lowers to wgmma_rs and equals the tile level") {
    LoweredKernel l = lower_kernel(gemm(kSmall, "gemm_rs"), find_target("sm90"));
    auto n = calls(l.kernel);
    CHECK(n["wgmma_rs_f16"] >= 1);
    CHECK(n["mma_m16n8k16_f16"] == 0);
    CliResult r = run_tessel({"run", "gemm_rs", "--level", "thread", "--target", "sm90", "--json",
                              "-D", "M=128", "-D", "N=128", "-D", "K=64"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["sim"]["findings"].empty());
    CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
  }

  TEST_CASE("the kernel file gemm.py on sm90 runs at thread level like the built-in") {
    CliResult r = run_tessel({"run", std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/gemm.py",
                              "--level", "thread", "--target", "sm90", "--json", "-D", "M=128",
                              "-D", "N=128", "-D", "K=64"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["sim"]["findings"].empty());
    CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
  }
}

TEST_SUITE("wgmma: verify") {
  TEST_CASE("verify proves the GEMM's wgmma descriptors equal its shared layouts") {
    CliResult r = run_tessel({"verify", "gemm", "--target", "sm90", "--json", "-D", "M=128", "-D",
                              "N=128", "-D", "K=64"});
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    int descriptors = 0;
    for (const auto& c : j["checks"]) {
      std::string what = c["what"];
      if (what.rfind("wgmma descriptor of", 0) != 0) continue;
      ++descriptors;
      CHECK(c["result"] == "proved");
    }
    CHECK(descriptors == 2);  // A_shared and B_shared
  }

  TEST_CASE("a descriptor that does not match the layout fails with the element") {
    // A 64 x 32 f16 tile stored row-major, read through the 64-byte K-major descriptor the
    // wgmma plan uses for it: row 2's first chunk is read from chunk 1 (2 / 2 = 1 XOR 0).
    WgmmaOperandDesc d{64, 16, 512, false};
    KernelCheck c = prove_wgmma_descriptor("A_shared", "A of wgmma_ss_f16",
                                           Layout::row_major({64, 32}), d, 2, 64, 10000);
    INFO(c.what << " " << c.counterexample.value_or(""));
    CHECK(c.result == "failed");
    REQUIRE(c.counterexample.has_value());
    CHECK(c.counterexample->find("A_shared[") != std::string::npos);
    // The layout the wgmma plan chooses for the same tile proves; so does the sm80 gemm's
    // (TileLang's 64-byte swizzle of 32-element rows is the same permutation).
    WgmmaOperand o{false, 64, 16, 512, 64, 32};
    Layout chosen = wgmma_operand_layout(o, DataType::f16());
    CHECK(prove_wgmma_descriptor("A_shared", "A", chosen, d, 2, 64, 10000).result == "proved");
    CHECK(prove_wgmma_descriptor(
              "A_shared", "A", gemm_operand_layout(64, 32, DataType::f16(), true), d, 2, 64, 10000)
              .result == "proved");
    // ... but not through a descriptor of another swizzle.
    WgmmaOperandDesc d128{128, 16, 1024, false};
    CHECK(prove_wgmma_descriptor("A_shared", "A", chosen, d128, 2, 64, 10000).result == "failed");
  }
}

TEST_SUITE("wgmma: emit") {
  TEST_CASE("the sm90 CUDA of the GEMM spells wgmma with descriptors and compiles for sm_90a") {
    const Target& sm90 = find_target("sm90");
    EmittedSource src = emit_source(lower_kernel(gemm(kSmall), sm90).kernel, sm90);
    for (const char* want :
         {"wgmma.fence.sync.aligned;", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
          "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;",
          "tessel_wgmma_desc(", "__align__(1024)"}) {
      CHECK_MESSAGE(src.code.find(want) != std::string::npos, want);
    }
    std::string dir = (std::filesystem::temp_directory_path() / "tessel_wgmma_nvcc").string();
    std::filesystem::create_directories(dir);
    CompileResult c = compile_device_code(src, sm90, dir);
    if (!c.skipped.empty()) {
      MESSAGE("skipped: " << c.skipped);
    } else {
      CHECK_MESSAGE(c.compiled, c.log);
    }
  }

  TEST_CASE("a wgmma descriptor is its buffer's descriptor plus the operand's 16-byte offset") {
    // gemm 128x128x64 on sm90: 128x128x32 tiles, 3 stages (k < 2, so k % 3 is k). A_shared is
    // one 128x32 f16 tile per stage (8192 bytes = 512 units of 16 B), K-major, 64-byte swizzle:
    // rows 64 i .. of k step ko start at byte 64 i * 64 + 32 ko (row 64 i's swizzle XOR,
    // ((byte >> 7) & 3) << 4, is 0), i.e. 256 i + 2 ko units. B_shared is 32x128 per stage,
    // MN-major, 128-byte swizzle: k step ko starts at row 16 ko, byte 2048 ko (XOR
    // ((2048 ko >> 7) & 7) << 4 = 0), i.e. 128 ko units. The printer writes those offsets
    // before nvcc unrolls i and ko.
    const Target& sm90 = find_target("sm90");
    EmittedSource src = emit_source(lower_kernel(gemm(kSmall), sm90).kernel, sm90);
    CHECK(src.code.find("tessel_wgmma_desc_at(A_shared, ((k * 512) + (((((i * 4096) + (ko * 32)) "
                        "^ (((((i * 4096) + (ko * 32)) >> 7) & 3) << 4)) / 2) / 8)), 16u, 512u, "
                        "2ull);") != std::string::npos);
    CHECK(src.code.find("tessel_wgmma_desc_at(B_shared, ((k * 512) + ((((ko * 2048) ^ ((((ko * "
                        "2048) >> 7) & 7) << 4)) / 2) / 8)), 4096u, 1024u, 1ull);") !=
          std::string::npos);
    CHECK(src.code.find("tessel_wgmma_desc(&") == std::string::npos);
  }

  TEST_CASE(
      "without a bound below 2^18 on the shared addresses the descriptor is built from the "
      "address") {
    const IntrinsicInfo& ss = intrinsic_info(IntrinsicId::kWgmmaSsF16);
    // D, A, B, n, A's swizzle/LBO/SBO/mn_major, B's, scale_d.
    auto text = [](int64_t bound) {
      CallText t;
      t.args = {"&C_local[0]", "&A_shared[8]", "&B_shared[16]", "64", "128", "16", "1024", "0",
                "128",         "16",           "1024",          "0",  "1"};
      t.buffers = {"C_local", "A_shared", "B_shared", "", "", "", "", "", "", "", "", "", ""};
      t.offsets16 = {"", "1", "2", "", "", "", "", "", "", "", "", "", ""};
      t.shared_address_bound = bound;
      return t;
    };
    std::set<std::string> used;
    // 2^18 itself still fits: every address is below it.
    std::string fast = ss.home->call(ss, text(int64_t{1} << 18), used);
    CHECK(fast.find("tessel_wgmma_desc_at(A_shared, 1, 16u, 1024u, 1ull)") != std::string::npos);
    CHECK(fast.find("tessel_wgmma_desc_at(B_shared, 2, 16u, 1024u, 1ull)") != std::string::npos);
    for (int64_t bound : {int64_t{0}, (int64_t{1} << 18) + 16}) {
      std::string slow = ss.home->call(ss, text(bound), used);
      CHECK(slow.find("tessel_wgmma_desc(&A_shared[8], 16u, 1024u, 1ull)") != std::string::npos);
      CHECK(slow.find("tessel_wgmma_desc(&B_shared[16], 16u, 1024u, 1ull)") != std::string::npos);
      CHECK(slow.find("desc_at") == std::string::npos);
    }
  }

  TEST_CASE(
      "adding the 16-byte offset to the descriptor's low word equals the descriptor of the "
      "address, for addresses below 2^18 (Z3)") {
    // tessel_wgmma_desc's low word: ((addr & 0x3FFFF) >> 4) | (lbo >> 4) << 16 (PTX ISA matrix
    // descriptor: start >> 4 in bits 0-13, LBO >> 4 in 16-29); tessel_wgmma_desc_at adds off16
    // to the buffer's. The high word (SBO, swizzle) does not depend on the address.
    z3::context c;
    z3::expr base = c.bv_const("base", 32), off16 = c.bv_const("off16", 32),
             lbo = c.bv_const("lbo16", 32);
    auto low = [&](const z3::expr& addr) {
      return z3::lshr(addr & c.bv_val(0x3FFFF, 32), c.bv_val(4, 32)) |
             z3::shl(lbo, c.bv_val(16, 32));
    };
    z3::expr addr = base + off16 * c.bv_val(16, 32);
    z3::expr claim = low(base) + off16 == low(addr);
    z3::expr common = z3::urem(base, c.bv_val(16, 32)) == c.bv_val(0, 32) &&
                      z3::ult(lbo, c.bv_val(1 << 14, 32)) && z3::ult(off16, c.bv_val(1 << 14, 32));
    z3::solver s(c);
    s.add(common && z3::ult(base, c.bv_val(1 << 18, 32)) && z3::ult(addr, c.bv_val(1 << 18, 32)) &&
          !claim);
    CHECK(s.check() == z3::unsat);
    // The bound is needed: past 2^18 the sum carries into bit 14 (and the mask wraps the address).
    z3::solver t(c);
    t.add(common && z3::ult(base, c.bv_val(1 << 18, 32)) && !claim);
    CHECK(t.check() == z3::sat);
  }

  TEST_CASE("sm80 CUDA of the GEMM has no wgmma") {
    const Target& sm80 = find_target("sm80");
    EmittedSource src = emit_source(lower_kernel(gemm(kSmall), sm80).kernel, sm80);
    CHECK(src.code.find("wgmma") == std::string::npos);
    CHECK(src.code.find("__align__(1024)") == std::string::npos);
  }
}
