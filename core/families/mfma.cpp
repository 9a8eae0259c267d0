// The MFMA family: v_mfma_f32_{16x16x16,32x32x8}_{f16,bf16} (AMD Matrix Instruction Calculator,
// CDNA3, wave64): D(m x m, f32) = A * B + C, one wave, every operand a register fragment; HIP
// spells them as the LLVM amdgcn builtins.
#include "core/builtin_layouts.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

IntrinsicOperand registers(std::string name, bool written, DataType dtype, int elements,
                           Fragment layout) {
  return {std::move(name), OperandKind::kRegisters, written, {dtype}, 0,
          elements,        std::move(layout)};
}

IntrinsicInfo entry(IntrinsicId id, int m, DataType in) {
  const DataType f32 = DataType::f32();
  bool big = m == 32;
  std::string t = in == DataType::f16() ? "f16" : "bf16";
  std::string shape = big ? "32x32x8" : "16x16x16";
  IntrinsicInfo info;
  info.id = id;
  info.name = "mfma_" + shape + "_" + t;
  info.family = IntrinsicFamily::kMma;
  info.warp_size = 64;
  info.nvidia = false;
  info.m = m;
  info.n = m;
  info.k = big ? 8 : 16;
  int d_regs = big ? 16 : 4;
  info.operands = {
      registers("D", true, f32, d_regs, big ? mfma_32x32x8_d(f32) : mfma_16x16x16_d(f32)),
      registers("A", false, in, 4, big ? mfma_32x32x8_a(in) : mfma_16x16x16_a(in)),
      registers("B", false, in, 4, big ? mfma_32x32x8_b(in) : mfma_16x16x16_b(in)),
      registers("C", false, f32, d_regs, big ? mfma_32x32x8_d(f32) : mfma_16x16x16_d(f32))};
  // The LLVM builtins spell bf16 variants with a "_1k" suffix on CDNA2+.
  info.hip = "__builtin_amdgcn_mfma_f32_" + shape + (in == DataType::f16() ? "f16" : "bf16_1k");
  info.description = "D(" + std::to_string(m) + "x" + std::to_string(m) +
                     ", f32) = A * B + C, k = " + std::to_string(info.k) +
                     ", one wave64 (AMD CDNA3 v_mfma_f32_" + shape + "_" + t + ")";
  return info;
}

class MfmaFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "MFMA"; }

  std::vector<IntrinsicInfo> entries() const override {
    return {entry(IntrinsicId::kMfma16x16x16F16, 16, DataType::f16()),
            entry(IntrinsicId::kMfma16x16x16BF16, 16, DataType::bf16()),
            entry(IntrinsicId::kMfma32x32x8F16, 32, DataType::f16()),
            entry(IntrinsicId::kMfma32x32x8BF16, 32, DataType::bf16())};
  }

  void check_call(const IntrinsicInfo&, const std::vector<IntrinsicArg>&,
                  const std::string&) const override {}  // the operand checks say it all

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    return std::nullopt;  // registers only
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kHip) no_spelling(info, lang);
    const auto& ops = info.operands;
    const int ab = ops[1].elements, cd = ops[0].elements;
    const bool bf16 = ops[1].dtypes[0].code == TypeCode::kBFloat;
    const std::string in = bf16 ? "short" : "_Float16";
    std::ostringstream o;
    o << "TESSEL_DEVICE void tessel_" << info.name
      << "(float* d, const void* a, const void* b, const float* c) {\n"
      << "  typedef " << in << " In __attribute__((ext_vector_type(" << ab << ")));\n"
      << "  typedef float Acc __attribute__((ext_vector_type(" << cd << ")));\n"
      << "  const " << in << "* A = static_cast<const " << in << "*>(a);\n"
      << "  const " << in << "* B = static_cast<const " << in << "*>(b);\n"
      << "  In av, bv;\n  Acc cv;\n"
      << "  for (int i = 0; i < " << ab << "; ++i) av[i] = A[i], bv[i] = B[i];\n"
      << "  for (int i = 0; i < " << cd << "; ++i) cv[i] = c[i];\n"
      << "  Acc r = " << info.hip << "(av, bv, cv, 0, 0, 0);\n"
      << "  for (int i = 0; i < " << cd << "; ++i) d[i] = r[i];\n}\n";
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    if (text.lang != Language::kHip) no_spelling(info, text.lang);
    return helper_call(info, text.args, used);
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    execute_matrix(info, exec);
  }
};

}  // namespace

const InstructionFamily& mfma_family() {
  static const MfmaFamily family;
  return family;
}

}  // namespace tessel
