// Lowering on bad or unusual input: every failure is a user error that names the kernel, the
// operator and the fix — never a crash or an internal error — and random tile configurations
// either lower to code that agrees with the tile level or are refused with such a message.
#include <doctest/doctest.h>

#include <random>

#include "codegen/emit.h"
#include "core/builder.h"
#include "core/passes.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

std::string lowering_error(const Kernel& k, const char* target = "sm80") {
  try {
    lower_kernel(k, find_target(target));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("lowering errors") {

TEST_CASE("a Parallel loop over a symbolic extent asks for T.serial") {
  KernelBuilder T("dyn_parallel");
  Var n = T.dynamic("n");
  auto A = T.tensor("A", {n}, DataType::f32());
  T.kernel1(1, 32);
  T.parallel(n, [&](Var i) { A(i) = make_const(DataType::f32(), 1); });
  std::string m = lowering_error(T.finish());
  CHECK(m.find("T.Parallel at ") != std::string::npos);
  CHECK(m.find("the extent of loop 'i' must be a constant (a tile size) for layout inference; "
               "use T.serial for a symbolic trip count") != std::string::npos);
}

TEST_CASE("a reduction of a shared tile is refused where it is written, asking for a fragment") {
  KernelBuilder T("shared_reduce");
  auto A = T.tensor("A", {32, 32}, DataType::f32());
  auto B = T.tensor("B", {32}, DataType::f32());
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {32, 32}, DataType::f32());
  auto R = T.alloc_fragment("R", {32}, DataType::f32());
  T.copy(A, S);
  // Refused where it is written, so the tile level does not run what the thread level refuses.
  std::string m;
  try {
    T.reduce_sum(S, R, 1);
  } catch (const UserError& e) {
    m = e.what();
  }
  CHECK(m.find("T.reduce_sum at ") != std::string::npos);
  CHECK(m.find("'S' is in shared memory; at thread level reductions run on fragments — copy it "
               "into a T.alloc_fragment buffer first") != std::string::npos);
}

TEST_CASE("a copy with a symbolic tile extent names the buffer") {
  KernelBuilder T("dyn_copy");
  Var n = T.dynamic("n");
  auto A = T.tensor("A", {n}, DataType::f32());
  auto B = T.tensor("B", {n}, DataType::f32());
  T.kernel1(1, 32);
  T.copy(A, B);
  std::string m = lowering_error(T.finish());
  CHECK(m.find("T.copy at ") != std::string::npos);
  CHECK(m.find("the tile of 'A' has a symbolic extent; tile extents must be constants") !=
        std::string::npos);
}

TEST_CASE("block rasterisation needs a grid of at least 2 dimensions") {
  KernelBuilder T("raster1d");
  auto A = T.tensor("A", {64}, DataType::f32());
  Var b = T.kernel1(2, 32);
  T.use_swizzle(4);
  A(b) = make_const(DataType::f32(), 0);
  std::string m = lowering_error(T.finish());
  CHECK(m.find("kernel 'raster1d': T.use_swizzle at ") != std::string::npos);
  CHECK(m.find("needs a 2-d or 3-d grid (bx, by[, bz]); this kernel's grid has 1 dimension; "
               "remove it") !=
        std::string::npos);
}

TEST_CASE("a 4-bit tensor has no C type and says how to unpack it") {
  KernelBuilder T("nibbles");
  auto A = T.tensor("A", {64}, DataType::i4());
  auto B = T.tensor("B", {64}, DataType::i8());
  T.kernel1(1, 64);
  Var tx = T.get_thread_binding();
  B(tx) = cast(DataType::i8(), A(tx));
  try {
    emit_source(T.finish(), find_target("sm80"));
    FAIL("expected a user error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("unpack them into int8") != std::string::npos);
  }
}

TEST_CASE("random gemm tile configurations lower correctly or are refused with a user error") {
  const Example* gemm = find_example("gemm");
  std::mt19937 rng(11);
  auto pick = [&](std::vector<int> v) { return v[rng() % v.size()]; };
  int ran = 0, refused = 0;
  for (int trial = 0; trial < 24; ++trial) {
    std::map<std::string, std::string> d = {
        {"M", std::to_string(pick({16, 48, 64, 96}))},
        {"N", std::to_string(pick({16, 40, 64}))},
        {"K", std::to_string(pick({16, 32, 48}))},
        {"block_M", std::to_string(pick({16, 32, 64}))},
        {"block_N", std::to_string(pick({8, 16, 32, 64}))},
        {"block_K", std::to_string(pick({16, 32}))},
        {"num_stages", std::to_string(pick({0, 1, 2, 3}))},
        {"threads", std::to_string(pick({32, 64, 128}))}};
    const char* target = trial % 2 ? "gfx942" : "sm80";
    std::string config;
    for (const auto& [k, v] : d) config += k + "=" + v + " ";
    CAPTURE(config);
    CAPTURE(target);
    Kernel k;
    try {
      k = gemm->build(make_params(*gemm, d));
    } catch (const UserError&) {
      ++refused;  // the example's own parameter checks
      continue;
    }
    Kernel lowered;
    try {
      lowered = lower_kernel(k, find_target(target)).kernel;
    } catch (const UserError& e) {
      ++refused;
      std::string m = e.what();
      CHECK_MESSAGE(m.find("kernel 'gemm'") != std::string::npos, m);
      continue;
    }
    TensorMap tile = make_tensors(k, {}, {"C"}, 1), thread = tile;
    run_tile_level(k, tile);
    ThreadRunOptions o;
    o.target = target;
    ThreadRunResult r = run_thread_level(lowered, thread, o);
    CHECK(compare(thread.at("C"), tile.at("C"), Tolerance::for_dtype(DataType::f32())).passed);
    CHECK(r.report.findings.empty());
    ++ran;
  }
  MESSAGE(ran << " configurations ran, " << refused << " were refused");
  CHECK(ran > 0);
}

}  // TEST_SUITE
