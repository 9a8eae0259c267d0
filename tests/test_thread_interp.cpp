// The thread-level SIMT interpreter: agreement with the tile level on thread-level kernels
// (arithmetic, lane-dependent control flow, lazy select/and/or, shuffles), schedules, CPU
// workers, AMD wave64 targets, lane-operation counting, and the user errors it raises.
#include <doctest/doctest.h>

#include <cstring>

#include "core/builder.h"
#include "core/error.h"
#include "examples/bugs/thread_examples.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

ThreadRunOptions one_worker() {
  ThreadRunOptions o;
  o.workers = 1;
  return o;
}

/// Runs an example at thread level with its default parameters (plus `defines`).
struct ExampleThreadRun {
  ThreadRunResult result;
  TensorMap tensors;
  TensorMap expected;
};

ExampleThreadRun run_example(const std::string& name, ThreadRunOptions options = {},
                             std::map<std::string, std::string> defines = {}) {
  const Example* e = find_example(name);
  REQUIRE(e != nullptr);
  Params p = make_params(*e, defines);
  Kernel k = e->build(p);
  std::map<std::string, int64_t> dims;
  if (e->dynamic_dims) dims = e->dynamic_dims(p);
  ExampleThreadRun run;
  run.tensors = make_tensors(k, dims, e->outputs, 1);
  run.expected = run.tensors;
  e->reference(p, run.expected);
  if (options.workers == 0) options.workers = 1;
  run.result = run_thread_level(k, run.tensors, options);
  return run;
}

bool bitwise_equal(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.dtype().storage_bytes(a.size()))) ==
             0;
}

/// A kernel that exercises every expression kind under lane-dependent control flow.
Kernel mixed_kernel() {
  KernelBuilder T("mixed");
  auto A = T.tensor("A", {256}, DataType::f32());
  auto I = T.tensor("I", {256}, DataType::i32());
  auto O = T.tensor("O", {256}, DataType::f32());
  auto P = T.tensor("P", {256}, DataType::i32());
  auto H = T.tensor("H", {256}, DataType::f16());
  Var bx = T.kernel1(2, 128);
  Var tx = T.get_thread_binding();
  Expr i = bx * 128 + tx;
  auto x = T.alloc_var("x", DataType::f32());
  auto n = T.alloc_var("n", DataType::i32());
  x(0) = A(i);
  n(0) = I(i);
  // A trip count that differs between lanes of one warp.
  T.serial(
      tx % 5, [&](Var k) { x(0) = x(0) * 1.5 + cast(DataType::f32(), k); }, "k");
  T.if_then(
      n(0) > 0, [&] { n(0) = n(0) / 3 + n(0) % 3 * 7; }, [&] { n(0) = (make_int(0) - n(0)) ^ 5; });
  P(i) = ((n(0) << 2) | (tx & 3)) + max(n(0), make_int(-2)) - (n(0) >> 1);
  // Guarded loads: the select and the `and` must not evaluate the unguarded side.
  Expr guarded = if_then_else(i < 200, A(i + 56), make_const(DataType::f32(), 0));
  Expr lazy = (tx < 100) && (A(tx + 156) > 0);
  O(i) = if_then_else(lazy, exp2(x(0)), guarded) + cast(DataType::f32(), n(0)) / 7.0;
  H(i) = cast(DataType::f16(), x(0)) * 3 + cast(DataType::f16(), A(i));
  return T.finish();
}

TensorMap mixed_tensors() {
  Kernel k = mixed_kernel();
  return make_tensors(k, {}, {"O", "P", "H"}, 11);
}

}  // namespace

TEST_SUITE("thread interpreter: agreement with the tile level") {
  TEST_CASE("every expression kind gives bit-identical results at both levels") {
    Kernel k = mixed_kernel();
    TensorMap thread = mixed_tensors(), tile = mixed_tensors();
    ThreadRunResult r = run_thread_level(k, thread, one_worker());
    run_tile_level(k, tile, TileRunOptions{1});
    for (const char* out : {"O", "P", "H"}) {
      INFO("output " << out);
      CHECK(bitwise_equal(thread.at(out), tile.at(out)));
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a loop whose trip count differs between lanes runs each lane its own count") {
    KernelBuilder T("trips");
    auto O = T.tensor("O", {64}, DataType::i32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    auto c = T.alloc_var("c", DataType::i32(), 0);
    T.serial(tx % 7, [&](Var) { c(0) = c(0) + 1; });
    O(tx) = c(0);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"O"}, 0);
    run_thread_level(k, t);
    for (int l = 0; l < 64; ++l) CHECK(t.at("O").at(l) == l % 7);
  }

  TEST_CASE("shuffles past the warp's edge return the lane's own value, as on the tile level") {
    KernelBuilder T("shuffles");
    auto A = T.tensor("A", {64}, DataType::f32());
    auto D = T.tensor("D", {64}, DataType::f32());
    auto U = T.tensor("U", {64}, DataType::f32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    D(tx) = call(Builtin::kShflDown, {A(tx), make_int(3)});
    U(tx) = call(Builtin::kShflUp, {A(tx), make_int(5)});
    Kernel k = T.finish();
    TensorMap thread = make_tensors(k, {}, {"D", "U"}, 4), tile = thread;
    run_thread_level(k, thread);
    run_tile_level(k, tile);
    CHECK(bitwise_equal(thread.at("D"), tile.at("D")));
    CHECK(bitwise_equal(thread.at("U"), tile.at("U")));
    // Lane 30 of warp 0: 30 + 3 = 33 is outside the warp -> its own value; lane 2: A[5].
    CHECK(thread.at("D").at(30) == thread.at("A").at(30));
    CHECK(thread.at("D").at(2) == thread.at("A").at(5));
    CHECK(thread.at("U").at(36) == thread.at("A").at(36));  // lane 4 - 5 < 0
  }

  TEST_CASE("the thread-level examples agree with the tile level and their references") {
    for (const char* name : {"transpose_shared", "warp_shuffle_reduce", "row_sum_padded",
                             "row_sum_bank_conflicts", "gemm_simt"}) {
      INFO("example " << name);
      ExampleThreadRun run = run_example(name);
      const Example* e = find_example(name);
      TensorMap tile = run.tensors;
      for (const std::string& out : e->outputs) {
        tile.at(out) = HostTensor(tile.at(out).dtype(), tile.at(out).shape(), 0xFF);
      }
      run_tile_level(e->build(make_params(*e, {})), tile, TileRunOptions{1});
      for (const std::string& out : e->outputs) {
        CHECK(bitwise_equal(run.tensors.at(out), tile.at(out)));
        CHECK(compare(run.tensors.at(out), run.expected.at(out),
                      Tolerance::for_dtype(DataType::f32()))
                  .passed);
      }
      CHECK(run.result.report.findings.empty());
    }
  }

}  // TEST_SUITE

TEST_SUITE("thread interpreter: execution model") {
  TEST_CASE("lane-operations count every expression node and access once per active lane") {
    // B[tx] = A[tx] with 32 threads: the store's index `tx` (1 node), the value `A[tx]` (a load
    // and its index: 2 nodes) and the store itself: 4 x 32 = 128 lane-operations.
    KernelBuilder T("copy32");
    auto A = T.tensor("A", {32}, DataType::f32());
    auto B = T.tensor("B", {32}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    B(tx) = A(tx);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 0);
    ThreadRunResult r = run_thread_level(k, t);
    CHECK(r.lane_ops == 128);
    CHECK(r.blocks == 1);
    CHECK(r.warp_size == 32);
  }

  TEST_CASE("a shuffle from an inactive lane is reported and returns the lane's own value") {
    KernelBuilder T("inactive_shuffle");
    auto A = T.tensor("A", {32}, DataType::f32());
    auto O = T.tensor("O", {32}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    T.if_then(tx < 16, [&] { O(tx) = call(Builtin::kShflXor, {A(tx), make_int(16)}); });
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"O"}, 0);
    ThreadRunResult r = run_thread_level(k, t);
    REQUIRE(r.report.findings.size() == 1);
    const sim::Finding& f = r.report.findings[0];
    CHECK(f.kind == sim::FindingKind::kUninit);
    CHECK(f.count == 16);
    CHECK(f.message.find("thread 0 (warp 0, lane 0) of block (0,) reads lane 16 by T.shfl_xor") !=
          std::string::npos);
    CHECK(t.at("O").at(3) == t.at("A").at(3));
  }

  TEST_CASE("the schedule changes which warp runs first between barriers") {
    // In order, warp 0 reads first and finds s[127] unwritten; in reverse, warp 3 reads first and
    // finds s[31] unwritten (thread 96 reads s[127 - 96]).
    ThreadRunOptions in_order, reverse;
    reverse.schedule = *Schedule::parse("reverse");
    ExampleThreadRun a = run_example("bug_missing_barrier", in_order);
    ExampleThreadRun b = run_example("bug_missing_barrier", reverse);
    auto first_uninit = [](const ExampleThreadRun& r) {
      return r.result.report.of_kind(sim::FindingKind::kUninit).at(0);
    };
    CHECK(first_uninit(a)->threads == std::vector<int>{0});
    CHECK(first_uninit(a)->element == "[127]");
    CHECK(first_uninit(b)->threads == std::vector<int>{96});
    CHECK(first_uninit(b)->element == "[31]");
  }

  TEST_CASE("a random schedule is reproducible from its seed") {
    ThreadRunOptions o;
    o.schedule = *Schedule::parse("random:7");
    ExampleThreadRun a = run_example("bug_missing_barrier", o),
                     b = run_example("bug_missing_barrier", o);
    CHECK(bitwise_equal(a.tensors.at("B"), b.tensors.at("B")));
    REQUIRE(a.result.report.findings.size() == b.result.report.findings.size());
    for (size_t i = 0; i < a.result.report.findings.size(); ++i) {
      CHECK(a.result.report.findings[i].message == b.result.report.findings[i].message);
    }
  }

  TEST_CASE("schedules parse and print") {
    CHECK(Schedule::parse("in-order")->name() == "in-order");
    CHECK(Schedule::parse("reverse")->kind == Schedule::Kind::kReverse);
    CHECK(Schedule::parse("random:42")->seed == 42);
    CHECK(Schedule::parse("random:42")->name() == "random:42");
    CHECK_FALSE(Schedule::parse("random:"));
    CHECK_FALSE(Schedule::parse("random:x"));
    CHECK_FALSE(Schedule::parse("sideways"));
  }

  TEST_CASE("blocks on two CPU workers give the results and counters of one") {
    ThreadRunOptions one, two;
    one.workers = 1;
    two.workers = 2;
    ExampleThreadRun a = run_example("gemm_simt", one, {{"K", "32"}});
    ExampleThreadRun b = run_example("gemm_simt", two, {{"K", "32"}});
    CHECK(bitwise_equal(a.tensors.at("C"), b.tensors.at("C")));
    CHECK(a.result.report.total == b.result.report.total);
    CHECK(a.result.lane_ops == b.result.lane_ops);
    CHECK(b.result.workers == 2);
  }

  TEST_CASE("on an AMD target a warp has 64 lanes") {
    // warp_shuffle_reduce: 2 blocks x 128 threads = 4 wave64s, each loading 64 floats = 256 bytes
    // = 8 sectors: 4 requests, 32 sectors (on sm80: 8 requests of 4 sectors).
    ThreadRunOptions amd;
    amd.target = "gfx942";
    ExampleThreadRun a = run_example("warp_shuffle_reduce", amd);
    ExampleThreadRun n = run_example("warp_shuffle_reduce");
    CHECK(a.result.warp_size == 64);
    CHECK(compare(a.tensors.at("S"), a.expected.at("S"), Tolerance::for_dtype(DataType::f32()))
              .passed);
    CHECK(a.result.report.per_site[0].global_requests == 4);
    CHECK(a.result.report.per_site[0].sectors == 32);
    CHECK(n.result.report.per_site[0].global_requests == 8);
    CHECK(n.result.report.per_site[0].sectors == 32);
  }

  TEST_CASE("a block smaller than a wave64 runs as one partial wave") {
    ThreadRunOptions amd;
    amd.target = "gfx942";
    ExampleThreadRun r = run_example("row_sum_padded", amd);
    CHECK(r.result.report.findings.empty());
    CHECK(compare(r.tensors.at("S"), r.expected.at("S"), Tolerance::for_dtype(DataType::f32()))
              .passed);
    // 2 blocks x 32 column reads; 32 active lanes fill one ds_read_b32 phase, banks (t + i) % 32
    // all different: 1 wavefront each, 64 in all.
    const sim::Counters& total = r.result.report.total;
    CHECK(total.wavefronts == 64 + 64);
    CHECK(total.bank_conflicts == 0);
  }

  TEST_CASE("blocks storing different values to one global element are a write conflict") {
  // Thread 0 of each of 3 blocks writes O[0] = bx. The shadow remembers the first storing block
  // (0); blocks 1 and 2 each store a value other than the one O[0] holds (1 over 0, 2 over 1):
  // one write_conflict finding, 2 occurrences, first between blocks 0 and 1.
  KernelBuilder T("last_writer_wins");
  auto O = T.tensor("O", {1}, DataType::i32());
  Var bx = T.kernel1(3, 32);
  Var tx = T.get_thread_binding();
  T.if_then(tx == 0, [&] { O(0) = bx; });
  Kernel k = T.finish();
  TensorMap t = make_tensors(k, {}, {"O"}, 0);
  ThreadRunResult r = run_thread_level(k, t, one_worker());
  REQUIRE(r.report.findings.size() == 1);
  const sim::Finding& f = r.report.findings[0];
  CHECK(f.kind == sim::FindingKind::kWriteConflict);
  CHECK(f.count == 2);
  CHECK(f.blocks == std::vector<std::vector<int64_t>>{{0}, {1}});
  CHECK(f.message.find("write conflict on global O[0]: thread 0 of block (1,) writes it") !=
        std::string::npos);
}

TEST_CASE("blocks storing the same value to one global element is a benign race") {
  KernelBuilder T("same_value");
  auto O = T.tensor("O", {1}, DataType::i32());
  T.kernel1(2, 32);
  Var tx = T.get_thread_binding();
  T.if_then(tx == 0, [&] { O(0) = 7; });
  Kernel k = T.finish();
  TensorMap t = make_tensors(k, {}, {"O"}, 0);
  ThreadRunResult r = run_thread_level(k, t, one_worker());
  REQUIRE(r.report.findings.size() == 1);
  CHECK(r.report.findings[0].benign);
  CHECK_FALSE(r.report.has_errors());
}

TEST_CASE("reading a register before writing it is an uninitialised read") {
  KernelBuilder T("uninit_local");
  auto O = T.tensor("O", {32}, DataType::f32());
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto acc = T.alloc_local("acc", {2}, DataType::f32());
  acc(0) = make_const(DataType::f32(), 1);
  O(tx) = acc(0) + acc(1);  // acc[1] was never written
  Kernel k = T.finish();
  TensorMap t = make_tensors(k, {}, {"O"}, 0);
  ThreadRunResult r = run_thread_level(k, t, one_worker());
  REQUIRE(r.report.findings.size() == 1);
  CHECK(r.report.findings[0].kind == sim::FindingKind::kUninit);
  CHECK(r.report.findings[0].buffer == "acc");
  CHECK(r.report.findings[0].element == "[1]");
  CHECK(r.report.findings[0].count == 32);
}

TEST_CASE("detectors can be switched off for speed; results do not change") {
    ThreadRunOptions off;
    off.detectors = false;
    ExampleThreadRun a = run_example("bug_missing_barrier", off);
    ExampleThreadRun b = run_example("bug_missing_barrier");
    CHECK(a.result.report.findings.empty());
    CHECK_FALSE(b.result.report.findings.empty());
    CHECK(bitwise_equal(a.tensors.at("B"), b.tensors.at("B")));
  }

}  // TEST_SUITE

TEST_SUITE("thread interpreter: errors") {
  TEST_CASE("a kernel with tile operators needs the lowering pass") {
    const Example* e = find_example("gemm");
    Kernel k = e->build(make_params(*e, {{"M", "128"}, {"N", "128"}, {"K", "32"}}));
    TensorMap t = make_tensors(k, {}, e->outputs, 0);
    try {
      run_thread_level(k, t);
      FAIL("expected a user error");
    } catch (const UserError& err) {
      std::string m = err.what();
      // The first statement that is not thread-level IR is T.clear(C_local).
      CHECK(m.find("kernel 'gemm': T.clear (a tile operator) at gemm.cpp:") != std::string::npos);
      CHECK(m.find("is tile-level IR") != std::string::npos);
      CHECK(m.find("lower the kernel first (core/passes.h lower_kernel, or `tessel lower`") !=
            std::string::npos);
    }
  }

  TEST_CASE("a tile operator outside any loop is named with its location") {
    KernelBuilder T("fill_only");
    auto C = T.tensor("C", {128}, DataType::f32());
    T.kernel1(1, 128);
    auto s = T.alloc_shared("s", {128}, DataType::f32());
    T.fill(s, 1.0);
    T.copy(s, C);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"C"}, 0);
    CHECK_THROWS_WITH_AS(run_thread_level(k, t),
                         doctest::Contains("kernel 'fill_only': T.fill (a tile operator) at "
                                           "test_thread_interp.cpp:"),
                         UserError);
  }

  TEST_CASE("a T.Parallel loop needs the lowering pass") {
    const Example* e = find_example("elementwise");
    Params p = make_params(*e, {});
    Kernel k = e->build(p);
    TensorMap t = make_tensors(k, e->dynamic_dims(p), e->outputs, 0);
    CHECK_THROWS_WITH_AS(run_thread_level(k, t),
                         doctest::Contains("the T.Parallel loop over 'i' at elementwise.cpp:"),
                         UserError);
  }

  TEST_CASE("an unknown target is a user error listing the targets") {
    const Example* e = find_example("transpose_shared");
    Kernel k = e->build(make_params(*e, {}));
    TensorMap t = make_tensors(k, {}, e->outputs, 0);
    ThreadRunOptions o;
    o.target = "sm12";
    CHECK_THROWS_WITH_AS(run_thread_level(k, t, o),
                         doctest::Contains("unknown target 'sm12'; use one of sm80"), UserError);
  }

  TEST_CASE("integer division by zero names the kernel, block, thread and the division") {
    KernelBuilder T("div");
    auto O = T.tensor("O", {32}, DataType::i32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    O(tx) = make_int(10) / (tx - 3);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"O"}, 0);
    std::string msg;
    try {
      run_thread_level(k, t);
    } catch (const UserError& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.rfind("kernel 'div', block (0,), thread 3 (at ", 0) == 0);
    CHECK(msg.find("integer division by zero in `10 // (tx - 3)` (the divisor `tx - 3` is 0)") !=
          std::string::npos);
  }

  TEST_CASE("a tensor of the wrong dtype is a user error") {
    const Example* e = find_example("transpose_shared");
    Kernel k = e->build(make_params(*e, {}));
    TensorMap t = make_tensors(k, {}, e->outputs, 0);
    t.at("A") = HostTensor(DataType::f16(), {64, 96});
    CHECK_THROWS_WITH_AS(run_thread_level(k, t),
                         doctest::Contains("tensor 'A' is float16 but the signature says float32"),
                         UserError);
  }

}  // TEST_SUITE
