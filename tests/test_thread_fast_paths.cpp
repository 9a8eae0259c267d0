// The thread-level interpreter's shortcuts (interp/thread_program.h): which expression nodes the
// compiler marks uniform (one lane computes them) or thread-invariant (cached per warp), which
// global buffers are read-only for the launch (the global race detectors skip their loads), and
// that the shortcuts leave the counts they could disturb as a lane-by-lane run would give them.
#include <doctest/doctest.h>

#include <functional>

#include "core/builder.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "examples/registry.h"
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

const DataType kI32 = DataType::i32();

/// The tree (tx * 3 + k) % 5, which the kernels below spell more than once.
Expr phase(const Var& tx, const Var& k) { return (tx * 3 + k) % 5; }

/// for k in T.serial(2): B[k * 32 + tx] = (tx * 3 + k) % 5 + (tx * 3 + k) % 5 * 2, one warp.
Kernel twice_kernel() {
  KernelBuilder T("twice");
  auto B = T.tensor("B", {64}, kI32);
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  T.serial(
      2, [&](Var k) { B(k * 32 + tx) = phase(tx, k) + phase(tx, k) * 2; }, "k");
  return T.finish();
}

/// for k in T.serial(2): B[k * 32 + tx] = T.if_then_else(tx < 16, m, m * 2), then
/// C[k * 32 + tx] = m + 1, with m = (tx * 3 + k) % 5: the two arms each see half the warp.
Kernel split_kernel() {
  KernelBuilder T("split");
  auto B = T.tensor("B", {64}, kI32);
  auto C = T.tensor("C", {64}, kI32);
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  T.serial(
      2,
      [&](Var k) {
        B(k * 32 + tx) = if_then_else(tx < 16, phase(tx, k), phase(tx, k) * 2);
        C(k * 32 + tx) = phase(tx, k) + 1;
      },
      "k");
  return T.finish();
}

/// A run of `k` at thread level with the repeated trees kept or not: the tensors, lane-operations
/// and the report's text, or the user error.
struct Outcome {
  TensorMap tensors;
  int64_t lane_ops = 0;
  std::string report, error;
};
Outcome run_with_reuse(const Kernel& k, const std::vector<std::string>& outputs, bool reuse) {
  Outcome o;
  o.tensors = make_tensors(k, {}, outputs, 3);
  ThreadRunOptions options;
  options.workers = 1;
  options.reuse_repeated_trees = reuse;
  try {
    ThreadRunResult r = run_thread_level(k, o.tensors, options);
    o.lane_ops = r.lane_ops;
    o.report = r.report.text();
  } catch (const UserError& e) {
    o.error = e.what();
  }
  return o;
}

/// The same run with and without the repeated trees kept: equal in everything.
void check_same_with_and_without_reuse(const Kernel& k, const std::vector<std::string>& outputs) {
  Outcome with = run_with_reuse(k, outputs, true), without = run_with_reuse(k, outputs, false);
  CHECK(with.error == without.error);
  CHECK(with.lane_ops == without.lane_ops);
  CHECK(with.report == without.report);
  for (const std::string& name : outputs) {
    const HostTensor &a = with.tensors.at(name), &b = without.tensors.at(name);
    REQUIRE(a.size() == b.size());
    int64_t differ = 0;
    for (int64_t i = 0; i < a.size(); ++i) differ += a.at(i) != b.at(i);
    CHECK_MESSAGE(differ == 0, name << ": " << differ << " elements differ");
  }
}

}  // namespace

TEST_SUITE("thread interpreter: shortcuts") {
  TEST_CASE("a tree spelled twice shares one reuse slot; loads, selects and their parents none") {
    auto prog = compile_thread_program(split_kernel());
    const CStmt* store = find_stmt(prog->body, SOp::kStore);
    REQUIRE(store != nullptr);
    // B[...] = select(tx < 16, m, m * 2): the select is never reused; m is, in both arms, with
    // its operand tx * 3 + k; tx * 3 is thread-invariant and cached instead.
    const CExpr* select = store->a;
    REQUIRE(select->op == XOp::kSelect);
    CHECK(select->reuse < 0);
    const CExpr* m = select->b;
    REQUIRE(m->op == XOp::kFloorMod);
    CHECK(m->reuse >= 0);
    CHECK(select->c->a->reuse == m->reuse);
    CHECK(m->a->reuse >= 0);
    CHECK(m->a->reuse != m->reuse);
    CHECK(m->a->a->cache >= 0);
    CHECK(m->a->a->reuse < 0);
    // m * 2 is spelled once. The trees the statement repeats: m and tx * 3 + k. C's m, and the
    // stores' index k * 32 + tx, are spelled once in each statement: no slot (a register
    // usually changes between statements). Without reuse no tree has one.
    CHECK(select->c->reuse < 0);
    CHECK(prog->num_reused == 2);
    CHECK(store->indices.at(0)->reuse < 0);
    const CStmt* c_store = nullptr;
    std::function<void(const CStmt*)> second = [&](const CStmt* s) {
      if (s->op == SOp::kStore && s != store) c_store = s;
      for (const CStmt* b : s->body) second(b);
    };
    second(prog->body);
    REQUIRE(c_store != nullptr);
    REQUIRE(c_store->a->op == XOp::kAdd);
    CHECK(c_store->a->a->reuse < 0);
    CHECK(compile_thread_program(split_kernel(), false)->num_reused == 0);
  }

  TEST_CASE("lane-operations of a reused tree are those of a lane-by-lane run") {
    // Per thread: the loop bounds (2 nodes), then per iteration the index k * 32 + tx (5), the
    // value m + m * 2 with m = (tx * 3 + k) % 5 (tx, 3, *, k, +, 5, %: 7 nodes; 7 + 2 + 1 = 17)
    // and the store (1): 23. One warp: 32 x (2 + 2 x 23) = 1536.
    Outcome o = run_with_reuse(twice_kernel(), {"B"}, true);
    REQUIRE(o.error.empty());
    CHECK(o.lane_ops == 1536);
    for (int64_t k = 0; k < 2; ++k) {
      for (int64_t tx = 0; tx < 32; ++tx) {
        CHECK(o.tensors.at("B").at(k * 32 + tx) == 3 * ((tx * 3 + k) % 5));
      }
    }
    check_same_with_and_without_reuse(twice_kernel(), {"B"});
  }

  TEST_CASE("a tree reused across arms is recomputed for new lanes and new k") {
    // Per iteration, lanes below 16: B's index 5, the select 1 + tx < 16 (3) + m (7), the
    // store 1 = 17; lanes 16 and up: m * 2 (9) instead of m, 19. C: index 5, m + 1 (9),
    // store 1 = 15. Per thread 2 + 2 x (17 + 15) = 66 or 2 + 2 x (19 + 15) = 70;
    // 16 x 66 + 16 x 70 = 2176.
    Outcome o = run_with_reuse(split_kernel(), {"B", "C"}, true);
    REQUIRE(o.error.empty());
    CHECK(o.lane_ops == 2176);
    for (int64_t k = 0; k < 2; ++k) {
      for (int64_t tx = 0; tx < 32; ++tx) {
        const int64_t m = (tx * 3 + k) % 5;
        CHECK(o.tensors.at("B").at(k * 32 + tx) == (tx < 16 ? m : 2 * m));
        CHECK(o.tensors.at("C").at(k * 32 + tx) == m + 1);
      }
    }
    check_same_with_and_without_reuse(split_kernel(), {"B", "C"});
  }

  TEST_CASE("a division by zero in a reused tree is raised in the lane that meets it") {
    // r = (k * 7 + tx) % (tx - 5), spelled in both arms: lanes 0..3 take the first and divide
    // by -5..-2; the second arm's lanes 4..31 meet tx = 5, a division by zero, which names
    // thread 5.
    KernelBuilder T("divides");
    auto B = T.tensor("B", {64}, kI32);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    T.serial(
        2,
        [&](Var k) {
          Expr r = (k * 7 + tx) % (tx - 5);
          B(k * 32 + tx) = if_then_else(tx < 4, r, r * 2);
        },
        "k");
    Kernel kernel = T.finish();
    Outcome o = run_with_reuse(kernel, {"B"}, true);
    CHECK(o.error.find("thread 5") != std::string::npos);
    CHECK(o.error.find("division by zero") != std::string::npos);
    check_same_with_and_without_reuse(kernel, {"B"});
  }

  TEST_CASE("the fp4 GEMM, which spells its field seven times, runs as without reuse") {
    // Values, lane-operations, every site's counters and the findings.
    const Example* e = find_example("dequant_gemm_fp4");
    REQUIRE(e != nullptr);
    Kernel k = e->build(make_params(*e, {{"M", "128"}, {"N", "128"}, {"K", "128"}}));
    Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
    CHECK(compile_thread_program(lowered)->num_reused > 0);  // the comparison compares something
    check_same_with_and_without_reuse(lowered, {"Ct"});
  }

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
