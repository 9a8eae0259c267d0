// Benchmark: tile-level GEMM (the gemm example, fp16 in, fp32 accumulate) against a plain Eigen
// float GEMM of the same inputs, measured in the same process. Prints a table and appends the
// medians to bench/results/tile_gemm.csv.
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "examples/run_example.h"

using namespace tessel;
using tessel::bench::cpu_name;
using tessel::bench::median;
using tessel::bench::today;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::stoll(argv[1]) : 1024;
  const int reps = argc > 2 ? std::stoi(argv[2]) : 5;
  const std::string csv = argc > 3 ? argv[3] : std::string(TESSEL_SOURCE_DIR) + "/bench/results/tile_gemm.csv";
  const Example& example = *find_example("gemm");
  std::string ns = std::to_string(n);
  Params params = make_params(example, {{"M", ns}, {"N", ns}, {"K", ns}});
  Kernel kernel = example.build(params);
  TensorMap tensors = make_tensors(kernel, {}, {"C"}, 7);

  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  MatF A(n, n), B(n, n), C(n, n);
  for (int64_t i = 0; i < n * n; ++i) {
    A.data()[i] = static_cast<float>(tensors.at("A").at(i));
    B.data()[i] = static_cast<float>(tensors.at("B").at(i));
  }

  auto time = [](auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> eigen_s, tile1_s, tileN_s;
  for (int r = 0; r < reps; ++r) {  // interleaved so that machine noise hits all three alike
    eigen_s.push_back(time([&] { C.noalias() = A * B; }));
    tile1_s.push_back(time([&] { run_tile_level(kernel, tensors, TileRunOptions{1}); }));
    tileN_s.push_back(time([&] { run_tile_level(kernel, tensors, TileRunOptions{cores}); }));
  }
  double e = median(eigen_s), t1 = median(tile1_s), tn = median(tileN_s);
  double gflop = 2.0 * n * n * n / 1e9;
  std::printf("tile-level GEMM %lldx%lldx%lld fp16->fp32, median of %d runs on %s\n",
              static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n), reps,
              cpu_name().c_str());
  std::printf("  %-28s %9.3f s  %7.2f GFLOP/s\n", "Eigen float GEMM (1 core)", e, gflop / e);
  std::printf("  %-28s %9.3f s  %7.2f GFLOP/s  %.2fx Eigen\n", "Tessel tile level, 1 core", t1,
              gflop / t1, t1 / e);
  std::printf("  %-28s %9.3f s  %7.2f GFLOP/s  %.2fx Eigen\n",
              ("Tessel tile level, " + std::to_string(cores) + " cores").c_str(), tn, gflop / tn,
              tn / e);
  std::ofstream out(csv, std::ios::app);
  if (out.tellp() == 0) out << "date,machine,cores,n,reps,eigen_s,tile_1core_s,tile_allcores_s,ratio_1core,ratio_allcores\n";
  out << today() << ",\"" << cpu_name() << "\"," << cores << "," << n << "," << reps << "," << e
      << "," << t1 << "," << tn << "," << t1 / e << "," << tn / e << "\n";
  return 0;
}
