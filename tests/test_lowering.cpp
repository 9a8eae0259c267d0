// Lowering from tile level to thread level: the free partition, fragments derived from loop
// layouts, barrier insertion, block rasterisation, inference errors, and every built-in example
// running at thread level with the tile level's results.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/builder.h"
#include "core/int_eval.h"
#include "core/parallel_loop.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

int count_barriers(const Stmt& s) {
  int n = 0;
  for_each_stmt(s, [&](const Stmt& x) { n += x.as<BarrierNode>() != nullptr; });
  return n;
}

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

/// Runs `kernel` at tile level and, lowered for `target`, at thread level on the same random
/// inputs; returns the thread-level report after checking that every tensor agrees.
sim::SimReport run_both(const Kernel& kernel, const std::string& target,
                        const std::vector<std::string>& outputs,
                        const std::map<std::string, int64_t>& dims = {}) {
  TensorMap tile = make_tensors(kernel, dims, outputs, 7), thread = tile;
  run_tile_level(kernel, tile);
  Kernel lowered = lower_kernel(kernel, find_target(target)).kernel;
  ThreadRunOptions options;
  options.target = target;
  ThreadRunResult r = run_thread_level(lowered, thread, options);
  for (const std::string& name : outputs) {
    Comparison c = compare(thread.at(name), tile.at(name), Tolerance::for_dtype(tile.at(name).dtype()));
    CHECK_MESSAGE(c.passed, name << " differs from the tile level");
  }
  return r.report;
}

}  // namespace

TEST_SUITE("lowering") {

TEST_CASE("the free partition gives chunk c of vec elements to thread c % threads") {
  Fragment f = default_loop_layout({32, 128}, 128, 4);
  // (1, 8): flat 136, chunk 34 -> thread 34, register (34 // 128) * 4 + 136 % 4 = 0.
  CHECK(f.map_fragment({1, 8}) == std::pair<int64_t, int64_t>{34, 0});
  // (5, 3): flat 643, chunk 160 -> thread 160 % 128 = 32, register 1 * 4 + 3 = 7.
  CHECK(f.map_fragment({5, 3}) == std::pair<int64_t, int64_t>{32, 7});
  CHECK(f.local_extent() == 32);  // 4096 elements / 128 threads
}

TEST_CASE("the vector width is 16 bytes of the widest element, dividing the last extent") {
  CHECK(choose_vector_width({32, 128}, 32) == 4);  // f32: 16 / 4
  CHECK(choose_vector_width({32, 128}, 16) == 8);  // f16: 16 / 2
  CHECK(choose_vector_width({4, 6}, 16) == 2);     // 8 does not divide 6, 4 neither, 2 does
  CHECK(choose_vector_width({128}, 8) == 16);      // int8
  CHECK(choose_vector_width({63}, 32) == 1);
}

TEST_CASE("a row of a free partition is held by the 32 threads that run it, replicated") {
  Fragment loop = default_loop_layout({32, 128}, 128, 4);
  Var i("i"), j("j");
  std::string why;
  auto row = derive_fragment(loop, {i, j}, {i}, {32}, &why);
  REQUIRE_MESSAGE(row, why);
  // Row 5 is chunks 160..191 (32 chunks of 4), threads 160 % 128 .. 191 % 128 = 32..63.
  std::vector<int64_t> expect;
  for (int64_t t = 32; t < 64; ++t) expect.push_back(t);
  CHECK(holders(*row, {5}) == expect);
  CHECK(row->replicate() == 32);
  // 4 rows per pass of 128 threads: each thread holds 32 / 4 = 8 rows, in registers 0..7.
  CHECK(row->local_extent() == 8);
}

TEST_CASE("a fragment indexed by j // 2 goes to the thread of its two iterations") {
  Fragment loop = default_loop_layout({8, 16}, 32, 2);
  Var i("i"), j("j");
  std::string why;
  auto half = derive_fragment(loop, {i, j}, {i, floordiv(j, 2)}, {8, 8}, &why);
  REQUIRE_MESSAGE(half, why);
  // (3, 5) is needed by iterations (3, 10) and (3, 11): flat 58 and 59, chunk 29 -> thread 29.
  CHECK(holders(*half, {3, 5}) == std::vector<int64_t>{29});
  // 64 elements over 32 threads: two per thread, registers 0 and 1 (no gaps).
  CHECK(half->local_extent() == 2);
}

TEST_CASE("derived registers close periodic gaps") {
  // A loop layout that puts rows 0-3 in registers 0-3 and rows 4-7 in registers 16-19 (as an
  // MFMA accumulator's rows do): the derived fragment packs them as v % 16 + v // 16 * 4.
  Fragment loop = Fragment::from_fn({8, 2}, [](const std::vector<Var>& v, const Var&) {
    return std::pair<Expr, Expr>{v[1], v[0] % 4 + v[0] / 4 * 16};
  });
  Var i("i"), j("j");
  std::string why;
  auto f = derive_fragment(loop, {i, j}, {i, j}, {8, 2}, &why);
  REQUIRE_MESSAGE(f, why);
  CHECK(f->local_extent() == 8);
  // Row 5 was register 1 + 16 = 17; packed: 17 % 16 + 17 // 16 * 4 = 5.
  CHECK(f->map_fragment({5, 1}) == std::pair<int64_t, int64_t>{1, 5});
}

TEST_CASE("an index that is not a loop variable cannot derive a fragment") {
  Fragment loop = default_loop_layout({64}, 64, 1);
  Var i("i");
  std::string why;
  CHECK_FALSE(derive_fragment(loop, {i}, {i + 1}, {65}, &why));
  CHECK(why.find("neither a loop variable") != std::string::npos);
}

TEST_CASE("a shared tile written by one loop and read by the next gets one barrier") {
  KernelBuilder T("handoff");
  auto A = T.tensor("A", {64}, DataType::f32());
  auto B = T.tensor("B", {64}, DataType::f32());
  T.kernel1(1, 64);
  auto S = T.alloc_shared("S", {64}, DataType::f32());
  T.parallel(64, [&](Var i) { S(i) = A(i); });
  T.parallel(64, [&](Var i) { B(i) = S(63 - i); });
  Kernel k = T.finish();
  Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
  CHECK(count_barriers(lowered->body) == 1);
  sim::SimReport report = run_both(k, "sm80", {"B"});
  CHECK(report.findings.empty());
}

TEST_CASE("a loop that refills a shared tile waits for the previous iteration's readers") {
  KernelBuilder T("refill");
  auto A = T.tensor("A", {4, 64}, DataType::f32());
  auto B = T.tensor("B", {4, 64}, DataType::f32());
  T.kernel1(1, 64);
  auto S = T.alloc_shared("S", {64}, DataType::f32());
  T.serial(4, [&](Var k) {
    T.parallel(64, [&](Var i) { S(i) = A(k, i); });
    T.parallel(64, [&](Var i) { B(k, i) = S(63 - i); });
  }, "k");
  Kernel k = T.finish();
  Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
  // One before the reads (read after write), one before the next iteration's writes (write
  // after read) — both inside the k loop.
  CHECK(count_barriers(lowered->body) == 2);
  sim::SimReport report = run_both(k, "sm80", {"B"});
  CHECK(report.findings.empty());
}

TEST_CASE("block rasterisation in panels is a bijection of the grid") {
  KernelBuilder T("raster");
  auto A = T.tensor("A", {3, 5}, DataType::f32());
  auto [bx, by] = T.kernel2(5, 3, 32);
  T.use_swizzle(2);
  A(by, bx) = cast(DataType::f32(), by * 5 + bx);
  Kernel k = rasterize_blocks(T.finish());
  const auto* let_x = k->body.as<LetNode>();
  REQUIRE(let_x);
  const auto* let_y = let_x->body.as<LetNode>();
  REQUIRE(let_y);
  std::set<std::pair<int64_t, int64_t>> seen;
  std::map<int64_t, std::pair<int64_t, int64_t>> by_linear;
  for (int64_t y = 0; y < 3; ++y) {
    for (int64_t x = 0; x < 5; ++x) {
      IntEnv env{{static_cast<const VarNode*>(bx.get()), x}, {static_cast<const VarNode*>(by.get()), y}};
      int64_t nx = eval_int(let_x->value, env);
      env[static_cast<const VarNode*>(let_x->var.get())] = nx;
      int64_t ny = eval_int(let_y->value, env);
      CHECK(nx >= 0);
      CHECK(nx < 5);
      CHECK(ny >= 0);
      CHECK(ny < 3);
      seen.insert({nx, ny});
      by_linear[y * 5 + x] = {nx, ny};
    }
  }
  CHECK(seen.size() == 15);
  // Panels of 2 columns walked top to bottom: linear 0, 1, 2 -> (0, 0), (1, 0), (0, 1); the last
  // panel is column 4 alone: linear 12 -> (4, 0), 14 -> (4, 2).
  CHECK(by_linear[1] == std::pair<int64_t, int64_t>{1, 0});
  CHECK(by_linear[2] == std::pair<int64_t, int64_t>{0, 1});
  CHECK(by_linear[12] == std::pair<int64_t, int64_t>{4, 0});
  CHECK(by_linear[14] == std::pair<int64_t, int64_t>{4, 2});
}

TEST_CASE("a loop reading another thread's fragment element names the iteration and both threads") {
  KernelBuilder T("reversed");
  auto A = T.tensor("A", {64}, DataType::f32());
  auto B = T.tensor("B", {64}, DataType::f32());
  T.kernel1(1, 64);
  auto F = T.alloc_fragment("F", {64}, DataType::f32());
  T.parallel(64, [&](Var i) { F(i) = A(i); });
  T.parallel(64, [&](Var i) { B(i) = F(63 - i); });
  Kernel k = T.finish();
  std::string msg = user_error_of([&] { lower_kernel(k, find_target("sm80")); });
  // F: free partition of 64 f32 with vec 4 -> element e in thread e // 4. The second loop has
  // the same free partition, so iteration i = 0 runs in thread 0 and reads F[63] of thread 15.
  CHECK(msg.find("runs iteration (i=0) in thread 0, but element [63] of fragment 'F' lives in "
                 "thread(s) 15") != std::string::npos);
  CHECK(msg.find("fix: T.annotate_layout") != std::string::npos);
}

TEST_CASE("a loop over part of a fragment runs each iteration where the fragment holds it") {
  KernelBuilder T("shifted");
  auto A = T.tensor("A", {64}, DataType::f32());
  auto B = T.tensor("B", {63}, DataType::f32());
  T.kernel1(1, 64);
  auto F = T.alloc_fragment("F", {64}, DataType::f32());
  T.parallel(64, [&](Var i) { F(i) = A(i); });
  T.parallel(63, [&](Var i) { B(i) = F(i + 1); });
  Kernel k = T.finish();
  // B[i] = F[i + 1] = A[i + 1]: the loop runs over F's 64 elements, skipping element 0, so
  // every thread reads its own registers and the result is A shifted by one.
  run_both(k, "sm80", {"B"});
  TensorMap t = make_tensors(k, {}, {"B"}, 5);
  run_thread_level(lower_kernel(k, find_target("sm80")).kernel, t);
  for (int64_t i = 0; i < 63; ++i) CHECK(t.at("B").at(i) == t.at("A").at(i + 1));
}

TEST_CASE("an annotation that contradicts the gemm accumulator names both and the fix") {
  KernelBuilder T("clash");
  auto A = T.tensor("A", {64, 32}, DataType::f16());
  auto B = T.tensor("B", {32, 64}, DataType::f16());
  auto C = T.tensor("C", {64, 64}, DataType::f32());
  T.kernel1(1, 128);
  auto As = T.alloc_shared("A_shared", {64, 32}, DataType::f16());
  auto Bs = T.alloc_shared("B_shared", {32, 64}, DataType::f16());
  auto Cl = T.alloc_fragment("C_local", {64, 64}, DataType::f32());
  T.annotate_layout({{Cl.buffer(), default_loop_layout({64, 64}, 128, 1)}});
  T.clear(Cl);
  T.copy(A, As);
  T.copy(B, Bs);
  T.gemm(As, Bs, Cl);
  T.copy(Cl, C);
  std::string msg = user_error_of([&] { lower_kernel(T.finish(), find_target("sm80")); });
  CHECK(msg.find("layout inference cannot agree on buffer 'C_local'") != std::string::npos);
  CHECK(msg.find("T.annotate_layout") != std::string::npos);
  CHECK(msg.find("T.gemm") != std::string::npos);
}

TEST_CASE("tile atomics add each element once, even from a replicated fragment") {
  KernelBuilder T("split_sum");
  auto A = T.tensor("A", {4, 64}, DataType::f32());
  auto C = T.tensor("C", {64}, DataType::f32());
  Var b = T.kernel1(4, 128);
  auto row = T.alloc_fragment("row", {64}, DataType::f32());
  T.copy(A(b, 0), row);
  T.atomic_add(C(0), row);
  T.atomic_add(C(0), cast(DataType::f32(), b));  // scalar form: once per block
  Kernel k = T.finish();
  // 64 f32 over 128 threads: vec 4 -> 16 threads hold the row, the rest idle; C[0] gets
  // A[0..3, 0] + (0 + 1 + 2 + 3) and every other C[j] the column sum: exactly what the tile
  // level computes, in some order (f32 sums of 4 terms; the tolerance covers the order).
  sim::SimReport report = run_both(k, "sm80", {"C"});
  CHECK(report.findings.empty());
}

TEST_CASE("the gemm swizzle makes ldmatrix conflict-free; row-major tiles conflict") {
  auto gemm = [](bool row_major) {
    KernelBuilder T("gemm64");
    auto A = T.tensor("A", {64, 32}, DataType::f16());
    auto B = T.tensor("B", {32, 64}, DataType::f16());
    auto C = T.tensor("C", {64, 64}, DataType::f32());
    T.kernel1(1, 128);
    auto As = T.alloc_shared("A_shared", {64, 32}, DataType::f16());
    auto Bs = T.alloc_shared("B_shared", {32, 64}, DataType::f16());
    auto Cl = T.alloc_fragment("C_local", {64, 64}, DataType::f32());
    if (row_major) {
      T.annotate_layout({{As.buffer(), Layout::row_major({64, 32})},
                         {Bs.buffer(), Layout::row_major({32, 64})}});
    }
    T.clear(Cl);
    T.copy(A, As);
    T.copy(B, Bs);
    T.gemm(As, Bs, Cl);
    T.copy(Cl, C);
    return T.finish();
  };
  auto ldmatrix = [](const sim::SimReport& r, const std::string& buffer) {
    sim::Counters c;
    for (size_t s = 0; s < r.sites.size(); ++s) {
      if (r.sites[s].access.find("ldmatrix") == 0 && r.sites[s].buffer == buffer) c += r.per_site[s];
    }
    return c;
  };
  sim::SimReport swizzled = run_both(gemm(false), "sm80", {"C"});
  CHECK(ldmatrix(swizzled, "A_shared").bank_conflicts == 0);
  CHECK(ldmatrix(swizzled, "B_shared").bank_conflicts == 0);
  CHECK(ldmatrix(swizzled, "A_shared").ideal_wavefronts > 0);
  sim::SimReport plain = run_both(gemm(true), "sm80", {"C"});
  // Row-major A (64 bytes a row): a phase of 8 lanes reads rows r..r+7 at one column; row r starts
  // at bank 16 r % 32, so rows 0, 2, 4, 6 share banks 0-3 and 1, 3, 5, 7 banks 16-19: 4-way.
  sim::Counters a = ldmatrix(plain, "A_shared");
  CHECK(a.wavefronts == 4 * a.ideal_wavefronts);
  // Row-major B (128 bytes a row): all 8 rows of a phase start at the same bank: 8-way.
  sim::Counters b = ldmatrix(plain, "B_shared");
  CHECK(b.wavefronts == 8 * b.ideal_wavefronts);
}

TEST_CASE("a shared -> register copy of an mma operand is ldmatrix on a swizzled tile") {
  // gemm_rs copies A_shared into A_local, the gemm's A operand fragment: every lane's block of 8
  // registers is what ldmatrix.x4 delivers, and the copy gives A_shared the gemm swizzle.
  CliResult r = run_tessel({"run", "gemm_rs", "--level", "thread", "--json", "-D", "M=128",
                              "-D", "N=128", "-D", "K=64"});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& op : j["sim"]["per_op"]) {
    if (op["site"]["access"].get<std::string>().rfind("ldmatrix_x4", 0) != 0 ||
        op["site"]["buffer"] != "A_shared") {
      continue;
    }
    found = true;
    CHECK(op["shared"]["bank_conflicts"] == 0);
    // 128 threads = 4 warps in a 2 x 2 grid (square policy, 128 x 128 tile): each warp holds
    // 64 rows x 32 k of A = 2048 elements = 64 registers per lane = 8 ldmatrix.x4 per k-tile;
    // 2 k-tiles, 1 block: 4 x 2 x 8 = 64 requests.
    CHECK(op["shared"]["requests"] == 64);
  }
  CHECK(found);
}

TEST_CASE("a copy between fragments laid out differently goes through shared memory") {
  // On gfx942 the MFMA accumulator holds D[4 (l / 16) + r][l % 16] in lane l and the A operand
  // holds A[l % 16][4 (l / 16) + e]: other lanes, so flash attention's T.copy(acc_s, acc_s_cast)
  // needs a shared scratch tile (on sm80 the mma C and A lane maps agree and it stays in
  // registers).
  auto scratch = [](const char* target) {
    std::string ir = run_tessel({"lower", "flash_attention", "--target", target}).out;
    return ir.find("acc_s_to_acc_s_cast = T.alloc_shared") != std::string::npos;
  };
  CHECK(scratch("gfx942"));
  CHECK_FALSE(scratch("sm80"));
}

TEST_CASE("the thread-level report sums traffic per tile operator") {
  CliResult r = run_tessel({"run", "gemm", "--level", "thread", "--json", "-D", "M=256", "-D",
                            "N=256", "-D", "K=256"});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : j["per_tile_op"]) rows[row["op"].get<std::string>().substr(0, 6)] = row;
  REQUIRE(rows.count("T.gemm"));
  // 4 blocks x 4 warps x 8 k-tiles x 2 k-steps x (4 ldmatrix for A + 4 for B) = 2048 requests,
  // 4 wavefronts each (one per 8-lane phase), no conflicts.
  CHECK(rows["T.gemm"]["shared"]["requests"] == 2048);
  CHECK(rows["T.gemm"]["shared"]["wavefronts"] == 4 * 2048);
  CHECK(rows["T.gemm"]["shared"]["bank_conflicts"] == 0);
  REQUIRE(rows.count("T.copy"));
  CHECK(rows["T.copy"]["op"].get<std::string>().find("T.copy at gemm.cpp:") == 0);
}

TEST_CASE("an unknown target lists the known ones") {
  std::string msg = user_error_of([] { find_target("sm75"); });
  CHECK(msg == "unknown target 'sm75'; the targets are sm80, sm90, gfx90a, gfx942");
}

TEST_CASE("every example runs at thread level with the tile level's results, on sm80 and gfx942") {
  // Edges that are not multiples of the tiles, and elementwise's symbolic N.
  std::vector<std::vector<const char*>> cases = {
      {"gemm", "-D", "M=136", "-D", "N=72", "-D", "K=40", "-D", "block_M=64", "-D", "block_N=64"},
      {"gemm_transpose_b", "-D", "M=64", "-D", "N=72", "-D", "K=64"},
      {"gemm_rs", "-D", "M=64", "-D", "N=64", "-D", "K=64"},
      {"softmax", "-D", "M=72", "-D", "N=64"},
      {"elementwise", "-D", "N=1000"},
      {"dequant_gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64"},
      {"flash_attention", "-D", "seq_len=136", "-D", "is_causal=1"},
  };
  for (const char* target : {"sm80", "gfx942"}) {
    for (const auto& c : cases) {
      std::vector<std::string> args = {"run"};
      args.insert(args.end(), c.begin(), c.end());
      for (const char* a : {"--level", "thread", "--json", "--target"}) args.push_back(a);
      args.push_back(target);
      CliResult r = run_tessel(args);
      INFO(c[0] << " on " << target << ": " << r.err << r.out.substr(0, 400));
      REQUIRE(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["passed"] == true);
      CHECK(j["tile"]["matches"] == true);
      CHECK(j["sim"]["findings"].empty());
    }
  }
}

TEST_CASE("tessel lower prints the thread-level IR and, with --print-after-all, every pass") {
  CliResult r = run_tessel({"lower", "softmax"});
  CHECK(r.status == 0);
  std::string ir = r.out.substr(r.out.find("@T.prim_func"));
  CHECK(ir.find("T.shfl_xor") != std::string::npos);
  CHECK(ir.find("T.reduce_max") == std::string::npos);  // only in the layout origins above
  CHECK(r.out.find("# fragment row_max: ") != std::string::npos);
  CliResult all = run_tessel({"lower", "softmax", "--print-after-all"});
  size_t last = 0;
  for (const char* pass : {"rasterize_blocks", "infer_layouts", "lower_tile_ops", "flatten_buffers",
                           "insert_barriers", "simplify_indices"}) {
    size_t at = all.out.find(std::string("after ") + pass);
    CHECK_MESSAGE(at != std::string::npos, pass);
    CHECK(at >= last);
    last = at;
  }
  CliResult bad = run_tessel({"lower", "softmax", "--target", "sm75"});
  CHECK(bad.status == 2);
}

}  // TEST_SUITE
