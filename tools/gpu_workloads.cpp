// The GPU benchmark of every workload: the cases, their FLOP and byte counts, and the runs.
#include "tools/gpu_workloads.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "codegen/emit.h"
#include "codegen/gpu_runner.h"
#include "core/target.h"
#include "examples/presets.h"
#include "examples/run_example.h"
#include "tools/cli.h"
#include "tools/host_data.h"
#include "tools/kernel_views.h"
#include "tools/run_device.h"

namespace tessel::cli {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// One case per preset of `kernel`, in table order.
void add_presets(std::vector<WorkloadCase>& cases, const std::string& kernel, bool quick) {
  for (const Preset* p : presets_of(kernel)) {
    cases.push_back({kernel, p->name, {"preset=" + p->name}});
    if (quick) return;
  }
}

struct Sample {
  double median = 0, p20 = 0, p80 = 0;
};

Sample quantiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.2), at(0.8)};
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

/// The kernel lowered for the device and printed as CUDA.
EmittedSource device_source(const Kernel& kernel, const std::string& target_name) {
  return emit_kernel(kernel, find_target(target_name), {}, "bench_gpu_workloads");
}

}  // namespace

std::vector<WorkloadCase> gpu_workload_cases(bool quick) {
  std::vector<WorkloadCase> cases;
  for (const char* kernel :
       {"gemm", "flash_attention", "mla_decode", "mla_decode_split", "chunk_scan", "chunk_state"}) {
    add_presets(cases, kernel, quick);
  }
  // Not a paper shape (the paper measures linear attention with chunk_scan/chunk_state): the
  // chunk and head sizes of those presets over a longer sequence.
  cases.push_back({"linear_attention",
                   "b8 h16 L4096 d64",
                   {"batch=8", "heads=16", "seq_len=4096", "dim_k=64", "dim_v=64"}});
  for (const char* f : {"uint4", "int4", "nf4", "fp4", "int2"}) {
    cases.push_back({std::string("dequant_gemm_") + f, "M0", {"preset=M0"}});
    add_presets(cases, std::string("dequant_gemv_") + f, quick);
  }
  cases.push_back(
      {"gemm_splitk", "4096x4096x16384 split 4", {"M=4096", "N=4096", "K=16384", "split_k=4"}});
  return cases;
}

WorkloadCost workload_cost(const ResolvedKernel& k) {
  const Params& p = k.params;
  const std::string& name = k.example->name;
  auto i = [&](const char* param) { return static_cast<double>(p.integer(param)); };
  WorkloadCost cost;
  if (name == "gemm" || name == "gemm_transpose_b" || name == "gemm_rs" || name == "gemm_splitk" ||
      starts_with(name, "dequant_gemm")) {
    cost.flops = 2 * i("M") * i("N") * i("K");
  } else if (starts_with(name, "dequant_gemv")) {
    cost.flops = 2 * i("N") * i("K");
  } else if (name == "flash_attention") {
    // Q K^T and P V, 2 * S * S * D each per head; causal: half the score matrix.
    cost.flops = 4 * i("heads") * i("seq_len") * i("seq_len") * i("dim") *
                 (p.boolean("is_causal") ? 0.5 : 1.0);
  } else if (starts_with(name, "mla_decode")) {
    // Per head and key: scores over dim + pe_dim, output over dim (TileLang's benchmark_mla.py).
    cost.flops = 2 * i("batch") * i("heads") * i("seqlen_kv") * (2 * i("dim") + i("pe_dim"));
  } else if (name == "chunk_scan") {
    // TileLang's count: the causal half of the chunk's (Q x Q) x P product, plus C . states.
    cost.flops =
        2 * i("batch") * i("seq_len") * i("chunk_size") * i("nheads") * i("headdim") * 0.5 +
        2 * i("batch") * i("seq_len") * i("nheads") * i("headdim") * i("dstate");
  } else if (name == "chunk_state") {
    cost.flops = 2 * i("batch") * i("seq_len") * i("nheads") * i("headdim") * i("dstate");
  } else if (name == "linear_attention") {
    // Per chunk of C positions: Q.S and S += K^T V (2 C dk dv each), Q K^T (2 C C dk) and the
    // masked scores times V (2 C C dv), the whole C x C block computed.
    const double c = i("chunk_size"), dk = i("dim_k"), dv = i("dim_v");
    cost.flops = 2 * i("batch") * i("heads") * i("seq_len") * (2 * dk * dv + c * (dk + dv));
  } else {
    throw UsageError("bench_gpu_workloads: no FLOP count for kernel '" + name + "'");
  }
  Kernel kernel = k.example->build(p);
  for (const ParamInfo& t : kernel_signature(kernel, run_dims(k))) {
    int64_t elements = 1;
    for (int64_t e : t.shape) elements *= e;
    cost.bytes += static_cast<double>(t.dtype.storage_bytes(elements));
  }
  return cost;
}

std::string check_on_device(const ResolvedKernel& k, const std::string& target) {
  const Example& example = *k.example;
  Kernel kernel = example.build(k.params);
  TensorMap tensors = device_tensors(k, kernel, 1);
  TensorMap expected = tensors;
  example.reference(k.params, expected);
  EmittedSource src = device_source(kernel, target);
  DeviceCall call = device_call(kernel, tensors);
  GpuRunResult r = run_on_cuda(src, GpuLaunch{call.grids}, call.args);
  if (!r.ran) return "did not run: " + r.unavailable;
  for (const std::string& name : example.outputs) {
    Tolerance tol =
        example.tolerance ? *example.tolerance : Tolerance::for_dtype(tensors.at(name).dtype());
    auto bound = expected.find(error_bound_name(name));  // Example::bounded_outputs
    Comparison c = compare(tensors.at(name), expected.at(name), tol,
                           bound == expected.end() ? nullptr : &bound->second);
    if (!c.passed) {
      return name + " differs from the reference at " +
             index_string(tensors.at(name).shape(), c.first_mismatch) + ": " +
             std::to_string(c.first_actual) + " instead of " + std::to_string(c.first_expected);
    }
  }
  return "";
}

DeviceTiming time_on_device(CudaSession& gpu, uint64_t flush, const ResolvedKernel& k,
                            const std::string& target) {
  Kernel kernel = k.example->build(k.params);
  const size_t flush_bytes = size_t{256} << 20;
  EmittedSource src = device_source(kernel, target);
  TensorMap tensors = make_tensors(kernel, run_dims(k), {}, 1);
  DeviceCall call = device_call(kernel, tensors);
  std::string why;
  std::unique_ptr<DeviceKernel> device =
      DeviceKernel::prepare(gpu, src, host_launches(src, call.grids), call.args, &why);
  if (!device) throw UsageError(why);
  auto zero_outputs = [&] {
    for (size_t a = 0; a < kernel->params.size(); ++a) {
      const auto& z = k.example->zero_outputs;
      if (std::find(z.begin(), z.end(), kernel->params[a]->name) != z.end()) device->fill(a, 0);
    }
  };
  // One checked run first: a launch the driver refuses (a grid too large) or a kernel that
  // faults must fail the case, not time an empty run.
  zero_outputs();
  if (device->run() < 0) throw UsageError(gpu.last_error());
  double warm = 0;
  for (int w = 0; w < 100 && warm < 25; ++w) {
    zero_outputs();
    warm += device->run();
  }
  std::vector<double> ms;
  for (int r = 0; r < 10; ++r) {
    zero_outputs();
    gpu.fill(flush, static_cast<uint8_t>(r), flush_bytes);
    ms.push_back(device->run());
  }
  Sample s = quantiles(ms);
  return {s.median, s.p20, s.p80};
}

int run_gpu_workloads(const std::vector<WorkloadCase>& cases, const std::string& csv_path,
                      std::ostream& out) {
  std::string why;
  std::unique_ptr<CudaSession> gpu = CudaSession::open(&why);
  if (!gpu) {
    out << "bench_gpu_workloads: no GPU to run on (" << why << "); nothing was run\n";
    return 0;
  }
  std::ofstream csv(csv_path, std::ios::app);
  csv.seekp(0, std::ios::end);
  if (csv.tellp() == 0) {
    csv << "date,device,kernel,case,correct_at_defaults,ms_median,ms_p20,ms_p80,tflops,gbps,"
           "flops,bytes\n";
  }
  out << gpu->device() << ", lowered for " << gpu->target() << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %-20s %-8s %10s %9s %9s\n", "kernel", "case", "correct",
                "median ms", "TFLOP/s", "GB/s");
  out << line;
  const size_t flush_bytes = size_t{256} << 20;
  uint64_t flush = gpu->alloc(flush_bytes);
  int status = 0;
  std::string last_checked;
  std::string correct = "-";
  for (const WorkloadCase& c : cases) {
    try {
      ResolvedKernel k = resolve_kernel(c.kernel, c.defines);
      if (c.kernel != last_checked) {  // correctness first, once per kernel, at its defaults
        last_checked = c.kernel;
        std::string wrong = check_on_device(resolve_kernel(c.kernel, {}), gpu->target());
        correct = wrong.empty() ? "yes" : "NO";
        if (!wrong.empty()) {
          out << c.kernel << " at its defaults: " << wrong << "\n";
          status = 1;
        }
      }
      WorkloadCost cost = workload_cost(k);
      DeviceTiming timing = time_on_device(*gpu, flush, k, gpu->target());
      Sample s{timing.median, timing.p20, timing.p80};
      double tflops = cost.flops / (s.median * 1e-3) / 1e12;
      double gbps = cost.bytes / (s.median * 1e-3) / 1e9;
      std::snprintf(line, sizeof line, "%-22s %-20s %-8s %10.3f %9.1f %9.1f\n", c.kernel.c_str(),
                    c.label.c_str(), correct.c_str(), s.median, tflops, gbps);
      out << line;
      csv << today() << ",\"" << gpu->device() << "\"," << c.kernel << ",\"" << c.label << "\","
          << correct << "," << s.median << "," << s.p20 << "," << s.p80 << "," << tflops << ","
          << gbps << "," << cost.flops << "," << cost.bytes << "\n"
          << std::flush;  // a row survives a stopped run
    } catch (const std::exception& e) {
      out << c.kernel << " " << c.label << ": not run: " << e.what() << "\n";
      status = 1;
    }
  }
  out << "appended to " << csv_path << "\n";
  return status;
}

}  // namespace tessel::cli
