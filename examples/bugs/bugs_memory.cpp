// Deliberately broken thread-level kernels about memory: an unmasked tail (out-of-bounds loads
// and stores past the end of the tensors), a read of a cp.async destination before the copy
// was waited for, and a plain read-modify-write of one global element by every thread of a
// block.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

// bug_unmasked_tail: C = A + B over a symbolic length N, one element per thread, without the
// `if i < N` guard the last block needs.
Kernel build_unmasked_tail(const Params& p) {
  KernelBuilder T("bug_unmasked_tail");
  Var N = T.dynamic("N");
  auto A = T.tensor("A", {N}, DataType::f32());
  auto B = T.tensor("B", {N}, DataType::f32());
  auto C = T.tensor("C", {N}, DataType::f32());
  Var bx = T.kernel1(ceildiv(N, 128), 128);
  Var tx = T.get_thread_binding();
  Expr i = bx * 128 + tx;
  if (p.boolean("fixed")) {
    T.if_then(i < N, [&] { C(i) = A(i) + B(i); });
  } else {
    C(i) = A(i) + B(i);  // no guard: the last block runs past N
  }
  return T.finish();
}

// bug_cp_async_no_wait: each thread copies 16 bytes (4 floats) into shared memory with
// cp.async and commits the group, but the T.cp_async_wait_group(0) before the barrier is
// missing, so the loads read the tile before the copies land.
Kernel build_cp_async_no_wait(const Params& p) {
  int64_t blocks = p.integer("blocks");
  KernelBuilder T("bug_cp_async_no_wait");
  auto A = T.tensor("A", {blocks * 128}, DataType::f32());
  auto B = T.tensor("B", {blocks * 128}, DataType::f32());
  Var bx = T.kernel1(blocks, 32);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {128}, DataType::f32());
  T.cp_async(s(tx * 4), A(bx * 128 + tx * 4), 16);
  T.cp_async_commit_group();
  if (p.boolean("fixed")) T.cp_async_wait_group(0);  // the missing wait
  T.sync_threads();
  T.serial(
      4, [&](Var j) { B(bx * 128 + j * 32 + tx) = s(j * 32 + tx) * 2.0; }, "j");
  return T.finish();
}

// bug_global_race: each block sums 1 + 2 + ... + 64 into out[bx]. Thread 0 zeroes the element
// and, after a barrier, every thread adds tx + 1 with a plain load and store: the threads of
// the block race on one global element. The fix is an atomic add (T.atom_add).
Kernel build_global_race(const Params& p) {
  int64_t blocks = p.integer("blocks");
  const DataType f32 = DataType::f32();
  KernelBuilder T("bug_global_race");
  auto out = T.tensor("out", {blocks}, f32);
  Var bx = T.kernel1(blocks, 64);
  Var tx = T.get_thread_binding();
  T.if_then(tx == 0, [&] { out(bx) = make_const(f32, 0); });
  T.sync_threads();
  Expr x = cast(f32, tx + 1);
  if (p.boolean("fixed")) {
    T.intrinsic(IntrinsicId::kAtomAdd,
                {IntrinsicArg{out(bx).region().buffer, {bx}, Expr()}, IntrinsicArg{{}, {}, x}});
  } else {
    out(bx) = out(bx) + x;  // every thread reads, adds and writes out[bx]
  }
  return T.finish();
}

}  // namespace

Example bug_unmasked_tail_example() {
  Example e;
  e.name = "bug_unmasked_tail";
  e.description =
      "BUG: C = A + B over N = 1000 with 128-thread blocks and no tail guard: the "
      "last block reads and writes past the end (out of bounds; -D fixed=true "
      "guards it)";
  e.params = {{"N", "1000", "length of the vectors"},
              {"fixed", "false", "guard the tail with `if i < N`"}};
  e.outputs = {"C"};
  e.build = build_unmasked_tail;
  e.dynamic_dims = [](const Params& p) {
    return std::map<std::string, int64_t>{{"N", p.integer("N")}};
  };
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor &a = t.at("A"), &b = t.at("B");
    HostTensor& c = t.at("C");
    for (int64_t i = 0; i < c.size(); ++i) c.set(i, a.at(i) + b.at(i));
  };
  return e;
}

Example bug_cp_async_no_wait_example() {
  Example e;
  e.name = "bug_cp_async_no_wait";
  e.description =
      "BUG: B = 2 * A staged through shared memory with cp.async, reading the tile "
      "without T.cp_async_wait_group(0) (async race; -D fixed=true waits)";
  e.params = {{"blocks", "2", "blocks (128 elements each)"},
              {"fixed", "false", "add the missing wait"}};
  e.outputs = {"B"};
  e.build = build_cp_async_no_wait;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& b = t.at("B");
    for (int64_t i = 0; i < b.size(); ++i) b.set(i, 2 * a.at(i));
  };
  return e;
}

Example bug_global_race_example() {
  Example e;
  e.name = "bug_global_race";
  e.description =
      "BUG: each block sums tx + 1 over its 64 threads into out[bx] with a plain load and "
      "store: the threads of a block race on one global element (-D fixed=true uses "
      "T.atom_add)";
  e.params = {{"blocks", "2", "blocks (one output element each)"},
              {"fixed", "false", "add with an atomic"}};
  e.outputs = {"out"};
  e.build = build_global_race;
  e.reference = [](const Params&, TensorMap& t) {
    HostTensor& out = t.at("out");
    for (int64_t b = 0; b < out.size(); ++b) out.set(b, 64 * 65 / 2);
  };
  return e;
}

}  // namespace tessel
