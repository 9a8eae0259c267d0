// Benchmark: Z3 proof times for the layouts the GEMM example uses (shared-memory swizzles, mma
// fragments, the ldmatrix access), a 4096x4096 fp16 128B swizzle, and a layout with a symbolic
// row length. Prints a table and appends the medians to bench/results/proofs.csv.

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/bank_rules.h"
#include "core/builtin_layouts.h"
#include "verify/bank_proofs.h"
#include "verify/layout_proofs.h"

#include "bench/bench_util.h"

using namespace tessel;
using tessel::bench::cpu_name;
using tessel::bench::median;
using tessel::bench::today;

namespace {


struct Case {
  std::string name;
  double budget_ms;  ///< the target the issue sets for this proof
  std::function<ProofResult()> prove;
};

std::vector<Case> cases() {
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  ProofOptions a_opts, b_opts, c_opts;
  a_opts.name = "A_shared";
  b_opts.name = "B_shared";
  c_opts.name = "C_local";
  std::vector<Case> all;
  all.push_back(
      {"gemm A tile 128x32 f16 (" + gemm_operand_layout_kind(128, 32, f16) + ") bijective", 100,
       [=] { return prove_bijective(gemm_operand_layout(128, 32, f16), a_opts); }});
  all.push_back(
      {"gemm B tile 32x128 f16 (" + gemm_operand_layout_kind(32, 128, f16) + ") bijective", 100,
       [=] { return prove_bijective(gemm_operand_layout(32, 128, f16), b_opts); }});
  all.push_back({"mma_m16n8k16_a(f16) replication", 100,
                 [=] { return prove_replication(mma_m16n8k16_a(f16), a_opts); }});
  all.push_back({"mma_m16n8k16_b(f16) replication", 100,
                 [=] { return prove_replication(mma_m16n8k16_b(f16), b_opts); }});
  all.push_back({"mma_m16n8k16_c(f32) replication", 100,
                 [=] { return prove_replication(mma_m16n8k16_c(f32), c_opts); }});
  all.push_back({"ldmatrix.x4 on the A tile, all k and warps, conflict-free", 100, [=] {
                   Var k("k"), wm("wm");
                   BankAccess acc;
                   acc.buffer = "A_shared";
                   acc.layout = gemm_operand_layout(128, 32, f16);
                   acc.dtype = f16;
                   acc.ldmatrix = true;
                   acc.index = {wm * make_int(16) + floormod(acc.lane, make_int(16)),
                                k * make_int(16) + floordiv(acc.lane, make_int(16)) * make_int(8)};
                   ProofOptions o = a_opts;
                   o.domain.bound(k, 0, 1).bound(wm, 0, 7);
                   return static_cast<ProofResult>(
                       prove_conflict_free(acc, BankModel::nvidia(), o));
                 }});
  all.push_back({"swizzle_128b(4096, 4096, f16) bijective", 1000,
                 [=] { return prove_bijective(swizzle_128b(4096, 4096, f16), a_opts); }});
  all.push_back({"row-major 128 x n, 1 <= n <= 4096 symbolic, bijective", 5000, [] {
                   Var i("i"), j("j"), n("n");
                   IndexMap map;
                   map.iter_vars = {i, j};
                   map.input_shape = {make_int(128), n};
                   map.forward_index = {i * n + j};
                   map.output_shape = {make_int(128) * n};
                   ProofOptions o;
                   o.name = "A";
                   o.domain.bound(n, 1, 4096);
                   return prove_bijective(map, o);
                 }});
  all.push_back({"padded rows i * (n + 8) + j, 8 <= n <= 4096, n % 8 == 0, injective", 5000, [] {
                   Var i("i"), j("j"), n("n");
                   IndexMap map;
                   map.iter_vars = {i, j};
                   map.input_shape = {make_int(128), n};
                   map.forward_index = {i * (n + make_int(8)) + j};
                   map.output_shape = {make_int(128) * (n + make_int(8))};
                   ProofOptions o;
                   o.name = "A";
                   o.domain.bound(n, 8, 4096).assume(floormod(n, make_int(8)) == make_int(0));
                   return prove_injective(map, o);
                 }});
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::stoi(argv[1]) : 7;
  const std::string csv =
      argc > 2 ? argv[2] : std::string(TESSEL_SOURCE_DIR) + "/bench/results/proofs.csv";
  std::vector<Case> all = cases();
  std::vector<std::vector<double>> times(all.size());
  std::vector<bool> holds(all.size(), true);
  // Interleaved: every case once per round, so drift hits all of them alike.
  for (int r = 0; r < reps; ++r) {
    for (size_t c = 0; c < all.size(); ++c) {
      ProofResult p = all[c].prove();
      times[c].push_back(p.ms);
      holds[c] = holds[c] && p.holds;
    }
  }
  std::string date = today(), machine = cpu_name();
  std::printf("Z3 proof times, median of %d runs (%s, %s)\n\n", reps, date.c_str(),
              machine.c_str());
  std::printf("%-72s %8s %9s %9s %9s\n", "proof", "result", "median ms", "max ms", "budget ms");
  bool fresh = !std::ifstream(csv).good();
  std::ofstream out(csv, std::ios::app);
  if (fresh) out << "date,machine,proof,result,median_ms,min_ms,max_ms,runs,budget_ms\n";
  bool all_ok = true;
  for (size_t c = 0; c < all.size(); ++c) {
    double med = median(times[c]);
    double lo = *std::min_element(times[c].begin(), times[c].end());
    double hi = *std::max_element(times[c].begin(), times[c].end());
    bool ok = holds[c] && med < all[c].budget_ms;
    all_ok = all_ok && ok;
    std::printf("%-72s %8s %9.1f %9.1f %9.0f%s\n", all[c].name.c_str(),
                holds[c] ? "proved" : "FAILED", med, hi, all[c].budget_ms,
                ok ? "" : "  <- over budget or not proved");
    out << date << ",\"" << machine << "\",\"" << all[c].name << "\","
        << (holds[c] ? "proved" : "failed") << "," << med << "," << lo << "," << hi << "," << reps
        << "," << all[c].budget_ms << "\n";
  }
  if (!out)
    std::fprintf(stderr, "could not write %s\n", csv.c_str());
  else
    std::printf("\nappended to %s\n", csv.c_str());
  return all_ok ? 0 : 1;
}
