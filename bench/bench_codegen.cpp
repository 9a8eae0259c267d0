// Generation and device-compile time of the GEMM kernel: lowering + CUDA/HIP printing (median of
// 9, in process) and nvcc -cubin / clang -S (median of 3, the compiler's wall time), for sm80,
// sm90a, gfx90a and gfx942. Target from the codegen issue: <= 1.5 s for `nvcc -cubin` of the
// sm80 GEMM on this 2-core machine (CuTe-based kernels take 40-50 s). Writes
// bench/results/codegen.csv.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/bench_util.h"
#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/passes.h"
#include "examples/registry.h"

using namespace tessel;

int main() {
  const Example* gemm = find_example("gemm");
  Kernel kernel = gemm->build(make_params(*gemm, {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}}));
  std::string dir = (std::filesystem::temp_directory_path() / "tessel_bench_codegen").string();
  std::string csv = std::string(TESSEL_SOURCE_DIR) + "/bench/results/codegen.csv";
  std::ofstream out(csv);
  out << "date,machine,kernel,target,generate_ms,compiler,compile_s,source_lines,runs\n";
  std::printf("%-8s %12s %12s %8s  %s\n", "target", "generate ms", "compile s", "lines",
              "compiler");
  for (const Target& target : all_targets()) {
    const char* name = target.name.c_str();
    std::vector<double> gen;
    EmittedSource src;
    for (int i = 0; i < 9; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      src = emit_source(lower_kernel(kernel, target).kernel, target);
      gen.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::vector<double> compile;
    std::string compiler = "none";
    for (int i = 0; i < 3; ++i) {
      CompileResult r = compile_device_code(src, target, dir);
      if (!r.skipped.empty() || !r.compiled) {
        compiler = r.skipped.empty() ? "failed" : "skipped: " + r.skipped;
        break;
      }
      compiler = r.command.substr(0, r.command.find(' '));
      compile.push_back(r.seconds);
    }
    int64_t lines = std::count(src.code.begin(), src.code.end(), '\n');
    double gen_ms = bench::median(gen);
    double comp_s = compile.empty() ? 0 : bench::median(compile);
    std::printf("%-8s %12.2f %12.3f %8lld  %s\n", name, gen_ms, comp_s,
                static_cast<long long>(lines), compiler.c_str());
    out << bench::today() << ",\"" << bench::cpu_name()
        << "\",\"gemm 4096^3 128x128x32, 3 stages\"," << name << "," << gen_ms << ",\"" << compiler
        << "\"," << comp_s << "," << lines << "," << compile.size() << "\n";
  }
  std::printf("wrote %s\n", csv.c_str());
  return 0;
}
