// The GPU GEMM benchmark: shapes, paths, tiles, FLOPs, and the run against cuBLAS.
#include "tools/gpu_gemm_bench.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>

#include "codegen/emit.h"
#include "codegen/gpu_runner.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "examples/registry.h"
#include "interp/host_tensor.h"

namespace tessel::cli {

namespace {

/// cuBLAS through dlopen, only what the benchmark calls (cublas_api.h signatures and enums).
struct Cublas {
  void* lib = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*,
                 int, int, const void*, void*, int, int, int, int) = nullptr;
  void* handle = nullptr;
  static constexpr int kOpN = 0, kR16F = 2, kR16BF = 14, kR32F = 0, kCompute32F = 68,
                       kDefaultTensorOp = 99;

  bool open(std::string* why) {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!lib) return *why = "libcublas.so cannot be opened", false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    gemm_ex = reinterpret_cast<decltype(gemm_ex)>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !gemm_ex) return *why = "cuBLAS lacks cublasGemmEx", false;
    if (create(&handle) != 0) return *why = "cublasCreate failed", false;
    return true;
  }
  /// Row-major C[M, N] = A[M, K] B[K, N] as the column-major C^T = B^T A^T.
  int gemm(int M, int N, int K, uint64_t A, uint64_t B, uint64_t C, bool bf16) {
    float alpha = 1, beta = 0;
    int in = bf16 ? kR16BF : kR16F;
    return gemm_ex(handle, kOpN, kOpN, N, M, K, &alpha, reinterpret_cast<void*>(B), in, N,
                   reinterpret_cast<void*>(A), in, K, &beta, reinterpret_cast<void*>(C), kR32F, N,
                   kCompute32F, kDefaultTensorOp);
  }
};

struct Stats {
  double median = 0, p20 = 0, p80 = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.2), at(0.8)};
}

std::string today() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

const char* const kGemmBenchCsvHeader =
    "date,device,compiler,path,uses,shape,M,N,K,dtype,config,correct,max_rel_err,"
    "tessel_ms_median,tessel_ms_p20,tessel_ms_p80,tessel_tflops,cublas_ms_median,cublas_tflops,"
    "ratio";

std::vector<GemmShape> gemm_bench_shapes(bool quick) {
  std::vector<GemmShape> shapes = {{"4096^3", 4096, 4096, 4096}, {"8192^3", 8192, 8192, 8192}};
  if (quick) return shapes;
  std::vector<GemmShape> paper = {{"M0", 4096, 1024, 8192},  {"M1", 4096, 8192, 8192},
                                  {"M2", 4096, 28672, 8192}, {"M3", 4096, 8192, 28672},
                                  {"M4", 8192, 1024, 8192},  {"M5", 8192, 8192, 8192},
                                  {"M6", 8192, 28672, 8192}, {"M7", 8192, 8192, 28672}};
  shapes.insert(shapes.end(), paper.begin(), paper.end());
  return shapes;
}

std::vector<GemmPath> gemm_bench_paths(const std::string& device_target) {
  std::vector<GemmPath> paths = {{"mma.sync", "sm80"}};
  if (device_target == "sm90") paths.push_back({"sm90", "sm90"});
  return paths;
}

std::string GemmTile::label() const {
  return std::to_string(block_M) + "x" + std::to_string(block_N) + "x" + std::to_string(block_K) +
         " s" + std::to_string(stages) + " t" + std::to_string(threads);
}

std::vector<GemmTile> gemm_bench_tiles(const GemmPath& path) {
  if (path.target == "sm90") return {{128, 128, 64, 3, 128}, {128, 256, 64, 3, 256}};
  return {{128, 128, 32, 3, 128}, {128, 256, 32, 3, 256}};
}

std::map<std::string, std::string> gemm_bench_defines(const GemmShape& s, const GemmTile& t,
                                                      bool bf16) {
  return {{"M", std::to_string(s.M)},
          {"N", std::to_string(s.N)},
          {"K", std::to_string(s.K)},
          {"block_M", std::to_string(t.block_M)},
          {"block_N", std::to_string(t.block_N)},
          {"block_K", std::to_string(t.block_K)},
          {"num_stages", std::to_string(t.stages)},
          {"threads", std::to_string(t.threads)},
          {"dtype", bf16 ? "bfloat16" : "float16"}};
}

double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K);
}

std::string lowered_path_uses(const Kernel& lowered) {
  bool wgmma = false, mma = false, mfma = false, tma = false, cp_async = false, ws = false;
  for_each_stmt(lowered->body, [&](const Stmt& s) {
    const auto* c = s.as<IntrinsicCallNode>();
    if (!c) return;
    const std::string& n = intrinsic_info(c->intrinsic).name;
    auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
    wgmma |= starts("wgmma_") && n != "wgmma_fence";
    mma |= starts("mma_");
    mfma |= starts("mfma");
    tma |= starts("tma_load");
    cp_async |= starts("cp_async_") && n != "cp_async_commit_group" && n != "cp_async_wait_group";
    ws |= n == "mbarrier_wait_parity";
  });
  std::string uses = wgmma ? "wgmma" : mma ? "mma.sync" : mfma ? "mfma" : "scalar";
  uses += tma ? "+tma" : cp_async ? "+cp.async" : "+ld/st";
  if (ws) uses += "+ws";
  return uses;
}

int run_gpu_gemm(bool quick, const std::string& csv_path, std::ostream& out) {
  std::string why;
  std::unique_ptr<CudaSession> gpu = CudaSession::open(&why);
  if (!gpu) {
    out << "bench_gpu_gemm: no GPU to run on (" << why << "); nothing was run\n";
    return 0;
  }
  Cublas cublas;
  if (!cublas.open(&why)) {
    out << "bench_gpu_gemm: " << why << "\n";
    return 1;
  }
  std::ofstream csv(csv_path, std::ios::app);
  csv.seekp(0, std::ios::end);
  if (csv.tellp() == 0) csv << kGemmBenchCsvHeader << "\n";
  out << gpu->device() << ", paths:";
  for (const GemmPath& p : gemm_bench_paths(gpu->target())) out << " " << p.name;
  out << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-7s %-5s %-8s %-18s %-16s %8s %9s %9s %9s %7s\n", "shape",
                "dtype", "path", "config", "uses", "correct", "tessel", "cuBLAS", "TFLOP/s",
                "ratio");
  out << line;
  const Example* gemm = find_example("gemm");
  const size_t flush_bytes = size_t{256} << 20;
  uint64_t flush = gpu->alloc(flush_bytes);
  int status = 0;
  for (const GemmShape& s : gemm_bench_shapes(quick)) {
    for (bool bf16 : {false, true}) {
      DataType in = bf16 ? DataType::bf16() : DataType::f16();
      HostTensor A(in, {s.M, s.K}), B(in, {s.K, s.N});
      A.fill_random(1), B.fill_random(2);
      size_t a_bytes = in.storage_bytes(A.size()), b_bytes = in.storage_bytes(B.size());
      size_t c_bytes = sizeof(float) * s.M * s.N;
      uint64_t dA = gpu->alloc(a_bytes), dB = gpu->alloc(b_bytes), dC = gpu->alloc(c_bytes),
               dRef = gpu->alloc(c_bytes);
      if (!dA || !dB || !dC || !dRef) {
        out << "  " << s.name << ": " << gpu->last_error() << "\n";
        return 1;
      }
      gpu->upload(dA, A.data(), a_bytes);
      gpu->upload(dB, B.data(), b_bytes);
      auto timed = [&](const std::function<void()>& run) {
        double warm = 0;
        for (int w = 0; w < 1000 && warm < 25; ++w) warm += gpu->time(run);
        std::vector<double> ms;
        for (int i = 0; i < 10; ++i) {
          gpu->fill(flush, static_cast<uint8_t>(i), flush_bytes);
          ms.push_back(gpu->time(run));
        }
        return stats(ms);
      };
      Stats ref = timed([&] { cublas.gemm(s.M, s.N, s.K, dA, dB, dRef, bf16); });
      std::vector<float> want(s.M * s.N), got(s.M * s.N);
      gpu->download(want.data(), dRef, c_bytes);
      double scale = 0;
      for (float w : want) scale = std::max(scale, double(std::fabs(w)));
      for (const GemmPath& path : gemm_bench_paths(gpu->target())) {
        for (const GemmTile& t : gemm_bench_tiles(path)) {
          std::string config = t.label();
          auto fail = [&](const std::string& what) {
            out << "  " << s.name << " " << path.name << " " << config << ": " << what << "\n";
            status = 1;
          };
          try {
            Kernel k = gemm->build(make_params(*gemm, gemm_bench_defines(s, t, bf16)));
            const Target& target = find_target(path.target);
            Kernel lowered = lower_kernel(k, target).kernel;
            std::string uses = lowered_path_uses(lowered);
            EmittedSource src = emit_source(lowered, target);
            const std::vector<HostLaunch> launches = host_launches(
                src, {{(s.N + t.block_N - 1) / t.block_N, (s.M + t.block_M - 1) / t.block_M}});
            std::vector<void*> fns = gpu->load(src, launches, nullptr);
            if (fns.empty()) {
              fail(gpu->last_error());
              continue;
            }
            std::vector<std::vector<void*>> params = {{&dA, &dB, &dC}};
            std::vector<CudaSession::TensorMapBytes> maps;
            if (!gpu->encode_tensor_maps(src, src.tensor_maps, {dA, dB, dC},
                                         {{s.M, s.K}, {s.K, s.N}, {s.M, s.N}}, maps)) {
              fail(gpu->last_error());
              continue;
            }
            for (CudaSession::TensorMapBytes& m : maps) params[0].push_back(&m);
            gpu->fill(dC, 0xff, c_bytes);
            if (gpu->launch(fns, launches, params) < 0) {
              fail(gpu->last_error());
              continue;
            }
            gpu->download(got.data(), dC, c_bytes);
            double err = 0;
            for (size_t i = 0; i < want.size(); ++i) {
              double e = std::fabs(double(got[i]) - want[i]);
              err = std::isnan(e) ? INFINITY : std::max(err, e);
            }
            double rel = err / std::max(scale, 1e-30);
            bool correct = rel < 1e-3;
            if (!correct) status = 1;
            Stats m = timed([&] { gpu->launch(fns, launches, params); });
            double flops = gemm_flops(s);
            double tflops = flops / (m.median * 1e-3) / 1e12;
            double ref_tflops = flops / (ref.median * 1e-3) / 1e12;
            std::snprintf(line, sizeof line,
                          "%-7s %-5s %-8s %-18s %-16s %8s %7.3fms %7.3fms %9.1f %7.2f\n",
                          s.name.c_str(), bf16 ? "bf16" : "fp16", path.name.c_str(), config.c_str(),
                          uses.c_str(), correct ? "yes" : "NO", m.median, ref.median, tflops,
                          ref.median / m.median);
            out << line;
            csv << today() << ",\"" << gpu->device() << "\",nvcc," << path.name << "," << uses
                << "," << s.name << "," << s.M << "," << s.N << "," << s.K << ","
                << (bf16 ? "bf16" : "fp16") << ",\"" << config << "\"," << (correct ? "yes" : "no")
                << "," << rel << "," << m.median << "," << m.p20 << "," << m.p80 << "," << tflops
                << "," << ref.median << "," << ref_tflops << "," << ref.median / m.median << "\n"
                << std::flush;  // a row survives a stopped run
          } catch (const std::exception& e) {
            fail(e.what());
          }
        }
      }
      for (uint64_t p : {dA, dB, dC, dRef}) gpu->free(p);
    }
  }
  gpu->free(flush);
  out << "appended to " << csv_path << "\n";
  return status;
}

}  // namespace tessel::cli
