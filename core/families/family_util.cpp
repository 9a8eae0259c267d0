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
  auto read = [&](int o, int row, int col) -> double {
    auto [lane, reg] = tables[o]->at(row, col);
    if (!((res[o].ok >> lane) & 1)) return 0.0;
    return std::bit_cast<double>(exec.cell(o, lane, res[o].flat[lane] + reg));
  };
  const int m = info.m, n = info.n, k = info.k;
  std::vector<double> d(static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = read(3, i, j);
      for (int kk = 0; kk < k; ++kk) acc += read(1, i, kk) * read(2, kk, j);
      d[i * n + j] = static_cast<double>(static_cast<float>(acc));
    }
  }
  for (int o = 1; o < 4; ++o) exec.observe(req[o], res[o]);
  const FragmentTable& td = *tables[0];
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      auto [lane, reg] = td.at(i, j);
      if (!((res[0].ok >> lane) & 1)) continue;
      exec.cell(0, lane, res[0].flat[lane] + reg) = std::bit_cast<uint64_t>(d[i * n + j]);
    }
  }
  exec.observe(req[0], res[0]);
  exec.count_lane_ops(static_cast<int64_t>(m) * n * k);
}

}  // namespace tessel
