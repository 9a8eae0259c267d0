// Benchmark: speed of the thread-level simulator. Runs thread-level example kernels with every
// detector on, on one CPU worker and on all cores, and reports simulated lane-operations per
// second per core (every expression node and memory access, once per active lane; a tensor-core
// mma also counts its m*n*k multiply-adds) and the wall time of the largest kernel available,
// the 256 x 256 x 256 tensor-core GEMM (cp.async + ldmatrix + mma.sync). Prints a table and
// appends the medians to bench/results/sim.csv.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;
using tessel::bench::cpu_name;
using tessel::bench::median;
using tessel::bench::today;

namespace {


struct Case {
  std::string example;
  std::map<std::string, std::string> defines;
  std::string label;
};

struct Measurement {
  double seconds = 0;
  int64_t lane_ops = 0;
  int workers = 1;
  bool clean = true;
};

Measurement measure(const Case& c, int workers, bool detectors, int reps) {
  const Example& e = *find_example(c.example);
  Params p = make_params(e, c.defines);
  Kernel k = e.build(p);
  // Tile-level examples run as the lowering leaves them (sm80), as `run --level thread` does.
  Kernel lowered = is_tile_level(k) ? lower_kernel(k, find_target("sm80")).kernel : k;
  std::map<std::string, int64_t> dims;
  if (e.dynamic_dims) dims = e.dynamic_dims(p);
  TensorMap fresh = make_tensors(k, dims, e.outputs, 3);
  std::vector<double> times;
  Measurement m;
  for (int r = 0; r < reps; ++r) {
    TensorMap t = fresh;
    ThreadRunOptions o;
    o.workers = workers;
    o.detectors = detectors;
    ThreadRunResult res = run_thread_level(lowered, t, o);
    times.push_back(res.seconds);
    m.lane_ops = res.lane_ops;
    m.workers = res.workers;
    m.clean = !res.report.has_errors();
  }
  m.seconds = median(times);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::stoi(argv[1]) : 5;
  const std::string csv =
      argc > 2 ? argv[2] : std::string(TESSEL_SOURCE_DIR) + "/bench/results/sim.csv";
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Case> cases = {
      {"gemm_mma",
       {{"M", "256"}, {"N", "256"}, {"K", "256"}},
       "gemm_mma 256^3 (cp.async+ldmatrix+mma)"},
      {"gemm_simt", {{"M", "256"}, {"N", "256"}, {"K", "256"}}, "gemm_simt 256^3 (scalar FMAs)"},
      {"gemm", {{"M", "256"}, {"N", "256"}, {"K", "256"}}, "gemm 256^3 lowered (sm80, 3 stages)"},
      {"flash_attention", {}, "flash_attention 2x256x64 lowered (sm80)"},
      {"transpose_shared", {{"M", "512"}, {"N", "512"}}, "transpose_shared 512^2"},
      {"row_sum_bank_conflicts", {{"blocks", "64"}}, "row_sum_bank_conflicts 64 blocks"},
  };
  std::printf("thread-level simulator, all detectors on, median of %d runs on %s (%d cores)\n",
              reps, cpu_name().c_str(), cores);
  std::printf("  %-42s %8s %12s %10s %16s\n", "kernel", "workers", "lane-ops", "seconds",
              "lane-ops/s/core");
  std::ofstream out(csv, std::ios::app);
  if (out.tellp() == 0) {
    out << "date,machine,cores,kernel,workers,detectors,lane_ops,seconds,lane_ops_per_s_per_core\n";
  }
  auto row = [&](const Case& c, int workers, bool detectors) {
    Measurement m = measure(c, workers, detectors, reps);
    double per_core = static_cast<double>(m.lane_ops) / m.seconds / m.workers;
    std::string label = c.label + (detectors ? "" : " [detectors off]");
    std::printf("  %-42s %8d %12lld %10.3f %16.3g%s\n", label.c_str(), m.workers,
                static_cast<long long>(m.lane_ops), m.seconds, per_core,
                m.clean ? "" : "  (findings!)");
    out << today() << ",\"" << cpu_name() << "\"," << cores << ",\"" << c.label << "\","
        << m.workers << "," << (detectors ? 1 : 0) << "," << m.lane_ops << "," << m.seconds << ","
        << per_core << "\n";
  };
  for (const Case& c : cases) {
    row(c, 1, true);
    if (cores > 1) row(c, cores, true);
  }
  row(cases[0], 1, false);
  row(cases[1], 1, false);
  return 0;
}
