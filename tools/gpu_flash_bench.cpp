// The GPU FlashAttention benchmark: presets, FLOPs, the baseline file and the run.
#include "tools/gpu_flash_bench.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "codegen/gpu_runner.h"
#include "core/passes.h"
#include "core/target.h"
#include "examples/presets.h"
#include "tools/gpu_gemm_bench.h"
#include "tools/gpu_workloads.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

namespace {

std::string today() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, sep);) out.push_back(f);
  return out;
}

std::optional<double> number(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

const char* const kFlashBenchCsvHeader =
    "date,device,path,uses,preset,batch,heads,seq_len,dim,causal,correct_at_defaults,"
    "tessel_ms_median,tessel_ms_p20,tessel_ms_p80,tessel_tflops,baseline,baseline_ms_median,"
    "baseline_tflops,ratio";

std::vector<FlashPreset> flash_bench_presets() {
  std::vector<FlashPreset> out;
  for (const Preset* p : presets_of("flash_attention")) {
    FlashPreset f;
    f.name = p->name;
    for (const auto& [key, value] : p->values) {
      if (key == "heads") f.heads = std::stoll(value);
      if (key == "seq_len") f.seq_len = std::stoll(value);
      if (key == "dim") f.dim = std::stoll(value);
      if (key == "is_causal") f.causal = value == "1";
    }
    out.push_back(f);
  }
  return out;
}

double flash_flops(const FlashPreset& p) {
  const double s = static_cast<double>(p.seq_len);
  double flops = 4.0 * static_cast<double>(p.batch) * static_cast<double>(p.heads) * s * s *
                 static_cast<double>(p.dim);
  return p.causal ? flops / 2 : flops;
}

std::string flash_presets_text() {
  std::string out;
  for (const FlashPreset& p : flash_bench_presets()) {
    out += p.name + " " + std::to_string(p.batch) + " " + std::to_string(p.heads) + " " +
           std::to_string(p.seq_len) + " " + std::to_string(p.dim) + " " + (p.causal ? "1" : "0") +
           "\n";
  }
  return out;
}

std::optional<std::map<std::string, FlashBaseline>> read_flash_baseline(std::istream& in,
                                                                        std::string* why) {
  std::map<std::string, FlashBaseline> out;
  std::string line;
  const std::string header = "preset,impl,ms_median,ms_p20,ms_p80";
  if (!std::getline(in, line) || line != header) {
    if (why) *why = "line 1 is not the header '" + header + "'";
    return std::nullopt;
  }
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    std::vector<std::string> f = split(line, ',');
    std::optional<double> median = f.size() == 5 ? number(f[2]) : std::nullopt;
    std::optional<double> p20 = f.size() == 5 ? number(f[3]) : std::nullopt;
    std::optional<double> p80 = f.size() == 5 ? number(f[4]) : std::nullopt;
    if (!median || !p20 || !p80 || *median <= 0) {
      if (why) {
        *why = "line " + std::to_string(n) + " ('" + line +
               "') is not 'preset,impl,ms_median,ms_p20,ms_p80' with positive times";
      }
      return std::nullopt;
    }
    out[f[0]] = {f[1], *median, *p20, *p80};
  }
  return out;
}

int run_gpu_flash(const std::map<std::string, FlashBaseline>& baseline,
                  const std::string& baseline_note, const std::string& csv_path,
                  std::ostream& out) {
  std::string why;
  std::unique_ptr<CudaSession> gpu = CudaSession::open(&why);
  if (!gpu) {
    out << "bench_gpu_flash: no GPU to run on (" << why << "); nothing was run\n";
    return 0;
  }
  std::ofstream csv(csv_path, std::ios::app);
  csv.seekp(0, std::ios::end);
  if (csv.tellp() == 0) csv << kFlashBenchCsvHeader << "\n";
  out << gpu->device() << "\n";
  if (baseline.empty()) out << "no FlashAttention-3 baseline: " << baseline_note << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-8s %-20s %8s %10s %9s %10s %7s\n", "case", "path",
                "uses", "correct", "tessel ms", "TFLOP/s", "base ms", "ratio");
  out << line;
  const size_t flush_bytes = size_t{256} << 20;
  uint64_t flush = gpu->alloc(flush_bytes);
  int status = 0;
  for (const GemmPath& path : gemm_bench_paths(gpu->target())) {
    // Correctness first, once per path, at the example's default (small) size.
    std::string wrong = check_on_device(resolve_kernel("flash_attention", {}), path.target);
    std::string correct = wrong.empty() ? "yes" : "NO";
    if (!wrong.empty()) {
      out << "flash_attention (" << path.name << ") at its defaults: " << wrong << "\n";
      status = 1;
    }
    for (const FlashPreset& p : flash_bench_presets()) {
      try {
        ResolvedKernel k = resolve_kernel("flash_attention", {"preset=" + p.name});
        std::string uses = lowered_path_uses(
            lower_kernel(k.example->build(k.params), find_target(path.target)).kernel);
        DeviceTiming t = time_on_device(*gpu, flush, k, path.target);
        const double flops = flash_flops(p);
        const double tflops = flops / (t.median * 1e-3) / 1e12;
        auto b = baseline.find(p.name);
        std::string impl = b == baseline.end() ? "none" : b->second.impl;
        double b_ms = b == baseline.end() ? 0 : b->second.median;
        double b_tflops = b_ms > 0 ? flops / (b_ms * 1e-3) / 1e12 : 0;
        double ratio = b_ms > 0 ? b_ms / t.median : 0;
        std::snprintf(line, sizeof line, "%-5s %-8s %-20s %8s %10.3f %9.1f %10.3f %7.2f\n",
                      p.name.c_str(), path.name.c_str(), uses.c_str(), correct.c_str(), t.median,
                      tflops, b_ms, ratio);
        out << line;
        csv << today() << ",\"" << gpu->device() << "\"," << path.name << "," << uses << ","
            << p.name << "," << p.batch << "," << p.heads << "," << p.seq_len << "," << p.dim << ","
            << (p.causal ? 1 : 0) << "," << correct << "," << t.median << "," << t.p20 << ","
            << t.p80 << "," << tflops << ",\"" << impl << "\"," << b_ms << "," << b_tflops << ","
            << ratio << "\n"
            << std::flush;  // a row survives a stopped run
      } catch (const std::exception& e) {
        out << p.name << " (" << path.name << "): not run: " << e.what() << "\n";
        status = 1;
      }
    }
  }
  gpu->free(flush);
  out << "appended to " << csv_path << "\n";
  return status;
}

}  // namespace tessel::cli
