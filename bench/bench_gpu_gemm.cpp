// GEMM on the GPU: Tessel's generated mma.sync kernel against cuBLAS in the same process, on the
// paper's shapes M0-M7 (its Table 2) plus 4096^3 and 8192^3, fp16 and bf16 inputs with fp32
// output. Method (shared/REFERENCE.md): correctness first (Tessel's C against cuBLAS's, relative
// to the largest |C|), the L2 flushed (256 MB written) before each timed run, warm-up of at least
// 25 ms, median with p20/p80 of 10 runs timed with CUDA events, TFLOP/s = 2 M N K / t, and the
// ratio to cuBLAS. Writes bench/results/gpu_gemm.csv. Without a GPU it says why and exits 0.
//
//   build/bench/bench_gpu_gemm [quick]     quick: 4096^3 and 8192^3 only
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "bench/bench_util.h"
#include "codegen/emit.h"
#include "codegen/gpu_runner.h"
#include "core/passes.h"
#include "examples/registry.h"
#include "interp/host_tensor.h"

using namespace tessel;

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

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  std::unique_ptr<CudaSession> gpu = CudaSession::open(&why);
  if (!gpu) {
    std::printf("bench_gpu_gemm: no GPU to run on: %s\n", why.c_str());
    return 0;
  }
  Cublas cublas;
  if (!cublas.open(&why)) {
    std::printf("bench_gpu_gemm: %s\n", why.c_str());
    return 1;
  }
  bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  struct Shape {
    const char* name;
    int64_t M, N, K;
  };
  std::vector<Shape> shapes = {{"4096^3", 4096, 4096, 4096}, {"8192^3", 8192, 8192, 8192}};
  if (!quick) {
    std::vector<Shape> paper = {{"M0", 4096, 1024, 8192},  {"M1", 4096, 8192, 8192},
                                {"M2", 4096, 28672, 8192}, {"M3", 4096, 8192, 28672},
                                {"M4", 8192, 1024, 8192},  {"M5", 8192, 8192, 8192},
                                {"M6", 8192, 28672, 8192}, {"M7", 8192, 8192, 28672}};
    shapes.insert(shapes.end(), paper.begin(), paper.end());
  }
  struct Config {
    int64_t bm, bn, bk, stages, threads;
  };
  std::vector<Config> configs = {{128, 128, 32, 3, 128}, {128, 256, 32, 3, 256}};
  std::string csv = std::string(TESSEL_SOURCE_DIR) + "/bench/results/gpu_gemm.csv";
  std::ofstream out(csv, std::ios::app);
  out.seekp(0, std::ios::end);
  if (out.tellp() == 0) {
    out << "date,device,compiler,shape,M,N,K,dtype,config,correct,max_rel_err,tessel_ms_median,"
           "tessel_ms_p20,tessel_ms_p80,tessel_tflops,cublas_ms_median,cublas_tflops,ratio\n";
  }
  std::printf("%s, %s\n", gpu->device().c_str(), gpu->target().c_str());
  std::printf("%-7s %-5s %-18s %8s %9s %9s %9s %7s\n", "shape", "dtype", "config", "correct",
              "tessel", "cuBLAS", "TFLOP/s", "ratio");
  const Example* gemm = find_example("gemm");
  const size_t flush_bytes = size_t{256} << 20;
  uint64_t flush = gpu->alloc(flush_bytes);
  for (const Shape& s : shapes) {
    for (bool bf16 : {false, true}) {
      DataType in = bf16 ? DataType::bf16() : DataType::f16();
      HostTensor A(in, {s.M, s.K}), B(in, {s.K, s.N});
      A.fill_random(1), B.fill_random(2);
      size_t a_bytes = in.storage_bytes(A.size()), b_bytes = in.storage_bytes(B.size());
      size_t c_bytes = sizeof(float) * s.M * s.N;
      uint64_t dA = gpu->alloc(a_bytes), dB = gpu->alloc(b_bytes), dC = gpu->alloc(c_bytes),
               dRef = gpu->alloc(c_bytes);
      if (!dA || !dB || !dC || !dRef) {
        std::printf("  %s: %s\n", s.name, gpu->last_error().c_str());
        return 1;
      }
      gpu->upload(dA, A.data(), a_bytes);
      gpu->upload(dB, B.data(), b_bytes);
      auto timed = [&](const std::function<void()>& run) {
        double warm = 0;
        while (warm < 25) warm += gpu->time(run);
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
      for (const Config& c : configs) {
        std::map<std::string, std::string> d = {
            {"M", std::to_string(s.M)}, {"N", std::to_string(s.N)}, {"K", std::to_string(s.K)},
            {"block_M", std::to_string(c.bm)}, {"block_N", std::to_string(c.bn)},
            {"block_K", std::to_string(c.bk)}, {"num_stages", std::to_string(c.stages)},
            {"threads", std::to_string(c.threads)}, {"dtype", bf16 ? "bfloat16" : "float16"}};
        Kernel k = gemm->build(make_params(*gemm, d));
        const Target& target = find_target(gpu->target());
        EmittedSource src = emit_source(lower_kernel(k, target).kernel, target);
        void* fn = gpu->load(src, nullptr);
        if (!fn) {
          std::printf("  %s: %s\n", s.name, gpu->last_error().c_str());
          continue;
        }
        std::vector<int64_t> grid = {(s.N + c.bn - 1) / c.bn, (s.M + c.bm - 1) / c.bm};
        std::vector<void*> params = {&dA, &dB, &dC};
        gpu->fill(dC, 0xff, c_bytes);
        if (gpu->launch(fn, src, grid, params) < 0) {
          std::printf("  %s: %s\n", s.name, gpu->last_error().c_str());
          continue;
        }
        gpu->download(got.data(), dC, c_bytes);
        double scale = 0, err = 0;
        for (size_t i = 0; i < want.size(); ++i) scale = std::max(scale, double(std::fabs(want[i])));
        for (size_t i = 0; i < want.size(); ++i) {
          double e = std::fabs(double(got[i]) - want[i]);
          err = std::isnan(e) ? INFINITY : std::max(err, e);
        }
        double rel = err / std::max(scale, 1e-30);
        bool correct = rel < 1e-3;
        Stats t = timed([&] { gpu->launch(fn, src, grid, params); });
        double flops = 2.0 * s.M * s.N * s.K;
        double tflops = flops / (t.median * 1e-3) / 1e12, ref_tflops = flops / (ref.median * 1e-3) / 1e12;
        std::string config = std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
                             std::to_string(c.bk) + " s" + std::to_string(c.stages) + " t" +
                             std::to_string(c.threads);
        std::printf("%-7s %-5s %-18s %8s %7.3fms %7.3fms %9.1f %7.2f\n", s.name,
                    bf16 ? "bf16" : "fp16", config.c_str(), correct ? "yes" : "NO", t.median,
                    ref.median, tflops, ref.median / t.median);
        out << bench::today() << ",\"" << gpu->device() << "\",nvcc," << s.name << "," << s.M
            << "," << s.N << "," << s.K << "," << (bf16 ? "bf16" : "fp16") << ",\"" << config
            << "\"," << (correct ? "yes" : "no") << "," << rel << "," << t.median << "," << t.p20
            << "," << t.p80 << "," << tflops << "," << ref.median << "," << ref_tflops << ","
            << ref.median / t.median << "\n";
      }
      for (uint64_t p : {dA, dB, dC, dRef}) gpu->free(p);
    }
  }
  std::printf("appended to %s\n", csv.c_str());
  return 0;
}
