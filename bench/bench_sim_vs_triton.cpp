// Benchmark helper of bench_sim_vs_triton.sh: one timed run of the `gemm` example (fp16 in, fp32
// accumulate, 128x128x32 tiles, 3 stages, 128 threads) at N x N x N, at tile level or at thread
// level (lowered for sm80, every detector on), printed as one JSON line for the Python driver
// that interleaves it with Triton's interpreter. Only the run is timed: building, lowering and
// the random inputs are not.
//
//   bench_sim_vs_triton N tile|thread [WORKERS]   (WORKERS 0 = all cores, the default)

#include <cstdio>
#include <string>

#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_sim_vs_triton N tile|thread [WORKERS]\n");
    return 2;
  }
  const std::string n = argv[1];
  const std::string level = argv[2];
  const int workers = argc > 3 ? std::stoi(argv[3]) : 0;
  if (level != "tile" && level != "thread") {
    std::fprintf(stderr, "bench_sim_vs_triton: level must be tile or thread, not '%s'\n",
                 level.c_str());
    return 2;
  }
  const Example& e = *find_example("gemm");
  Params p = make_params(e, {{"M", n}, {"N", n}, {"K", n}});
  Kernel k = e.build(p);
  TensorMap t = make_tensors(k, {}, e.outputs, 3);
  double seconds = 0;
  long long lane_ops = 0;
  int used = workers;
  bool clean = true;
  if (level == "tile") {
    TileRunStats s = run_tile_level(k, t, TileRunOptions{workers});
    seconds = s.seconds;
  } else {
    Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
    ThreadRunOptions o;
    o.workers = workers;
    o.detectors = true;
    ThreadRunResult r = run_thread_level(lowered, t, o);
    seconds = r.seconds;
    lane_ops = r.lane_ops;
    used = r.workers;
    clean = r.report.findings.empty();
  }
  // The result must be the GEMM: C[0][0] against a double dot product of row 0 and column 0.
  const HostTensor &A = t.at("A"), &B = t.at("B"), &C = t.at("C");
  const int64_t nn = std::stoll(n);
  double want = 0;
  for (int64_t x = 0; x < nn; ++x) want += A.at(x) * B.at(x * nn);
  double got = C.at(0);
  bool ok = std::abs(got - want) <= 1e-3 * (1 + std::abs(want));
  std::printf(
      "{\"n\": %s, \"level\": \"%s\", \"workers\": %d, \"seconds\": %.6f, \"lane_ops\": %lld, "
      "\"clean\": %s, \"correct\": %s}\n",
      n.c_str(), level.c_str(), used, seconds, lane_ops, clean ? "true" : "false",
      ok ? "true" : "false");
  return ok && clean ? 0 : 1;
}
