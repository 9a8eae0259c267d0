// A deliberately broken wgmma pipeline (sm90): C (64 x 32, f32) = A (64 x 64) B (64 x 32) in four
// k steps of 16 through two shared stages, one warpgroup issuing one wgmma.mma_async m64n32k16
// per step. The broken kernel loads the next step into the other stage right after issuing this
// step's wgmma, while the previous step's wgmma — which reads that stage — is still pending
// (wait_group 1 only comes after the load): a wgmma race. The fixed twin waits
// (T.wgmma_wait_group(1), then T.sync_threads()) before the load.
//
// The stages hold the layouts the descriptors read (PTX ISA "Shared Memory Matrix Layout"),
// written out by hand here:
//   A stage, 64 x 16 K-major, 32-byte swizzle (rows of 32 bytes, SBO = 256): element (m, k) at
//     byte 32 m + 2 k, whose 16-byte chunk bit (bit 4, k / 8) is XORed with bit 7 ((m / 4) % 2):
//     element m * 16 + ((k / 8) ^ (m / 4 % 2)) * 8 + k % 8.
//   B stage, 16 x 32 N-major, 64-byte swizzle (rows of 64 bytes, SBO = 512): element (k, n) at
//     byte 64 k + 2 n, chunk bits 4-5 (n / 8) XORed with bits 7-8 ((k / 2) % 4):
//     element k * 32 + ((n / 8) ^ (k / 2 % 4)) * 8 + n % 8.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

IntrinsicArg at(const BufferRef& b, std::vector<Expr> idx) {
  return IntrinsicArg{b.buffer(), std::move(idx), Expr()};
}
IntrinsicArg imm(int64_t v) { return IntrinsicArg{Buffer(), {}, make_int(v)}; }

Kernel build_wgmma_stage_race(const Params& p) {
  const bool fixed = p.boolean("fixed");
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  KernelBuilder T("bug_wgmma_stage_race");
  auto A = T.tensor("A", {64, 64}, f16);
  auto B = T.tensor("B", {64, 32}, f16);
  auto C = T.tensor("C", {64, 32}, f32);
  T.kernel1(1, 128);
  Var tx = T.get_thread_binding();
  auto A_s = T.alloc_shared("A_s", {2, 1024}, f16);
  auto B_s = T.alloc_shared("B_s", {2, 512}, f16);
  auto acc = T.alloc_local("acc", {16}, f32);
  T.serial(
      16, [&](Var i) { acc(i) = make_const(f32, 0); }, "i");
  // Step `ko` of A and B into stage `s`.
  auto load = [&](Expr s, Expr ko) {
    T.serial(
        8,
        [&](Var i) {
          Expr e = i * 128 + tx, m = e / 16, k = e % 16;
          A_s(s, m * 16 + ((k / 8) ^ (m / 4 % 2)) * 8 + k % 8) = A(m, ko * 16 + k);
        },
        "i");
    T.serial(
        4,
        [&](Var i) {
          Expr e = i * 128 + tx, k = e / 32, n = e % 32;
          B_s(s, k * 32 + ((n / 8) ^ (k / 2 % 4)) * 8 + n % 8) = B(ko * 16 + k, n);
        },
        "i");
    T.intrinsic(IntrinsicId::kFenceProxyAsync, {});  // generic writes -> async proxy
  };
  load(make_int(0), make_int(0));
  T.sync_threads();
  T.serial(
      4,
      [&](Var ko) {
        Expr s = ko % 2;
        T.intrinsic(IntrinsicId::kWgmmaFence, {});
        // m64n32k16: A K-major 32 B swizzle (SBO 256), B N-major 64 B swizzle (SBO 512).
        T.intrinsic(
            IntrinsicId::kWgmmaSsF16,
            {at(acc, {make_int(0)}), at(A_s, {s, make_int(0)}), at(B_s, {s, make_int(0)}), imm(32),
             imm(32), imm(16), imm(256), imm(0), imm(64), imm(1024), imm(512), imm(1), imm(1)});
        T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
        if (fixed) {
          // Retire step ko - 1 (it read stage 1 - s) in every warp before overwriting it.
          T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(1)});
          T.sync_threads();
        }
        T.if_then(ko < 3, [&] { load(1 - s, ko + 1); });
        T.sync_threads();
        if (!fixed) T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(1)});  // too late
      },
      "ko");
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  // PTX ISA Figure 149: lane l of warp w holds d_i at row 16 w + l / 4 + 8 ((i / 2) % 2),
  // column 8 (i / 4) + 2 (l % 4) + i % 2.
  T.serial(
      16,
      [&](Var i) {
        Expr w = tx / 32, l = tx % 32;
        C(16 * w + l / 4 + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * (l % 4) + i % 2) = acc(i);
      },
      "i");
  return T.finish();
}

}  // namespace

Example bug_wgmma_stage_race_example() {
  Example e;
  e.name = "bug_wgmma_stage_race";
  e.description =
      "BUG (sm90): a two-stage wgmma GEMM loads the next k step into the stage the previous, "
      "still pending wgmma reads (wgmma race; -D fixed=true waits with wgmma_wait_group(1) and "
      "a barrier first)";
  e.params = {{"fixed", "false", "wait for the previous wgmma before overwriting its stage"}};
  e.outputs = {"C"};
  e.build = build_wgmma_stage_race;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor &a = t.at("A"), &b = t.at("B");
    HostTensor& c = t.at("C");
    for (int64_t i = 0; i < 64; ++i) {
      for (int64_t j = 0; j < 32; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 64; ++k) s += a.at(i * 64 + k) * b.at(k * 32 + j);
        c.set(i * 32 + j, s);
      }
    }
  };
  return e;
}

}  // namespace tessel
