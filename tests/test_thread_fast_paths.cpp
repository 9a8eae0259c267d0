// The thread-level interpreter's shortcuts (interp/thread_program.h): which expression nodes the
// compiler marks uniform (one lane computes them) or thread-invariant (cached per warp), which
// global buffers are read-only for the launch (the global race detectors skip their loads), and
// that the shortcuts leave the counts they could disturb as a lane-by-lane run would give them.
#include <doctest/doctest.h>

#include <functional>

#include "core/builder.h"
#include "core/intrinsics.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "interp/thread_program.h"

using namespace tessel;

namespace {

const DataType kF32 = DataType::f32();

/// The first statement of kind `op` in `s`, depth first.
const CStmt* find_stmt(const CStmt* s, SOp op) {
  if (s->op == op) return s;
  for (const CStmt* c : s->body) {
    if (const CStmt* f = find_stmt(c, op)) return f;
  }
  return nullptr;
}

/// for k in T.serial(3): B[bx * 192 + k * 64 + tx] = A[tx // 4 % 8 + bx * 8], 2 blocks of 64
/// threads (each block writes its own 192 elements of B).
Kernel mixed_kernel() {
  KernelBuilder T("mixed");
  auto A = T.tensor("A", {16}, kF32);
  auto B = T.tensor("B", {384}, kF32);
  Var bx = T.kernel1(2, 64);
  Var tx = T.get_thread_binding();
  T.serial(
      3, [&](Var k) { B(bx * 192 + k * 64 + tx) = A(tx / 4 % 8 + bx * 8); }, "k");
  return T.finish();
}

}  // namespace

TEST_SUITE("thread interpreter: shortcuts") {
  TEST_CASE("loop counters with uniform bounds are uniform, thread-index trees are cached") {
    Kernel k = mixed_kernel();
    auto prog = compile_thread_program(k);
    const CStmt* store = find_stmt(prog->body, SOp::kStore);
    REQUIRE(store != nullptr);
    // The store's index (bx * 192 + k * 64) + tx: k is uniform, tx is not, and k changes
    // between iterations, so the sum is neither uniform nor cached; bx * 192 + k * 64 is uniform.
    const CExpr* index = store->indices.at(0);
    REQUIRE(index->op == XOp::kAdd);
    CHECK_FALSE(index->uniform);
    CHECK(index->cache < 0);
    CHECK(index->a->uniform);
    // The value A[tx // 4 % 8 + bx * 8]: a load is never uniform; its index uses only the thread
    // and block indices, so it is one cached tree of 9 nodes (tx, 4, //, 8, %, bx, 8, *, +).
    const CExpr* load = store->a;
    REQUIRE(load->op == XOp::kLoad);
    CHECK_FALSE(load->uniform);
    const CExpr* load_index = load->indices.at(0);
    CHECK(load_index->cache >= 0);
    CHECK(load_index->nodes == 9);
    CHECK(load_index->b->uniform);    // bx * 8
    CHECK(load_index->b->cache < 0);  // only the outermost invariant node has a slot
    CHECK(prog->num_cached == 1);
  }

  TEST_CASE("lane-operations with uniform and cached nodes are those of a lane-by-lane run") {
    // Per thread: the loop bounds 0 and 3 (2 nodes) once, then per iteration the store's index
    // (bx, 192, *, k, 64, *, +, tx, +: 9 nodes), the load and its 9-node index (10) and the
    // store (1): 20. 2 blocks x 64 threads x (2 + 3 x 20) = 7936.
    Kernel k = mixed_kernel();
    TensorMap t = make_tensors(k, {}, {"B"}, 0);
    ThreadRunResult r = run_thread_level(k, t);
    CHECK(r.lane_ops == 7936);
    CHECK(r.report.findings.empty());
    // Block 1, thread 37, k = 1: B[192 + 64 + 37] = A[37 // 4 % 8 + 8].
    CHECK(t.at("B").at(192 + 64 + 37) == t.at("A").at(37 / 4 % 8 + 8));
  }

  TEST_CASE("a global buffer no statement or written operand touches is read-only") {
    KernelBuilder T("rw");
    auto A = T.tensor("A", {32}, kF32);
    auto B = T.tensor("B", {32}, kF32);
    auto C = T.tensor("C", {1}, kF32);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    B(tx) = A(tx);
    BufferRegion r = C(0).region();
    IntrinsicArg dst{r.buffer, {}, Expr()};
    for (const Range& range : r.ranges) dst.indices.push_back(range.min);
    T.intrinsic(IntrinsicId::kAtomAdd, {dst, IntrinsicArg{Buffer(), {}, A(tx)}});
    auto prog = compile_thread_program(T.finish());
    REQUIRE(prog->num_globals == 3);
    CHECK_FALSE(prog->buffers[0].written);  // A: only loaded
    CHECK(prog->buffers[1].written);        // B: stored
    CHECK(prog->buffers[2].written);        // C: an atomic's destination
  }

  TEST_CASE("a race on a written global is still found when another global is read-only") {
    // Every thread reads A (read-only) and stores its value to B[0]: 32 different values, one
    // element, no barrier: a write conflict on B, none on A.
    KernelBuilder T("conflict");
    auto A = T.tensor("A", {32}, kF32);
    auto B = T.tensor("B", {1}, kF32);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    B(0) = A(tx);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 0);
    for (int64_t i = 0; i < 32; ++i) t.at("A").set(i, static_cast<double>(i));
    ThreadRunOptions o;
    o.workers = 1;
    ThreadRunResult res = run_thread_level(k, t, o);
    REQUIRE(res.report.findings.size() == 1);
    CHECK(res.report.findings[0].kind == sim::FindingKind::kWriteConflict);
    CHECK(res.report.findings[0].buffer == "B");
  }
}
