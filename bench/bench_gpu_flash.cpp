// FlashAttention on the GPU (tools/gpu_flash_bench.h): the `flash_attention` example at the
// paper's FA0-FA4 on every path the device runs (mma.sync; on compute capability 9.x also the
// sm90 path), beside the FlashAttention-3 times bench/flash_baseline.py measured. Correctness
// first (each path at the example's default size against its reference), then per preset >= 25 ms
// of warm-up and 10 runs with the L2 flushed, median with p20/p80, TFLOP/s = 4 b h s^2 d (halved
// when causal) / t. Appends to bench/results/gpu_flash.csv. Without a GPU it says why, exits 0.
// bench/bench_gpu_flash.sh is the one command (it sets up the baseline's venv first).
//
//   build/bench/bench_gpu_flash [--baseline FILE] [--baseline-note TEXT]
//   build/bench/bench_gpu_flash --presets      the presets, one per line, for the baseline script
//   build/bench/bench_gpu_flash --probe        "gpu: <device>", or why there is none (exit 0 both)
#include <fstream>
#include <iostream>
#include <string>

#include "codegen/gpu_runner.h"
#include "tools/gpu_flash_bench.h"

using namespace tessel;
using namespace tessel::cli;

int main(int argc, char** argv) {
  std::string baseline_file, note = "bench/bench_gpu_flash.sh was not used (no --baseline)";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--presets") {
      std::cout << flash_presets_text();
      return 0;
    }
    if (a == "--probe") {
      std::string why;
      std::unique_ptr<CudaSession> gpu = CudaSession::open(&why);
      std::cout << (gpu ? "gpu: " + gpu->device() : "no GPU to run on (" + why + ")") << "\n";
      return 0;
    }
    if ((a == "--baseline" || a == "--baseline-note") && i + 1 < argc) {
      (a == "--baseline" ? baseline_file : note) = argv[++i];
      continue;
    }
    std::cerr << "bench_gpu_flash: unknown argument '" << a
              << "' (use --baseline FILE, --baseline-note TEXT, --presets or --probe)\n";
    return 2;
  }
  std::map<std::string, FlashBaseline> baseline;
  if (!baseline_file.empty()) {
    std::ifstream in(baseline_file);
    std::string why;
    auto b = in ? read_flash_baseline(in, &why) : std::nullopt;
    if (!in) why = "cannot be opened";
    if (!b) {
      std::cerr << "bench_gpu_flash: the baseline file " << baseline_file << ": " << why << "\n";
      return 2;
    }
    baseline = *b;
  }
  try {
    return run_gpu_flash(
        baseline, note, std::string(TESSEL_SOURCE_DIR) + "/bench/results/gpu_flash.csv", std::cout);
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu_flash: " << e.what() << "\n";
    return 2;
  }
}
