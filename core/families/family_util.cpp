// Fragment lookup tables and helper-text pieces for the instruction families.
#include "core/families/family_util.h"

#include <bit>
#include <cmath>

#include "core/error.h"

namespace tessel {

const FragmentTable& fragment_table(const IntrinsicInfo& info, size_t operand) {
  static const std::vector<std::vector<FragmentTable>> tables = [] {
    std::vector<std::vector<FragmentTable>> all;
    for (const IntrinsicInfo& entry : intrinsic_table()) {
      std::vector<FragmentTable> ops(entry.operands.size());
      for (size_t o = 0; o < entry.operands.size(); ++o) {
        const Fragment& f = entry.operands[o].layout;
        if (!f.defined()) continue;
        FragmentTable& t = ops[o];
        t.rows = f.input_shape()[0];
        t.cols = f.input_shape()[1];
        t.cells.resize(static_cast<size_t>(t.rows * t.cols));
        for (int64_t r = 0; r < t.rows; ++r) {
          for (int64_t c = 0; c < t.cols; ++c) {
            auto [lane, reg] = f.map_fragment({r, c});
            t.cells[r * t.cols + c] = {static_cast<int>(lane), static_cast<int>(reg)};
          }
        }
      }
      all.push_back(std::move(ops));
    }
    return all;
  }();
  const FragmentTable& t = tables[static_cast<size_t>(info.id)][operand];
  internal_check(t.rows > 0, "fragment_table of an operand without a fragment");
  return t;
}

int regs32(DataType t, int elements) { return elements * t.storage_bits() / 32; }

std::string asm_operands(int first, int count) {
  std::string s = "{";
  for (int i = 0; i < count; ++i) s += (i ? ", %" : "%") + std::to_string(first + i);
  return s + "}";
}

void no_spelling(const IntrinsicInfo& info, Language lang) {
  user_error("codegen: " + info.name + " is an " +
             (lang == Language::kCuda ? "AMD instruction; it has no CUDA spelling"
                                      : "NVIDIA instruction; it has no HIP spelling"));
}

std::string helper_call(const IntrinsicInfo& info, const std::vector<std::string>& args,
                        std::set<std::string>& used) {
  used.insert(info.name);
  std::string s = "tessel_" + info.name + "(";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ");";
}

namespace {

/// D (m x n, holding C) += A (m x k) * B (k x n), row-major: each element of D gets its k
/// products added one after another in order of k, then is rounded to f32 when `to_f32` (an
/// int32 D stays the exact sum). N > 0: n is N.
template <int N>
void multiply_add(double* __restrict d, const double* __restrict a, const double* __restrict b,
                  int m, int k, int n, bool to_f32) {
  const int cols = N > 0 ? N : n;
  for (int i = 0; i < m; ++i) {
    double* __restrict di = d + i * cols;
    for (int kk = 0; kk < k; ++kk) {
      const double aik = a[i * k + kk];
      const double* __restrict bk = b + kk * cols;
      for (int j = 0; j < cols; ++j) di[j] += aik * bk[j];
    }
    if (to_f32) {
      for (int j = 0; j < cols; ++j) di[j] = static_cast<double>(static_cast<float>(di[j]));
    }
  }
}

}  // namespace

void execute_matrix(const IntrinsicInfo& info, WarpIntrinsicExec& exec) {
  exec.require_full_warp();
  const uint64_t mask = exec.mask();
  // Operands D, A, B, C: resolve each lane's register run.
  std::array<OperandRequest, 4> req;
  std::array<OperandLanes, 4> res;
  for (int o = 0; o < 4; ++o) {
    req[o] = OperandRequest{o, o == 0 ? LaneAccess::kStore : LaneAccess::kLoad, mask,
                            info.operands[o].elements};
    res[o] = exec.resolve(req[o]);
  }
  const std::array<const FragmentTable*, 4> tables = {
      &fragment_table(info, 0), &fragment_table(info, 1), &fragment_table(info, 2),
      &fragment_table(info, 3)};
  const int m = info.m, n = info.n, k = info.k;
  // Each lane's register run of each operand, found once: a lane's cells of one operand are
  // consecutive (cell(o, lane, flat + r) is &cell(o, lane, flat) + r), so the m*k + k*n + m*n
  // reads and m*n writes below index them directly. Lanes outside an operand have none.
  std::array<std::array<uint64_t*, 64>, 4> run{};
  for (int o = 0; o < 4; ++o) {
    for (uint64_t l = res[o].ok; l; l &= l - 1) {
      int lane = std::countr_zero(l);
      run[o][lane] = &exec.cell(o, lane, res[o].flat[lane]);
    }
  }
  // A (m x k), B (k x n) and C (m x n) gathered into dense arrays; an element of a lane outside
  // its operand reads 0.
  // Cells hold floats as their double bits and integers as int64 (the interpreter's cells).
  std::array<bool, 4> integer{};
  for (int o = 0; o < 4; ++o) integer[o] = !info.operands[o].dtypes[0].is_float();
  thread_local std::vector<double> scratch;
  scratch.resize(static_cast<size_t>(m * k + k * n + m * n));
  double* a = scratch.data();
  double* b = a + m * k;
  double* d = b + k * n;
  auto gather = [&](int o, double* out) {
    const FragmentTable& t = *tables[o];
    for (int64_t e = 0; e < t.rows * t.cols; ++e) {
      auto [lane, reg] = t.cells[e];
      uint64_t* r = run[o][lane];
      if (!r) {
        out[e] = 0.0;
      } else {
        out[e] = integer[o] ? static_cast<double>(static_cast<int64_t>(r[reg]))
                            : std::bit_cast<double>(r[reg]);
      }
    }
  };
  gather(1, a);
  gather(2, b);
  gather(3, d);
  switch (n) {  // the instructions' widths get a loop the compiler unrolls and vectorises
    case 8:
      multiply_add<8>(d, a, b, m, k, n, !integer[0]);
      break;
    case 16:
      multiply_add<16>(d, a, b, m, k, n, !integer[0]);
      break;
    case 32:
      multiply_add<32>(d, a, b, m, k, n, !integer[0]);
      break;
    default:
      multiply_add<0>(d, a, b, m, k, n, !integer[0]);
      break;
  }
  for (int o = 1; o < 4; ++o) exec.observe(req[o], res[o]);
  const FragmentTable& td = *tables[0];
  for (int64_t e = 0; e < td.rows * td.cols; ++e) {
    auto [lane, reg] = td.cells[e];
    uint64_t* r = run[0][lane];
    if (!r) continue;
    if (integer[0]) {
      // int32 two's complement: the exact sum (|sum| < 2^53) wraps past the int32 range.
      auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(d[e])));
      r[reg] = static_cast<uint64_t>(static_cast<int64_t>(wrapped));
    } else {
      r[reg] = std::bit_cast<uint64_t>(d[e]);
    }
  }
  exec.observe(req[0], res[0]);
  exec.count_lane_ops(static_cast<int64_t>(m) * n * k);
}

}  // namespace tessel
