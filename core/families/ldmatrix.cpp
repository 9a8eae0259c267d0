// The ldmatrix family: ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 (PTX ISA,
// "ldmatrix"). Lanes 8m..8m+7 give the 16-byte row addresses of 8x8 matrix m; the matrix's 16-bit
// elements land in the warp's registers as the dst fragment (core/builtin_layouts) says.
#include "core/bank_rules.h"
#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

constexpr int kRowBytes = 16;  // one row of a matrix: 8 elements of 16 bits

IntrinsicInfo entry(IntrinsicId id, int num, bool trans) {
  std::string x = "x" + std::to_string(num);
  IntrinsicInfo info;
  info.id = id;
  info.name = "ldmatrix_" + x + (trans ? "_trans" : "");
  info.family = IntrinsicFamily::kLdmatrix;
  info.m = num;
  info.trans = trans;
  const DataType f16 = DataType::f16();
  Fragment layout = num == 1   ? ldmatrix_x1(f16, trans)
                    : num == 2 ? ldmatrix_x2(f16, trans)
                               : ldmatrix_x4(f16, trans);
  IntrinsicOperand dst{"dst", OperandKind::kRegisters, true, {}, 16, 2 * num, layout};
  // Lanes 8m..8m+7 give the row addresses of matrix m: 8 elements of 16 bits (16 bytes).
  IntrinsicOperand src{"src", OperandKind::kShared, false, {}, 16, 8, Fragment()};
  info.operands = {dst, src};
  info.cuda = "ldmatrix.sync.aligned.m8n8." + x + (trans ? ".trans" : "") + ".shared.b16";
  info.description = std::to_string(num) +
                     " 8x8 matrix(es) of 16-bit elements from shared "
                     "memory into registers" +
                     (trans ? ", transposed" : "") +
                     "; lanes 8m..8m+7 address the rows of matrix m (PTX ISA ldmatrix)";
  return info;
}

class LdmatrixFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "ldmatrix"; }

  std::vector<IntrinsicInfo> entries() const override {
    return {entry(IntrinsicId::kLdmatrixX1, 1, false),
            entry(IntrinsicId::kLdmatrixX2, 2, false),
            entry(IntrinsicId::kLdmatrixX4, 4, false),
            entry(IntrinsicId::kLdmatrixX1Trans, 1, true),
            entry(IntrinsicId::kLdmatrixX2Trans, 2, true),
            entry(IntrinsicId::kLdmatrixX4Trans, 4, true)};
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    if (args[0].buffer->dtype != args[1].buffer->dtype) {
      user_error(where + ": dst '" + args[0].buffer->name + "' is " + args[0].buffer->dtype.name() +
                 " but src '" + args[1].buffer->name + "' is " + args[1].buffer->dtype.name() +
                 "; ldmatrix moves 16-bit words unchanged, give both the same element type");
    }
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo& info,
                                                   size_t operand) const override {
    if (operand != 1) return std::nullopt;
    return OperandMemoryAccess{kRowBytes, 8 * info.m, true, true, kRowBytes, info.name + " row"};
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    int n = info.m;  // matrices = 32-bit registers per lane
    std::ostringstream o;
    o << "__device__ __forceinline__ void tessel_" << info.name
      << "(void* dst, const void* src) {\n"
      << "  unsigned* d = static_cast<unsigned*>(dst);\n"
      << "  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(src));\n"
      << "  asm volatile(\"" << info.cuda << " " << asm_operands(0, n) << ", [%" << n
      << "];\\n\"\n               : ";
    for (int i = 0; i < n; ++i) o << (i ? ", " : "") << "\"=r\"(d[" << i << "])";
    o << "\n               : \"r\"(addr));\n}\n";
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    return helper_call(info, text.args, used);
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const FragmentTable& t = fragment_table(info, 0);
    exec.require_full_warp();
    const uint64_t mask = exec.mask();
    const int matrices = info.m;
    // Lanes 8m..8m+7 give the 16-byte row addresses of matrix m.
    OperandRequest src{1,    LaneAccess::kLoad, mask & full_mask(8 * matrices), 8, nullptr,
                       true, kRowBytes};
    OperandLanes s = exec.resolve(src);
    OperandRequest dst{0, LaneAccess::kStore, mask, info.operands[0].elements};
    OperandLanes d = exec.resolve(dst);
    exec.observe(src, s);
    // A row's 8 shared cells, and a lane's register run, are consecutive cells (cell(o, lane,
    // flat + j) is &cell(o, lane, flat) + j): each is found once.
    std::array<uint64_t*, 64> dst_run{};
    for (uint64_t l = d.ok; l; l &= l - 1) {
      int lane = std::countr_zero(l);
      dst_run[lane] = &exec.cell(0, lane, d.flat[lane]);
    }
    for (int row = 0; row < 8 * matrices; ++row) {
      if (!((s.ok >> row) & 1)) continue;
      const uint64_t* src_row = &exec.cell(1, 0, s.flat[row]);
      for (int col = 0; col < 8; ++col) {
        auto [lane, reg] = t.at(row, col);
        if (uint64_t* r = dst_run[lane]) r[reg] = src_row[col];
      }
    }
    exec.observe(dst, d);
  }
};

}  // namespace

const InstructionFamily& ldmatrix_family() {
  static const LdmatrixFamily family;
  return family;
}

}  // namespace tessel
