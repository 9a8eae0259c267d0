// Benchmark: what software pipelining changes in the simulator's own counters. Lowers the `gemm`
// example (512 x 512 x 512, 128 x 128 x 32 tiles, 128 threads, sm80) with 0 to 4 pipeline
// stages, runs each at thread level on one CPU worker, and reports barrier rounds, cp.async
// bytes, the most cp.async bytes one block has in flight, the shared-memory footprint of the
// lowered kernel, memory requests, wavefronts and sectors, and the simulator's wall time (median
// of several interleaved runs). Prints a table and appends the rows to bench/results/pipeline.csv.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;
using tessel::bench::cpu_name;
using tessel::bench::median;
using tessel::bench::today;

namespace {

/// Bytes of every shared allocation of `kernel` (per block).
int64_t shared_bytes(const Kernel& kernel) {
  int64_t bytes = 0;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    const auto* a = s.as<AllocNode>();
    if (!a) return;
    const Buffer& b = a->buffer;
    if (b->scope != Scope::kShared && b->scope != Scope::kSharedDyn) return;
    bytes += b->dtype.storage_bytes(b->const_size().value_or(0));
  });
  return bytes;
}

struct Row {
  int stages = 0;
  int64_t barriers = 0, async_bytes = 0, max_in_flight = 0, shared = 0;
  int64_t shared_requests = 0, wavefronts = 0, global_requests = 0, sectors = 0;
  std::vector<double> times;
  bool clean = true;
};

/// One lowered kernel with its inputs and the reference result.
struct Case {
  Kernel lowered;
  TensorMap inputs, expected;
};

Case prepare(int stages) {
  const Example& e = *find_example("gemm");
  Params p = make_params(e, {{"M", "512"},
                             {"N", "512"},
                             {"K", "512"},
                             {"block_M", "128"},
                             {"block_N", "128"},
                             {"block_K", "32"},
                             {"threads", "128"},
                             {"num_stages", std::to_string(stages)}});
  Kernel k = e.build(p);
  Case c{lower_kernel(k, find_target("sm80")).kernel, make_tensors(k, {}, e.outputs, 3), {}};
  c.expected = c.inputs;
  e.reference(p, c.expected);
  return c;
}

/// One run on one CPU worker; the counters are the same every run, the time is appended.
void run_once(const Case& c, Row& row) {
  TensorMap t = c.inputs;
  ThreadRunOptions o;
  o.workers = 1;
  ThreadRunResult res = run_thread_level(c.lowered, t, o);
  row.times.push_back(res.seconds);
  const sim::SimReport& s = res.report;
  row.barriers = s.barriers;
  row.async_bytes = s.async_bytes;
  row.max_in_flight = s.max_async_in_flight;
  row.shared_requests = s.total.shared_requests;
  row.wavefronts = s.total.wavefronts;
  row.global_requests = s.total.global_requests;
  row.sectors = s.total.sectors;
  row.clean = row.clean && !s.has_errors() &&
              compare(t.at("C"), c.expected.at("C"), Tolerance::for_dtype(DataType::f32())).passed;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::stoi(argv[1]) : 3;
  const std::string csv =
      argc > 2 ? argv[2] : std::string(TESSEL_SOURCE_DIR) + "/bench/results/pipeline.csv";
  std::printf(
      "gemm 512^3, 128x128x32 tiles, 128 threads, sm80, thread level on 1 worker, median of %d "
      "interleaved runs on %s\n",
      reps, cpu_name().c_str());
  std::printf("  %6s %8s %10s %10s %8s %10s %10s %10s %10s %8s\n", "stages", "barriers",
              "cp.async B", "in flight", "shared B", "sh. reqs", "wavefronts", "gl. reqs",
              "sectors", "seconds");
  std::ofstream out(csv, std::ios::app);
  if (out.tellp() == 0) {
    out << "date,machine,kernel,num_stages,barrier_rounds,async_bytes,max_async_in_flight,"
           "shared_bytes,shared_requests,wavefronts,global_requests,sectors,seconds,reps\n";
  }
  std::vector<Case> cases;
  std::vector<Row> rows(5);
  for (int stages = 0; stages <= 4; ++stages) {
    cases.push_back(prepare(stages));
    rows[stages].stages = stages;
    rows[stages].shared = shared_bytes(cases[stages].lowered);
  }
  // Interleaved: every stage count once per round, so load on the machine hits them alike.
  for (int rep = 0; rep < reps; ++rep) {
    for (int stages = 0; stages <= 4; ++stages) run_once(cases[stages], rows[stages]);
  }
  for (const Row& r : rows) {
    const double seconds = median(r.times);
    std::printf("  %6d %8lld %10lld %10lld %8lld %10lld %10lld %10lld %10lld %8.3f%s\n", r.stages,
                static_cast<long long>(r.barriers), static_cast<long long>(r.async_bytes),
                static_cast<long long>(r.max_in_flight), static_cast<long long>(r.shared),
                static_cast<long long>(r.shared_requests), static_cast<long long>(r.wavefronts),
                static_cast<long long>(r.global_requests), static_cast<long long>(r.sectors),
                seconds, r.clean ? "" : "  (wrong result or findings!)");
    out << today() << ",\"" << cpu_name() << "\",\"gemm 512^3 128x128x32 sm80\"," << r.stages << ","
        << r.barriers << "," << r.async_bytes << "," << r.max_in_flight << "," << r.shared << ","
        << r.shared_requests << "," << r.wavefronts << "," << r.global_requests << "," << r.sectors
        << "," << seconds << "," << reps << "\n";
  }
  return 0;
}
