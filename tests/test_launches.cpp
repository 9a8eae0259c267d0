// Kernels of several T.Kernel launches with T.alloc_global scratch (split-KV decoding, split-K
// with a combine): parsed, printed, run in order at tile and thread level, proved launch by
// launch, emitted as one kernel function per launch; and the workloads built on them.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/builder.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "examples/registry.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

/// Two launches through a scratch tensor: D = 2 * A (launch 1, 4 blocks of 32), C = D + 1
/// (launch 2, 2 blocks of 64).
const char* kTwoLaunches = R"(import tilelang.language as T


@T.prim_func
def two_step(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
    D = T.alloc_global((128,), "float32")
    with T.Kernel(4, threads=32) as bx:
        tx = T.get_thread_binding()
        D[bx * 32 + tx] = A[bx * 32 + tx] * 2.0
    with T.Kernel(2, threads=64) as bx:
        tx = T.get_thread_binding()
        C[bx * 64 + tx] = D[bx * 64 + tx] + 1.0
)";

std::string kernels_dir() { return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/"; }

TensorMap ramp_tensors() {
  TensorMap t;
  t.emplace("A", HostTensor(DataType::f32(), {128}));
  t.emplace("C", HostTensor(DataType::f32(), {128}, 0xFF));
  for (int64_t i = 0; i < 128; ++i) t.at("A").set(i, static_cast<double>(i));
  return t;
}

/// Emits every workload of this file for `target_name` and compiles it with the target's
/// compiler (nvcc for sm80, clang for gfx942); a missing compiler is a printed skip.
void compile_workloads(const char* target_name) {
  const Target& t = find_target(target_name);
  std::string dir =
      (std::filesystem::temp_directory_path() / ("tessel_launches_" + t.name)).string();
  for (const char* name : {"mla_decode", "mla_decode_split", "gemm_splitk"}) {
    const Example* e = find_example(name);
    REQUIRE(e);
    EmittedSource src = emit_source(lower_kernel(e->build(make_params(*e, {})), t).kernel, t);
    CompileResult r = compile_device_code(src, t, dir);
    if (!r.skipped.empty()) {
      MESSAGE("skipped compiling for " << t.name << ": " << r.skipped);
      return;
    }
    INFO(name << " for " << t.name << ": " << r.command << "\n" << r.log.substr(0, 2000));
    CHECK(r.compiled);
  }
}

}  // namespace

TEST_SUITE("launches") {
  TEST_CASE("a kernel file with two launches and global scratch parses into two launches") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    REQUIRE(is_multi_launch(k));
    REQUIRE(k->launches.size() == 2);
    CHECK(k->params.size() == 2);  // A, C: the scratch is no parameter
    REQUIRE(k->scratch.size() == 1);
    CHECK(k->scratch[0]->name == "D");
    CHECK(k->launches[0]->name == "two_step_launch1");
    CHECK(k->launches[0]->threads == 32);
    CHECK(k->launches[1]->threads == 64);
    // Each launch sees the parameters, then the scratch.
    CHECK(k->launches[1]->params.size() == 3);
    CHECK(k->launches[1]->params[2].get() == k->scratch[0].get());
    CHECK(launch_label(k, 1) == "launch 2 of 2 ('two_step_launch2')");
  }

  TEST_CASE("launches written as T.macro helpers (TileLang's split-KV style) are the same kernel") {
    const char* macros = R"(import tilelang.language as T


@T.macro
def double(A, D):
    with T.Kernel(4, threads=32) as bx:
        tx = T.get_thread_binding()
        D[bx * 32 + tx] = A[bx * 32 + tx] * 2.0


@T.macro
def plus_one(D, C):
    with T.Kernel(2, threads=64) as bx:
        tx = T.get_thread_binding()
        C[bx * 64 + tx] = D[bx * 64 + tx] + 1.0


@T.prim_func
def two_step(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
    D = T.alloc_global((128,), "float32")
    double(A, D)
    plus_one(D, C)
)";
    Kernel k = parse_kernel(macros, "macros.py").kernel;
    auto diff = kernel_difference(k, parse_kernel(kTwoLaunches, "two_step.py").kernel);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("the eager @tilelang.jit style with T.empty and two launches is the same kernel") {
    const char* eager = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def two_step(A, N=128, dtype=T.float32):
    A: T.Tensor((N,), dtype)
    C = T.empty((N,), dtype)
    D = T.alloc_global((N,), dtype)
    with T.Kernel(N // 32, threads=32) as bx:
        tx = T.get_thread_binding()
        D[bx * 32 + tx] = A[bx * 32 + tx] * 2.0
    with T.Kernel(N // 64, threads=64) as bx:
        tx = T.get_thread_binding()
        C[bx * 64 + tx] = D[bx * 64 + tx] + 1.0
    return C
)";
    Kernel k = parse_kernel(eager, "eager.py").kernel;
    auto diff = kernel_difference(k, parse_kernel(kTwoLaunches, "two_step.py").kernel);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("a kernel of several launches prints its scratch and launches and reads back equal") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    std::string text = print_kernel(k);
    CHECK(text ==
          "@T.prim_func\n"
          "def two_step(A: T.Tensor((128,), \"float32\"), C: T.Tensor((128,), \"float32\")):\n"
          "    D = T.alloc_global((128,), \"float32\")\n"
          "    with T.Kernel(4, threads=32) as (bx,):\n"
          "        tx = T.get_thread_binding()\n"
          "        D[bx * 32 + tx] = A[bx * 32 + tx] * 2.0\n"
          "    with T.Kernel(2, threads=64) as (bx,):\n"
          "        tx = T.get_thread_binding()\n"
          "        C[bx * 64 + tx] = D[bx * 64 + tx] + 1.0\n");
    Kernel again = parse_kernel(text, "printed.py").kernel;
    auto diff = kernel_difference(k, again);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("the builder makes the same two-launch kernel as the file") {
    KernelBuilder T("two_step");
    auto A = T.tensor("A", {128}, DataType::f32());
    auto C = T.tensor("C", {128}, DataType::f32());
    auto D = T.alloc_global("D", {128}, DataType::f32());
    Var bx = T.kernel1(4, 32);
    Var tx = T.get_thread_binding();
    D(bx * 32 + tx) = A(bx * 32 + tx) * 2.0;
    Var bx2 = T.kernel1(2, 64);
    Var tx2 = T.get_thread_binding();
    C(bx2 * 64 + tx2) = D(bx2 * 64 + tx2) + 1.0;
    Kernel built = T.finish();
    auto diff = kernel_difference(built, parse_kernel(kTwoLaunches, "two_step.py").kernel);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("the launches run in order at tile level and the scratch carries between them") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    TensorMap t = ramp_tensors();
    TileRunStats stats = run_tile_level(k, t);
    CHECK(stats.blocks == 6);  // 4 + 2
    // C[i] = 2 * A[i] + 1 = 2i + 1; launch 2 reads D written by launch 1.
    for (int64_t i = 0; i < 128; ++i) CHECK(t.at("C").at(i) == 2.0 * i + 1.0);
    CHECK(t.count("D") == 0);  // the scratch is freed after the last launch
  }

  TEST_CASE("the launches run in order at thread level with one report") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    TensorMap t = ramp_tensors();
    ThreadRunResult r = run_thread_level(lower_kernel(k, find_target("sm80")).kernel, t);
    CHECK(r.blocks == 6);
    CHECK(r.report.findings.empty());
    for (int64_t i = 0; i < 128; ++i) CHECK(t.at("C").at(i) == 2.0 * i + 1.0);
    // Each launch makes one global load and one store per warp: launch 1 has 4 blocks of one
    // warp, launch 2 two blocks of two warps: 4 + 4 = 8 loads and 8 stores.
    CHECK(r.report.total.global_requests == 16);
  }

  TEST_CASE("a finding of a later launch names that launch") {
    // Launch 2 reads D one past its end in the last thread.
    std::string text = kTwoLaunches;
    text.replace(text.find("D[bx * 64 + tx] + 1.0"), 21, "D[bx * 64 + tx + 1] + 1.0");
    Kernel k = parse_kernel(text, "two_step.py").kernel;
    TensorMap t = ramp_tensors();
    ThreadRunResult r = run_thread_level(k, t);
    REQUIRE(!r.report.findings.empty());
    CHECK(r.report.findings[0].message.rfind("launch 2 of 2 ('two_step_launch2'): ", 0) == 0);
    CHECK(r.report.findings[0].buffer == "D");
  }

  TEST_CASE("verify proves each launch and names it in every check") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    KernelProofs p = verify_kernel(k, find_target("sm80"));
    CHECK(p.all_proved());
    int first = 0, second = 0;
    for (const KernelCheck& c : p.checks) {
      first += c.what.rfind("launch 1 of 2", 0) == 0;
      second += c.what.rfind("launch 2 of 2", 0) == 0;
    }
    CHECK(first > 0);
    CHECK(second > 0);
    CHECK(first + second == static_cast<int>(p.checks.size()));
  }

  TEST_CASE("verify proves every access of the scratch inside it, and finds one past its end") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    int bounds = 0;
    for (const KernelCheck& c : verify_kernel(k, find_target("sm80")).checks) {
      if (c.what.find("bounds of scratch D (T.alloc_global, [128] float32)") == std::string::npos)
        continue;
      ++bounds;
      CHECK(c.result == "proved");
    }
    CHECK(bounds == 2);  // launch 1 stores D, launch 2 loads it
    // Launch 2 reading D[bx * 64 + tx + 1]: only block 1, thread 63 reaches D[128], one past the
    // end of its 128 elements.
    std::string text = kTwoLaunches;
    text.replace(text.find("D[bx * 64 + tx] + 1.0"), 21, "D[bx * 64 + tx + 1] + 1.0");
    KernelProofs p = verify_kernel(parse_kernel(text, "two_step.py").kernel, find_target("sm80"));
    const KernelCheck* failed = nullptr;
    for (const KernelCheck& c : p.checks) {
      if (c.result == "failed") failed = &c;
    }
    REQUIRE(failed != nullptr);
    CHECK(failed->what.rfind("launch 2 of 2 ('two_step_launch2'): bounds of scratch D", 0) == 0);
    REQUIRE(failed->counterexample.has_value());
    INFO(*failed->counterexample);
    CHECK(failed->counterexample->find("loads D[128]") != std::string::npos);
    CHECK(failed->counterexample->find("thread 63") != std::string::npos);
    CHECK(failed->counterexample->find("outside the scratch tensor D") != std::string::npos);
  }

  TEST_CASE("emit prints one kernel function per launch, in launch order, and the scratch") {
    Kernel k = parse_kernel(kTwoLaunches, "two_step.py").kernel;
    const Target& t = find_target("sm80");
    EmittedSource src = emit_source(lower_kernel(k, t).kernel, t);
    REQUIRE(src.launches.size() == 2);
    CHECK(src.launches[0].entry == "two_step_launch1");
    CHECK(src.launches[0].grid == std::vector<std::string>{"4"});
    CHECK(src.launches[1].threads == 64);
    CHECK(src.scratch == std::vector<std::string>{"D"});
    CHECK(src.arguments == std::vector<std::string>{"A", "C", "D"});
    size_t one = src.code.find("void __launch_bounds__(32, 1) two_step_launch1(");
    size_t two = src.code.find("void __launch_bounds__(64, 1) two_step_launch2(");
    CHECK(one != std::string::npos);
    CHECK(two != std::string::npos);
    CHECK(one < two);
    CHECK(src.code.find("// Scratch (T.alloc_global") != std::string::npos);
  }

  TEST_CASE("launch errors name the construct and the fix") {
    const char* nested = R"(import tilelang.language as T


@T.prim_func
def nested(A: T.Tensor((128,), "float32")):
    with T.Kernel(4, threads=32) as bx:
        with T.Kernel(2, threads=64) as by:
            A[by] = 1.0
)";
    CHECK_THROWS_WITH(parse_kernel(nested, "n.py"),
                      doctest::Contains("a T.Kernel launch inside another"));
    const char* inside = R"(import tilelang.language as T


@T.prim_func
def inside(A: T.Tensor((128,), "float32")):
    with T.Kernel(4, threads=32) as bx:
        E = T.alloc_global((4,), "float32")
        A[bx] = 1.0
)";
    CHECK_THROWS_WITH(parse_kernel(inside, "i.py"), doctest::Contains("not inside a launch"));
    const char* twice = R"(import tilelang.language as T


@T.prim_func
def twice(A: T.Tensor((128,), "float32")):
    E = T.alloc_global((4,), "float32")
    E = T.alloc_global((4,), "float32")
    with T.Kernel(4, threads=32) as bx:
        A[bx] = 1.0
)";
    CHECK_THROWS_WITH(parse_kernel(twice, "t.py"), doctest::Contains("'E'"));
    const char* param = R"(import tilelang.language as T


@T.prim_func
def param(A: T.Tensor((128,), "float32")):
    A = T.alloc_global((4,), "float32")
    with T.Kernel(4, threads=32) as bx:
        A[bx] = 1.0
)";
    CHECK_THROWS_WITH(parse_kernel(param, "p.py"),
                      doctest::Contains("'A' is a tensor parameter of 'param'"));
    const char* no_dtype = R"(import tilelang.language as T


@T.prim_func
def no_dtype(A: T.Tensor((128,), "float32")):
    E = T.alloc_global((4,))
    with T.Kernel(4, threads=32) as bx:
        A[bx] = 1.0
)";
    CHECK_THROWS_WITH(parse_kernel(no_dtype, "d.py"),
                      doctest::Contains("T.alloc_global needs argument 'dtype'"));
  }

  TEST_CASE(
      "mla_decode, its split-KV form and gemm_splitk run at tile level like their references") {
    for (const char* name : {"mla_decode", "mla_decode_split", "gemm_splitk"}) {
      CliResult r = run_tessel({"run", name, "--json"});
      INFO(name << ": " << r.out << r.err);
      REQUIRE(r.status == 0);
      CHECK(nlohmann::json::parse(r.out)["passed"] == true);
    }
  }

  TEST_CASE("the workloads run at thread level on sm80 and gfx942 like their references") {
    struct Case {
      const char* name;
      std::vector<std::string> defines;
    };
    // Small shapes: MLA with one sequence and 64 keys; split-K 128 x 64 x 256 in 4 slices.
    std::vector<Case> cases = {{"mla_decode", {"-D", "batch=1", "-D", "seqlen_kv=64"}},
                               {"mla_decode_split", {"-D", "batch=1", "-D", "seqlen_kv=128"}},
                               {"gemm_splitk", {"-D", "M=128", "-D", "N=64", "-D", "K=256"}}};
    for (const Case& c : cases) {
      for (const char* target : {"sm80", "gfx942"}) {
        std::vector<std::string> args = {"run",      c.name, "--level", "thread",
                                         "--target", target, "--json"};
        args.insert(args.end(), c.defines.begin(), c.defines.end());
        CliResult r = run_tessel(args);
        INFO(c.name << " on " << target << ": " << r.out.substr(0, 3000) << r.err);
        REQUIRE(r.status == 0);
        auto j = nlohmann::json::parse(r.out);
        CHECK(j["passed"] == true);
        CHECK(j["sim"]["findings"].empty());
      }
    }
  }

  TEST_CASE("the workloads prove free of bank conflicts on sm80") {
    for (const char* name : {"mla_decode", "mla_decode_split", "gemm_splitk"}) {
      CliResult r = run_tessel({"verify", name, "--target", "sm80", "--json"});
      INFO(name << ": " << r.out.substr(0, 4000) << r.err);
      CHECK(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["failed"] == 0);
      CHECK(j["undecided"] == 0);
    }
  }

  TEST_CASE("the workloads' kernel files run unmodified against the built-in references") {
    for (const char* file : {"mla_decode.py", "mla_decode_split.py", "gemm_splitk.py"}) {
      CliResult r = run_tessel({"run", kernels_dir() + file, "--json"});
      INFO(file << ": " << r.out.substr(0, 3000) << r.err);
      REQUIRE(r.status == 0);
      CHECK(nlohmann::json::parse(r.out)["passed"] == true);
    }
  }

  TEST_CASE("the workloads compile for sm80 with nvcc when it is present") {
    compile_workloads("sm80");
  }

  TEST_CASE("the workloads compile for gfx942 with clang when it is present") {
    compile_workloads("gfx942");
  }
}
