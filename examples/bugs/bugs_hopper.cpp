// Deliberately broken Hopper (sm90) kernels, one per finding of the wgmma, proxy-fence and TMA
// store detectors, each with a fixed twin (-D fixed=true). The wgmma kernels compute C (64 x 32,
// f32) = A (64 x 32) B (32 x 32) in two k steps of 16 by one warpgroup issuing wgmma m64n32k16;
// B's two steps sit in shared memory N-major with the 64-byte swizzle, written out by hand as in
// bugs_wgmma.cpp: element (k, n) of a step at k * 32 + ((n / 8) ^ (k / 2 % 4)) * 8 + n % 8.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

IntrinsicArg at(const BufferRef& b, std::vector<Expr> idx) {
  return IntrinsicArg{b.buffer(), std::move(idx), Expr()};
}
IntrinsicArg imm(int64_t v) { return IntrinsicArg{Buffer(), {}, make_int(v)}; }

/// B's two k steps into B_s (2 x 512): 128 threads, 4 elements each per step.
void fill_b(KernelBuilder& T, BufferRef& B_s, const BufferRef& B, const Var& tx) {
  T.serial(
      8,
      [&](Var i) {
        Expr e = (i % 4) * 128 + tx, s = i / 4, k = e / 32, n = e % 32;
        B_s(s, k * 32 + ((n / 8) ^ (k / 2 % 4)) * 8 + n % 8) = B(s * 16 + k, n);
      },
      "i");
}

/// PTX ISA Figure 149: lane l of warp w holds d_i at row 16 w + l / 4 + 8 ((i / 2) % 2), column
/// 8 (i / 4) + 2 (l % 4) + i % 2.
void store_c(KernelBuilder& T, BufferRef& C, const BufferRef& acc, const Var& tx) {
  T.serial(
      16,
      [&](Var i) {
        Expr w = tx / 32, l = tx % 32;
        C(16 * w + l / 4 + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * (l % 4) + i % 2) = acc(i);
      },
      "i");
}

/// wgmma_rs m64n32k16: D = acc, A = the registers `a` from `a0`, B = step `s` of B_s (N-major,
/// 64-byte swizzle: LBO 1024, SBO 512).
void wgmma_rs(KernelBuilder& T, const BufferRef& acc, const BufferRef& a, Expr a0,
              const BufferRef& B_s, Expr s) {
  T.intrinsic(IntrinsicId::kWgmmaRsF16,
              {at(acc, {make_int(0)}), at(a, {std::move(a0)}), at(B_s, {std::move(s), make_int(0)}),
               imm(32), imm(64), imm(1024), imm(512), imm(1), imm(1)});
}

/// The m16n8k16 A fragment per warp (PTX ISA Figure 148): lane l of warp w holds a_i at row
/// 16 w + l / 4 + 8 ((i / 2) % 2), column 2 (l % 4) + i % 2 + 8 (i / 4) of k step `ko`.
Expr a_element(const BufferRef& A, const Var& tx, Expr ko, Expr i) {
  Expr w = tx / 32, l = tx % 32;
  return A(16 * w + l / 4 + 8 * (i / 2 % 2), ko * 16 + 2 * (l % 4) + i % 2 + 8 * (i / 4));
}

/// What the wgmma kernels share: A, B, C, one warpgroup of 128 threads, B's two k steps in B_s
/// (written out and left unfenced), the accumulators cleared, and the A registers `a`: 8 (one
/// k step, which the kernel loads itself) or 16 (both steps, loaded here).
struct WgmmaKernel {
  BufferRef A, B, C, B_s, a, acc;
  Var tx;
};

WgmmaKernel wgmma_kernel(KernelBuilder& T, int a_registers) {
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  WgmmaKernel k;
  k.A = T.tensor("A", {64, 32}, f16);
  k.B = T.tensor("B", {32, 32}, f16);
  k.C = T.tensor("C", {64, 32}, f32);
  T.kernel1(1, 128);
  k.tx = T.get_thread_binding();
  k.B_s = T.alloc_shared("B_s", {2, 512}, f16);
  k.a = T.alloc_local("a", {a_registers}, f16);
  k.acc = T.alloc_local("acc", {16}, f32);
  T.serial(
      16, [&](Var i) { k.acc(i) = make_const(f32, 0); }, "i");
  if (a_registers == 16) {
    T.serial(
        16, [&](Var i) { k.a(i) = a_element(k.A, k.tx, i / 8, i % 8); }, "i");
  }
  fill_b(T, k.B_s, k.B, k.tx);
  return k;
}

/// The reference of the wgmma kernels: C = A B over K = 32.
void gemm_reference(const Params&, TensorMap& t) {
  const HostTensor &a = t.at("A"), &b = t.at("B");
  HostTensor& c = t.at("C");
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 32; ++k) s += a.at(i * 32 + k) * b.at(k * 32 + j);
      c.set(i * 32 + j, s);
    }
  }
}

/// Each k step's A fragment is loaded into the registers `a` and multiplied by wgmma_rs. The
/// broken kernel refills `a` for step 1 while step 0's wgmma, which reads them, is still
/// pending; the fixed twin waits (wgmma_wait_group(0)) before the refill.
Kernel build_wgmma_rs_overwrite(const Params& p) {
  const bool fixed = p.boolean("fixed");
  KernelBuilder T("bug_wgmma_rs_overwrite");
  auto [A, B, C, B_s, a, acc, tx] = wgmma_kernel(T, 8);
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});  // generic writes -> async proxy
  T.sync_threads();
  T.serial(
      2,
      [&](Var ko) {
        if (fixed) T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
        T.serial(
            8, [&](Var i) { a(i) = a_element(A, tx, ko, i); }, "i");
        T.intrinsic(IntrinsicId::kWgmmaFence, {});
        wgmma_rs(T, acc, a, make_int(0), B_s, ko);
        T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
      },
      "ko");
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  store_c(T, C, acc, tx);
  return T.finish();
}

/// Both k steps' A fragments sit in registers (a[8 ko + i]); after step 0 the partial product is
/// halved by the threads' own code, and step 1 accumulates onto it. The broken kernel issues
/// step 1's wgmma with no wgmma.fence after the halving; the fixed twin fences first.
Kernel build_wgmma_missing_fence(const Params& p) {
  const bool fixed = p.boolean("fixed");
  KernelBuilder T("bug_wgmma_missing_fence");
  auto [A, B, C, B_s, a, acc, tx] = wgmma_kernel(T, 16);
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.intrinsic(IntrinsicId::kWgmmaFence, {});
  wgmma_rs(T, acc, a, make_int(0), B_s, make_int(0));
  T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  T.serial(
      16, [&](Var i) { acc(i) = acc(i) * make_const(DataType::f32(), 0.5); }, "i");
  if (fixed) T.intrinsic(IntrinsicId::kWgmmaFence, {});
  wgmma_rs(T, acc, a, make_int(8), B_s, make_int(1));
  T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  store_c(T, C, acc, tx);
  return T.finish();
}

/// Both k steps' A fragments sit in registers (a[8 ko + i]); each step's wgmma_rs is committed as
/// its own group and the loop keeps one group in flight (wgmma_wait_group(1) after each commit,
/// as a pipelined main loop does). The broken kernel stores the accumulators right after the
/// loop: step 1's wgmma is still pending when the threads read acc and when the warps end. The
/// fixed twin drains the last group with wgmma_wait_group(0) first.
Kernel build_wgmma_unwaited(const Params& p) {
  const bool fixed = p.boolean("fixed");
  KernelBuilder T("bug_wgmma_unwaited");
  auto [A, B, C, B_s, a, acc, tx] = wgmma_kernel(T, 16);
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.intrinsic(IntrinsicId::kWgmmaFence, {});
  T.serial(
      2,
      [&](Var ko) {
        wgmma_rs(T, acc, a, ko * 8, B_s, ko);
        T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
        T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(1)});
      },
      "ko");
  if (fixed) T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  store_c(T, C, acc, tx);
  return T.finish();
}

/// The threads store B's two k steps into B_s, then a barrier, then one wgmma_rs per step reads
/// them through its descriptor (the async proxy). The broken kernel has no fence.proxy.async on
/// the way; the fixed twin fences after the stores, before the barrier.
Kernel build_missing_proxy_fence(const Params& p) {
  const bool fixed = p.boolean("fixed");
  KernelBuilder T("bug_missing_proxy_fence");
  auto [A, B, C, B_s, a, acc, tx] = wgmma_kernel(T, 16);
  if (fixed) T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.intrinsic(IntrinsicId::kWgmmaFence, {});
  wgmma_rs(T, acc, a, make_int(0), B_s, make_int(0));
  wgmma_rs(T, acc, a, make_int(8), B_s, make_int(1));
  T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  store_c(T, C, acc, tx);
  return T.finish();
}

/// Block bx stages s = 2 A[32 bx .. 32 bx + 31, :] (32 x 32, f32) in shared memory, fences the
/// stores for the async proxy and lets thread 0 store s to B with a TMA store.
void stage_and_store(KernelBuilder& T, const BufferRef& A, const BufferRef& B, BufferRef& s,
                     const Expr& bx, const Var& tx, Expr row0) {
  T.serial(
      8,
      [&](Var i) {
        Expr r = i * 4 + tx / 32, c = tx % 32;
        s(r, c) = A(bx * 32 + r, c) * make_const(DataType::f32(), 2.0);
      },
      "i");
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.if_then(tx == 0, [&] {
    T.intrinsic(IntrinsicId::kTmaStore2D,
                {at(B, {std::move(row0), make_int(0)}), at(s, {make_int(0), make_int(0)}), imm(32),
                 imm(32), imm(0)});
    T.intrinsic(IntrinsicId::kTmaStoreArrive, {});
  });
}

/// The threads stage s = 2 A (32 x 32, f32) with plain stores, fence them for the async proxy,
/// then a barrier; each thread adds 1 to its own 8 elements of s with a shared atomic
/// (T.atom_add), and after a barrier thread 0 stores s to B with a TMA store. The atomics write
/// through the generic proxy too: the broken kernel has no fence.proxy.async after them, the
/// fixed twin fences before the barrier.
Kernel build_atomic_proxy_fence(const Params& p) {
  const bool fixed = p.boolean("fixed");
  const DataType f32 = DataType::f32();
  KernelBuilder T("bug_atomic_proxy_fence");
  auto A = T.tensor("A", {32, 32}, f32);
  auto B = T.tensor("B", {32, 32}, f32);
  T.kernel1(1, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {32, 32}, f32);
  T.serial(
      8,
      [&](Var i) {
        Expr r = i * 4 + tx / 32, c = tx % 32;
        s(r, c) = A(r, c) * make_const(f32, 2.0);
      },
      "i");
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.serial(
      8,
      [&](Var i) {
        T.intrinsic(IntrinsicId::kAtomAdd, {at(s, {i * 4 + tx / 32, tx % 32}),
                                            IntrinsicArg{{}, {}, make_const(f32, 1.0)}});
      },
      "i");
  if (fixed) T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.if_then(tx == 0, [&] {
    T.intrinsic(IntrinsicId::kTmaStore2D,
                {at(B, {make_int(0), make_int(0)}), at(s, {make_int(0), make_int(0)}), imm(32),
                 imm(32), imm(0)});
    T.intrinsic(IntrinsicId::kTmaStoreArrive, {});
  });
  T.intrinsic(IntrinsicId::kTmaStoreWait, {imm(0)});
  return T.finish();
}

/// Two blocks store their 32-row tiles of 2 A with TMA. The broken kernel places block bx's
/// tile at row 16 bx, so rows 16..31 are written by both blocks; the fixed twin at row 32 bx.
Kernel build_tma_store_overlap(const Params& p) {
  const bool fixed = p.boolean("fixed");
  const DataType f32 = DataType::f32();
  KernelBuilder T("bug_tma_store_overlap");
  auto A = T.tensor("A", {64, 32}, f32);
  auto B = T.tensor("B", {64, 32}, f32);
  Var bx = T.kernel1(2, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {32, 32}, f32);
  stage_and_store(T, A, B, s, bx, tx, fixed ? bx * 32 : bx * 16);
  T.intrinsic(IntrinsicId::kTmaStoreWait, {imm(0)});
  return T.finish();
}

/// One block stores its tile of 2 A to B with TMA, and every thread then reads B back into
/// C = B + 1. The broken kernel reads B before thread 0 waits for the store (the wait comes
/// after a barrier that follows the reads); the fixed twin waits, then a barrier, then reads.
Kernel build_tma_store_read_early(const Params& p) {
  const bool fixed = p.boolean("fixed");
  const DataType f32 = DataType::f32();
  KernelBuilder T("bug_tma_store_read_early");
  auto A = T.tensor("A", {32, 32}, f32);
  auto B = T.tensor("B", {32, 32}, f32);
  auto C = T.tensor("C", {32, 32}, f32);
  T.kernel1(1, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {32, 32}, f32);
  stage_and_store(T, A, B, s, make_int(0), tx, make_int(0));
  if (fixed) {
    T.intrinsic(IntrinsicId::kTmaStoreWait, {imm(0)});
    T.sync_threads();
  }
  T.serial(
      8,
      [&](Var i) {
        Expr r = i * 4 + tx / 32, c = tx % 32;
        C(r, c) = B(r, c) + make_const(f32, 1.0);
      },
      "i");
  if (!fixed) {
    T.sync_threads();
    T.intrinsic(IntrinsicId::kTmaStoreWait, {imm(0)});  // too late
  }
  return T.finish();
}

}  // namespace

Example bug_tma_store_overlap_example() {
  Example e;
  e.name = "bug_tma_store_overlap";
  e.description =
      "BUG (sm90): two blocks' TMA stores write overlapping rows of B (write conflict across "
      "blocks; -D fixed=true gives each block its own rows)";
  e.params = {{"fixed", "false", "store block bx's tile at row 32 bx instead of 16 bx"}};
  e.outputs = {"B"};
  e.build = build_tma_store_overlap;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& b = t.at("B");
    for (int64_t i = 0; i < 64 * 32; ++i) b.set(i, 2.0 * a.at(i));
  };
  return e;
}

Example bug_tma_store_read_early_example() {
  Example e;
  e.name = "bug_tma_store_read_early";
  e.description =
      "BUG (sm90): the threads read back what a TMA store writes before the store's wait (TMA "
      "store race on global memory; -D fixed=true waits, then a barrier, then reads)";
  e.params = {{"fixed", "false", "wait for the store and sync before reading B"}};
  e.outputs = {"B", "C"};
  e.build = build_tma_store_read_early;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor &b = t.at("B"), &c = t.at("C");
    for (int64_t i = 0; i < 32 * 32; ++i) {
      b.set(i, 2.0 * a.at(i));
      c.set(i, 2.0 * a.at(i) + 1.0);
    }
  };
  return e;
}

Example bug_atomic_proxy_fence_example() {
  Example e;
  e.name = "bug_atomic_proxy_fence";
  e.description =
      "BUG (sm90): the threads update a shared tile with atomics and a TMA store then reads it "
      "with no fence.proxy.async after the atomics (proxy_fence; -D fixed=true fences after "
      "them)";
  e.params = {{"fixed", "false", "put T.fence_proxy_async() after the atomics"}};
  e.outputs = {"B"};
  e.build = build_atomic_proxy_fence;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& b = t.at("B");
    for (int64_t i = 0; i < 32 * 32; ++i) b.set(i, 2.0 * a.at(i) + 1.0);
  };
  return e;
}

Example bug_missing_proxy_fence_example() {
  Example e;
  e.name = "bug_missing_proxy_fence";
  e.description =
      "BUG (sm90): the threads store a wgmma's B operand into shared memory and the wgmma reads "
      "it after a barrier with no fence.proxy.async (proxy_fence; -D fixed=true fences after "
      "the stores)";
  e.params = {{"fixed", "false", "put T.fence_proxy_async() after the stores"}};
  e.outputs = {"C"};
  e.build = build_missing_proxy_fence;
  e.reference = gemm_reference;
  return e;
}

Example bug_wgmma_missing_fence_example() {
  Example e;
  e.name = "bug_wgmma_missing_fence";
  e.description =
      "BUG (sm90): the threads halve a wgmma's accumulators and the next wgmma accumulates onto "
      "them with no wgmma.fence between (wgmma_fence; -D fixed=true fences first)";
  e.params = {{"fixed", "false", "put T.wgmma_fence() between the halving and the wgmma"}};
  e.outputs = {"C"};
  e.build = build_wgmma_missing_fence;
  e.reference = [](const Params&, TensorMap& t) {
    // C = (A[:, 0:16] B[0:16, :]) / 2 + A[:, 16:32] B[16:32, :].
    const HostTensor &a = t.at("A"), &b = t.at("B");
    HostTensor& c = t.at("C");
    for (int64_t i = 0; i < 64; ++i) {
      for (int64_t j = 0; j < 32; ++j) {
        double s0 = 0, s1 = 0;
        for (int64_t k = 0; k < 16; ++k) s0 += a.at(i * 32 + k) * b.at(k * 32 + j);
        for (int64_t k = 16; k < 32; ++k) s1 += a.at(i * 32 + k) * b.at(k * 32 + j);
        c.set(i * 32 + j, s0 / 2 + s1);
      }
    }
  };
  return e;
}

Example bug_wgmma_unwaited_example() {
  Example e;
  e.name = "bug_wgmma_unwaited";
  e.description =
      "BUG (sm90): a wgmma GEMM keeps one group in flight per k step and stores its "
      "accumulators without draining the last one: the threads read them before the wgmma "
      "completes (wgmma race) and the warps end with it pending (wgmma_unwaited; -D fixed=true "
      "waits with wgmma_wait_group(0) first)";
  e.params = {{"fixed", "false", "wait for the last wgmma group before the epilogue"}};
  e.outputs = {"C"};
  e.build = build_wgmma_unwaited;
  e.reference = gemm_reference;
  return e;
}

Example bug_wgmma_rs_overwrite_example() {
  Example e;
  e.name = "bug_wgmma_rs_overwrite";
  e.description =
      "BUG (sm90): a wgmma_rs GEMM refills its A registers for the next k step while the "
      "previous wgmma, which reads them, is still pending (wgmma race on the registers; "
      "-D fixed=true waits with wgmma_wait_group(0) first)";
  e.params = {{"fixed", "false", "wait for the previous wgmma before refilling its A registers"}};
  e.outputs = {"C"};
  e.build = build_wgmma_rs_overwrite;
  e.reference = gemm_reference;
  return e;
}

}  // namespace tessel
