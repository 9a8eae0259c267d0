// CUDA and HIP code generation: the printed kernel (golden), the instruction spellings taken from
// the intrinsic table, every example compiled by every compiler this machine has (nvcc -cubin for
// sm80 and sm90a, clang for gfx90a and gfx942; a missing one is a printed skip), and the errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/gpu_runner.h"
#include "codegen/toolchain.h"
#include "core/builder.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "examples/presets.h"
#include "examples/registry.h"
#include "tests/cli_runner.h"
#include "tools/kernel_source.h"

using namespace tessel;

namespace {

/// The kernel function of a translation unit without its location comments.
std::string kernel_text(const std::string& code) {
  std::istringstream in(code.substr(code.find("extern \"C\"")));
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("  // ") == 0 || line.find("    // ") == 0) continue;
    out += line + "\n";
  }
  return out;
}

Kernel axpy() {
  KernelBuilder T("axpy");
  auto A = T.tensor("A", {64}, DataType::f32());
  auto B = T.tensor("B", {64}, DataType::f16());
  T.kernel1(1, 64);
  Var tx = T.get_thread_binding();
  B(tx) = cast(DataType::f16(), A(tx) * 2.0 + 1.0);
  return T.finish();
}

Kernel lowered_example(const std::string& name, const Target& target) {
  const Example* e = find_example(name);
  REQUIRE(e);
  std::map<std::string, std::string> defines;
  if (name == "elementwise") defines["N"] = "1000";
  return lower_kernel(e->build(make_params(*e, defines)), target).kernel;
}

/// Tile atomics from a fragment and a scalar atomic (the helpers for atomics the runtime lacks).
Kernel atomics() {
  KernelBuilder T("atomics");
  auto A = T.tensor("A", {4, 64}, DataType::f32());
  auto C = T.tensor("C", {64}, DataType::f32());
  auto H = T.tensor("H", {1}, DataType::f16());
  Var b = T.kernel1(4, 128);
  auto row = T.alloc_fragment("row", {64}, DataType::f32());
  T.copy(A(b, 0), row);
  T.atomic_add(C(0), row);
  T.atomic(AtomicKind::kMax, C(0), cast(DataType::f32(), b));
  T.atomic(AtomicKind::kMax, H(0), cast(DataType::f16(), b));
  return T.finish();
}

/// Row minima and largest magnitudes of an int32 tile: the reductions' shuffles are operands of
/// integer mins, maxes and absolute values.
Kernel int_row_min() {
  KernelBuilder T("int_row_min");
  auto A = T.tensor("A", {64, 128}, DataType::i32());
  auto C = T.tensor("C", {64}, DataType::i32());
  auto D = T.tensor("D", {64}, DataType::i32());
  T.kernel1(1, 128);
  auto tile = T.alloc_fragment("tile", {64, 128}, DataType::i32());
  auto low = T.alloc_fragment("low", {64}, DataType::i32());
  auto peak = T.alloc_fragment("peak", {64}, DataType::i32());
  T.copy(A(0, 0), tile);
  T.reduce_min(tile, low, 1);
  T.reduce_absmax(tile, peak, 1);
  T.copy(low, C(0));
  T.copy(peak, D(0));
  return T.finish();
}

/// The lines of `code`'s kernel that run a lane shuffle inside a conditional expression, where
/// only the lanes that take that side would run it (a full-mask shuffle on part of a warp reads
/// garbage).
std::vector<std::string> shuffles_under_a_condition(const std::string& code) {
  std::vector<std::string> bad;
  std::istringstream in(kernel_text(code));
  for (std::string line; std::getline(in, line);) {
    bool shuffle =
        line.find("__shfl") != std::string::npos || line.find("tessel_shfl") != std::string::npos;
    if (shuffle && line.find(" ? ") != std::string::npos) bad.push_back(line);
  }
  return bad;
}

void compile_every_example(const char* target_name) {
  const Target& target = find_target(target_name);
  std::string dir =
      (std::filesystem::temp_directory_path() / ("tessel_codegen_" + target.name)).string();
  for (const char* name : {"gemm", "gemm_transpose_b", "gemm_rs", "softmax", "elementwise",
                           "dequant_gemm", "flash_attention"}) {
    EmittedSource src = emit_source(lowered_example(name, target), target);
    CompileResult r = compile_device_code(src, target, dir);
    if (!r.skipped.empty()) {
      MESSAGE("skipped compiling for " << target.name << ": " << r.skipped);
      return;
    }
    INFO(name << " for " << target.name << ": " << r.command << "\n" << r.log.substr(0, 2000));
    CHECK(r.compiled);
  }
  CompileResult r =
      compile_device_code(emit_source(lower_kernel(atomics(), target).kernel, target), target, dir);
  INFO("atomics for " << target.name << ": " << r.log.substr(0, 2000));
  CHECK(r.compiled);
}

}  // namespace

TEST_SUITE("codegen") {
  TEST_CASE("a thread-level kernel prints as one CUDA kernel line for line") {
    EmittedSource src = emit_source(axpy(), find_target("sm80"));
    CHECK(src.entry == "axpy");
    CHECK(src.threads == 64);
    CHECK(src.arguments == std::vector<std::string>{"A", "B"});
    CHECK(kernel_text(src.code) ==
          "extern \"C\" __global__ void __launch_bounds__(64, 1) axpy(float* __restrict__ A, half* "
          "__restrict__ B) {\n"
          "  const int tx = static_cast<int>(threadIdx.x);\n"
          "  const int bx = static_cast<int>(blockIdx.x);\n"
          "  B[tx] = static_cast<half>(((A[tx] * 2.0f) + 1.0f));\n"
          "}\n");
  }

  TEST_CASE("a loop past 2^31 iterations counts in long long with an LL bound") {
    KernelBuilder T("long_loop");
    auto A = T.tensor("A", {64}, DataType::f32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    T.serial(
        Expr(1) << 40, [&](Var k) { A(tx) = A(tx) + 1.0; }, "k");
    std::string code = kernel_text(emit_source(T.finish(), find_target("sm80")).code);
    // 1 << 40 = 1099511627776: folded exactly (32-bit folding made it 0, a loop that never ran).
    CHECK(code.find("for (long long k = 0; k < 1099511627776LL; ++k) {") != std::string::npos);
  }

  TEST_CASE("the offset into a symbolic-size tensor is computed in 64 bits") {
    KernelBuilder T("big_rows");
    Var n = T.dynamic("n");
    auto A = T.tensor("A", {n, 65536}, DataType::f32());
    auto B = T.tensor("B", {64, 64}, DataType::f32());
    Var bx = T.kernel1(n, 64);
    Var tx = T.get_thread_binding();
    A(bx, tx) = B(0, tx);
    std::string code = kernel_text(emit_source(T.finish(), find_target("sm80")).code);
    // A may hold n * 65536 >= 2^31 elements: bx * 65536 must not wrap in int; B is 4096 elements.
    CHECK(code.find("A[((static_cast<long long>(bx) * 65536LL) + static_cast<long long>(tx))]") !=
          std::string::npos);
    CHECK(code.find("= B[tx];") != std::string::npos);
  }

  TEST_CASE("the same kernel in HIP uses amdgcn builtins and no runtime header") {
    EmittedSource src = emit_source(axpy(), find_target("gfx942"));
    CHECK(src.code.find("#include") == std::string::npos);
    CHECK(
        kernel_text(src.code) ==
        "extern \"C\" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 64))) "
        "void axpy(float* __restrict__ A, _Float16* __restrict__ B) {\n"
        "  const int tx = static_cast<int>(__builtin_amdgcn_workitem_id_x());\n"
        "  const int bx = static_cast<int>(__builtin_amdgcn_workgroup_id_x());\n"
        "  B[tx] = static_cast<_Float16>(((A[tx] * 2.0f) + 1.0f));\n"
        "}\n");
  }

  TEST_CASE("float max and min are fmaxf/fminf, as the interpreters evaluate them") {
    // Both interpreter levels compute float max/min with std::fmax/std::fmin: a NaN operand yields
    // the other operand. `x < y ? y : x` would yield the NaN when x is one, so the GPU would
    // disagree with the simulator; fmaxf/fminf agree (and are one FMNMX instruction).
    KernelBuilder T("clamp");
    auto A = T.tensor("A", {64}, DataType::f32());
    auto B = T.tensor("B", {64}, DataType::f16());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    A(tx) = max(min(A(tx), make_const(DataType::f32(), 6.0)), make_const(DataType::f32(), 0.0));
    B(tx) = max(B(tx), make_const(DataType::f16(), 1.0));
    Kernel k = T.finish();
    std::string cuda = kernel_text(emit_source(k, find_target("sm80")).code);
    CHECK(cuda.find("A[tx] = fmaxf(fminf(A[tx], 6.0f), 0.0f);") != std::string::npos);
    // f16 goes through float and back, as every f16 operation does.
    CHECK(cuda.find("B[tx] = static_cast<half>(fmaxf(static_cast<float>(B[tx]),") !=
          std::string::npos);
    CHECK(cuda.find(" ? ") == std::string::npos);
    std::string hip = kernel_text(emit_source(k, find_target("gfx942")).code);
    CHECK(hip.find("A[tx] = __builtin_fmaxf(__builtin_fminf(A[tx], 6.0f), 0.0f);") !=
          std::string::npos);
  }

  TEST_CASE("T.exp2 on f32 is the GPU's ex2.approx on CUDA and the builtin on HIP") {
    // FlashAttention's softmax: every f32 exp2 goes through tessel_exp2f (ex2.approx.ftz.f32, the
    // MUFU.EX2 that exp2f is for x >= -126, without exp2f's rescaling of results below 2^-126);
    // HIP keeps __builtin_exp2f.
    const Target& sm80 = find_target("sm80");
    std::string cuda = emit_source(lowered_example("flash_attention", sm80), sm80).code;
    auto occurrences = [](const std::string& text, const std::string& what) {
      int n = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(cuda.find("asm(\"ex2.approx.ftz.f32 %0, %1;\"") != std::string::npos);
    CHECK(occurrences(cuda, "tessel_exp2f(") >= 3);  // the helper and the two exp2 of the body
    CHECK(occurrences(cuda, "exp2f(") == occurrences(cuda, "tessel_exp2f("));
    const Target& gfx = find_target("gfx942");
    std::string hip = emit_source(lowered_example("flash_attention", gfx), gfx).code;
    CHECK(hip.find("__builtin_exp2f(") != std::string::npos);
    CHECK(hip.find("tessel_exp2f") == std::string::npos);
  }

  TEST_CASE("the sm80 gemm is spelled with the intrinsic table's PTX") {
    const Target& sm80 = find_target("sm80");
    std::string code = emit_source(lowered_example("gemm", sm80), sm80).code;
    for (IntrinsicId id : {IntrinsicId::kMmaM16N8K16F16, IntrinsicId::kLdmatrixX4,
                           IntrinsicId::kCpAsync16, IntrinsicId::kCpAsyncWaitGroup}) {
      CHECK_MESSAGE(code.find(intrinsic_info(id).cuda) != std::string::npos,
                    intrinsic_info(id).cuda);
    }
    // Only the instructions the kernel uses get a helper.
    CHECK(code.find(intrinsic_info(IntrinsicId::kLdmatrixX1).cuda) == std::string::npos);
    // The shared tiles come from one dynamic pool: 3 stages x (128x32 + 32x128) f16 = 48 KiB.
    CHECK(emit_source(lowered_example("gemm", sm80), sm80).dynamic_shared_bytes ==
          3 * 2 * 128 * 32 * 2);
  }

  TEST_CASE("in a pipeline's main loop a shared operand is a fixed pointer plus the stage offset") {
    // The gemm example: 3 stages of a 128x32 f16 tile, 4096 elements per version. The main loop
    // (k from 2) reads version (k - 2) % 3 = (k + 1) % 3 and writes version k % 3; those terms
    // are added to a pointer whose index does not depend on k (nvcc hoists it). The prologue
    // (no enclosing loop of loops) keeps the plain form.
    const Target& sm80 = find_target("sm80");
    std::string code = kernel_text(emit_source(lowered_example("gemm", sm80), sm80).code);
    size_t loop = code.find("for (int k = 2; k < 16; ++k) {");
    REQUIRE(loop != std::string::npos);
    std::string prologue = code.substr(0, loop), main = code.substr(loop);
    main = main.substr(0, main.find("\n  }\n"));
    CHECK(prologue.find("tessel_cp_async_16(&A_shared[") != std::string::npos);
    CHECK(main.find("] + ((k % 3) * 4096)), &A[") != std::string::npos);
    CHECK(main.find("tessel_ldmatrix_x4(&A_shared_frag[(i * 8)], (&A_shared[") !=
          std::string::npos);
    CHECK(main.find("] + (((k + 1) % 3) * 4096)));") != std::string::npos);
    CHECK(main.find("&A_shared[((((k") == std::string::npos);
  }

  TEST_CASE("the gfx942 gemm calls the MFMA builtin of the table") {
    const Target& gfx = find_target("gfx942");
    std::string code = emit_source(lowered_example("gemm", gfx), gfx).code;
    CHECK(code.find(intrinsic_info(IntrinsicId::kMfma16x16x16F16).hip + "(") != std::string::npos);
    CHECK(code.find("cp.async") == std::string::npos);
  }

  TEST_CASE("every example compiles with nvcc for sm80") { compile_every_example("sm80"); }
  TEST_CASE("every example compiles with nvcc for sm90a") { compile_every_example("sm90"); }
  TEST_CASE("every example compiles with clang for gfx90a") { compile_every_example("gfx90a"); }
  TEST_CASE("every example compiles with clang for gfx942") { compile_every_example("gfx942"); }

  TEST_CASE("an integer reduction's shuffles run on the whole warp, not under a compare") {
    // Regression (found on an H200): `min(shfl(x), x)` on int32 was printed as
    // `(shfl(x) < x ? shfl(x) : x)`, so the second shuffle ran on only the lanes whose compare
    // held and returned garbage (the top-k example's indices were float bits).
    for (const char* name : {"sm80", "gfx942"}) {
      const Target& target = find_target(name);
      std::string code = emit_source(lower_kernel(int_row_min(), target).kernel, target).code;
      INFO(name << ":\n" << code);
      CHECK(shuffles_under_a_condition(code).empty());
      CHECK(std::regex_search(
          code, std::regex(target.nvidia ? R"(tessel_min<int>\([^;]*__shfl_xor_sync\()"
                                         : R"(tessel_min<int>\([^;]*tessel_shfl_xor<)")));
    }
  }

  TEST_CASE("no kernel file's code runs a shuffle inside a conditional expression") {
    // The top-k miscompile was in a kernel file (examples/kernels/topk.py), not a built-in.
    std::string dir = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels";
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::string path = entry.path().string();
      if (entry.path().extension() != ".py") continue;
      std::ifstream in(path);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (const KernelFileEntry& listed : list_kernels(text, path)) {
        for (const Target& target : all_targets()) {
          std::string code;
          try {
            cli::ResolvedKernel k = cli::resolve_kernel(path, {}, listed.name);
            Kernel kernel = k.example->build(k.params);
            if (is_multi_launch(kernel)) continue;
            Kernel lowered = is_tile_level(kernel) ? lower_kernel(kernel, target).kernel : kernel;
            code = emit_source(lowered, target).code;
          } catch (const std::exception&) {
            continue;  // sizes from host code (-D needed), or not lowerable for this target
          }
          INFO(path << " " << listed.name << " for " << target.name);
          CHECK(shuffles_under_a_condition(code) == std::vector<std::string>{});
          ++checked;
        }
      }
    }
    CHECK(checked > 100);  // 40 files, 4 targets: most lower
  }

  TEST_CASE("no example's code runs a shuffle inside a conditional expression") {
    for (const Target& target : all_targets()) {
      for (const Example& e : examples()) {
        if (e.name.rfind("bug_", 0) == 0) continue;
        std::string code;
        try {
          Kernel k = e.build(make_params(e, {}));
          if (is_multi_launch(k)) continue;
          code = emit_source(is_tile_level(k) ? lower_kernel(k, target).kernel : k, target).code;
        } catch (const UserError&) {
          continue;  // not lowerable for this target (a Hopper-only kernel on sm80, say)
        }
        INFO(e.name << " for " << target.name);
        CHECK(shuffles_under_a_condition(code) == std::vector<std::string>{});
      }
    }
  }

  TEST_CASE("a block index of more than 65535 blocks along y or z is launched along x") {
    // Regression (found on an H200): chunk_scan at CC5 has grid (1, 4, 64 * 8192 / 256 * 64 =
    // 131072); gridDim.z is at most 65535, so the launch was refused and the benchmark timed an
    // empty run.
    const Example* e = find_example("chunk_scan");
    REQUIRE(e);
    const Target& target = find_target("sm80");
    Kernel k = e->build(make_params(*e, apply_preset("chunk_scan", {{"preset", "CC5"}})));
    EmittedSource src = emit_source(lower_kernel(k, target).kernel, target);
    CHECK(src.grid_axes == std::vector<int>{2, 1, 0});
    CHECK(src.grid == std::vector<std::string>{"131072", "4", "1"});
    CHECK(src.code.find("Launch: grid (131072, 4, 1)") != std::string::npos);
    CHECK(src.code.find("const int bz = static_cast<int>(blockIdx.x);") != std::string::npos);
    CHECK(src.code.find("const int bx = static_cast<int>(blockIdx.z);") != std::string::npos);
    // A grid that fits keeps its axes.
    Kernel small = e->build(
        make_params(*e, apply_preset("chunk_scan", {{"preset", "CC4"}})));  // (1, 4, 32768)
    CHECK(emit_source(lower_kernel(small, target).kernel, target).grid_axes ==
          std::vector<int>{0, 1, 2});
  }

  TEST_CASE("a grid no GPU can launch is an error that says how to fold it") {
    KernelBuilder T("huge_grid");
    auto A = T.tensor("A", {70000, 70000}, DataType::f32());
    auto blocks = T.kernel({1, 70000, 70000}, 32);
    A(blocks[1], blocks[2]) = make_const(DataType::f32(), 1.0);
    Kernel k = T.finish();
    try {
      emit_source(k, find_target("sm80"));
      FAIL("expected a user error");
    } catch (const UserError& err) {
      std::string m = err.what();
      CHECK(m.find("kernel 'huge_grid': the grid (1, 70000, 70000) does not fit a GPU launch") !=
            std::string::npos);
      CHECK(m.find("fold the large block indices into one") != std::string::npos);
    }
  }

  TEST_CASE("a wgmma operand annotated with TileLang's make_swizzled_layout lowers for sm90") {
    // Regression (found on an H200): convolution.py's make_swizzled_layout of a 64 x 32 f16
    // tile is the 64-byte swizzle the wgmma descriptor reads, written over three outputs; sm90
    // refused it as a different layout.
    std::string file = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/convolution.py";
    CliResult r =
        run_tessel({"emit", file,   "--kernel", "convolution", "--target", "sm90", "-D", "N=2",
                    "-D",   "C=64", "-D",       "H=16",        "-D",       "W=16", "-D", "F=64",
                    "-D",   "K=3",  "-D",       "S=1",         "-D",       "D=1",  "-D", "P=1"});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find("wgmma.mma_async") != std::string::npos);
  }

  TEST_CASE("an unlowered tile operator is an error that names it") {
    const Example* e = find_example("softmax");
    Kernel tile = e->build(make_params(*e, {}));
    try {
      emit_source(tile, find_target("sm80"));
      FAIL("expected a user error");
    } catch (const UserError& err) {
      std::string m = err.what();
      CHECK(m.find("kernel 'softmax': T.copy at softmax.cpp:") != std::string::npos);
      CHECK(m.find("was not lowered") != std::string::npos);
    }
  }

  TEST_CASE("tessel emit writes the source and rejects unknown targets") {
    CliResult cuda = run_tessel({"emit", "softmax", "--target", "cuda"});
    CHECK(cuda.status == 0);
    CHECK(cuda.out.find("extern \"C\" __global__") != std::string::npos);
    CHECK(cuda.out.find("__shfl_xor_sync") != std::string::npos);
    CliResult hip = run_tessel({"emit", "softmax", "--target", "hip"});
    CHECK(hip.status == 0);
    CHECK(hip.out.find("tessel_shfl_xor<float>") != std::string::npos);
    CHECK(run_tessel({"emit", "softmax", "--target", "metal"}).status == 2);
  }

  TEST_CASE("run --device cuda runs on the GPU, or says why it cannot") {
    std::string why;
    bool gpu = !cuda_device_target(&why).empty();
    CliResult r = run_tessel({"run", "softmax", "--device", "cuda", "--json"});
    if (!gpu) {
      MESSAGE("no GPU here: " << why);
      CHECK(r.status == 2);
      CHECK(r.err.find("cannot run on a GPU here: " + why) != std::string::npos);
    } else {
      CHECK(r.status == 0);
      CHECK(nlohmann::json::parse(r.out)["passed"] == true);
    }
  }

  TEST_CASE("run --device cuda lowers for the --target asked, an NVIDIA one only") {
    CliResult amd = run_tessel({"run", "softmax", "--device", "cuda", "--target", "gfx942"});
    CHECK(amd.status == 2);
    CHECK(amd.err.find("--device cuda --target gfx942: that is an AMD target") !=
          std::string::npos);
    CliResult unknown = run_tessel({"run", "softmax", "--device", "cuda", "--target", "sm99"});
    CHECK(unknown.status == 2);
    CHECK(unknown.err.find("--device cuda --target sm99: unknown target; use one of sm80, sm90") !=
          std::string::npos);
    std::string why;
    if (cuda_device_target(&why).empty()) {
      MESSAGE("no GPU here: " << why);
      return;
    }
    // Code lowered for sm80 runs on every NVIDIA GPU the runner accepts (8.x and 9.x).
    CliResult r = run_tessel({"run", "gemm", "--device", "cuda", "--target", "sm80", "--json"});
    CHECK(r.status == 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["target"] == "sm80");
    CHECK(j["passed"] == true);
  }

}  // TEST_SUITE
