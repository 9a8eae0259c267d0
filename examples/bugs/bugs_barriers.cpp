// Deliberately broken thread-level kernels about barriers, each documenting what the
// thread-level simulator reports: a shared-memory race from a missing barrier, a tree reduction
// missing the barrier between its steps, and a barrier inside a thread-dependent branch.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

// bug_missing_barrier: each block reverses 128 elements through shared memory, but nothing
// separates the stores into `s` from the loads of other threads' elements.
Kernel build_missing_barrier(const Params& p) {
  int64_t blocks = p.integer("blocks");
  KernelBuilder T("bug_missing_barrier");
  auto A = T.tensor("A", {blocks * 128}, DataType::f32());
  auto B = T.tensor("B", {blocks * 128}, DataType::f32());
  Var bx = T.kernel1(blocks, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {128}, DataType::f32());
  s(tx) = A(bx * 128 + tx);
  if (p.boolean("fixed")) T.sync_threads();  // the missing barrier
  B(bx * 128 + tx) = s(127 - tx);
  return T.finish();
}

void reverse_reference(TensorMap& t) {
  const HostTensor& a = t.at("A");
  HostTensor& b = t.at("B");
  for (int64_t i = 0; i < b.size(); ++i) b.set(i, a.at(i / 128 * 128 + 127 - i % 128));
}

// bug_reduction_missing_barrier: a block sums 256 elements with a shared-memory tree; the
// barrier between the steps of the tree is missing.
Kernel build_reduction(const Params& p) {
  int64_t blocks = p.integer("blocks");
  KernelBuilder T("bug_reduction_missing_barrier");
  auto A = T.tensor("A", {blocks * 256}, DataType::f32());
  auto S = T.tensor("S", {blocks}, DataType::f32());
  Var bx = T.kernel1(blocks, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {128}, DataType::f32());
  s(tx) = A(bx * 256 + tx) + A(bx * 256 + tx + 128);
  T.sync_threads();
  T.serial(
      7,
      [&](Var step) {
        Expr stride = make_int(64) >> step;
        T.if_then(tx < stride, [&] { s(tx) = s(tx) + s(tx + stride); });
        if (p.boolean("fixed")) T.sync_threads();  // the missing barrier
      },
      "step");
  T.if_then(tx == 0, [&] { S(bx) = s(0); });
  return T.finish();
}

void reduction_reference(TensorMap& t) {
  const HostTensor& a = t.at("A");
  HostTensor& s = t.at("S");
  for (int64_t b = 0; b < s.size(); ++b) {
    double sum = 0;
    for (int64_t i = 0; i < 256; ++i) sum += a.at(b * 256 + i);
    s.set(b, sum);
  }
}

// bug_divergent_barrier: T.sync_threads() inside `if tx < 48`: warp 1 reaches it with half its
// lanes, warps 2 and 3 never do.
Kernel build_divergent_barrier(const Params& p) {
  int64_t blocks = p.integer("blocks");
  KernelBuilder T("bug_divergent_barrier");
  auto A = T.tensor("A", {blocks * 128}, DataType::f32());
  auto B = T.tensor("B", {blocks * 128}, DataType::f32());
  Var bx = T.kernel1(blocks, 128);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {128}, DataType::f32());
  s(tx) = A(bx * 128 + tx);
  T.if_then(tx < 48, [&] { T.sync_threads(); });
  B(bx * 128 + tx) = s((tx + 1) % 128);
  return T.finish();
}

void rotate_reference(TensorMap& t) {
  const HostTensor& a = t.at("A");
  HostTensor& b = t.at("B");
  for (int64_t i = 0; i < b.size(); ++i) b.set(i, a.at(i / 128 * 128 + (i % 128 + 1) % 128));
}

}  // namespace

Example bug_missing_barrier_example() {
  Example e;
  e.name = "bug_missing_barrier";
  e.description =
      "BUG: reverses 128 elements per block through shared memory with no "
      "T.sync_threads() between the stores and the loads (race; -D fixed=true adds it)";
  e.params = {{"blocks", "2", "blocks (128 elements each)"},
              {"fixed", "false", "add the missing barrier"}};
  e.outputs = {"B"};
  e.build = build_missing_barrier;
  e.reference = [](const Params&, TensorMap& t) { reverse_reference(t); };
  return e;
}

Example bug_reduction_missing_barrier_example() {
  Example e;
  e.name = "bug_reduction_missing_barrier";
  e.description =
      "BUG: a shared-memory tree reduction (256 elements per block) without the "
      "barrier between its steps (race; -D fixed=true adds it)";
  e.params = {{"blocks", "2", "blocks (256 elements each)"},
              {"fixed", "false", "add the missing barrier"}};
  e.outputs = {"S"};
  e.build = build_reduction;
  e.reference = [](const Params&, TensorMap& t) { reduction_reference(t); };
  return e;
}

Example bug_divergent_barrier_example() {
  Example e;
  e.name = "bug_divergent_barrier";
  e.description =
      "BUG: T.sync_threads() inside `if tx < 48`, so warp 1 reaches it with half "
      "its lanes and warps 2-3 never do (barrier divergence)";
  e.params = {{"blocks", "1", "blocks (128 elements each)"}};
  e.outputs = {"B"};
  e.build = build_divergent_barrier;
  e.reference = [](const Params&, TensorMap& t) { rotate_reference(t); };
  return e;
}

}  // namespace tessel
