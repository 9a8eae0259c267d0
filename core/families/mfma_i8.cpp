// The int8 MFMA family (AMD Matrix Instruction Calculator and the CDNA2/CDNA3 ISA guides, wave64):
// D(16x16, i32) = A(16xK, i8) * B(Kx16, i8) + C, exact in 32-bit two's complement, one wave,
// every operand a register fragment. Two generations, one instance each, because neither chip
// accepts the other's instruction (LLVM: 16x16x16i8 is gfx908/gfx90a only, 16x16x32_i8 gfx940+):
//   CDNA2 (gfx90a): v_mfma_i32_16x16x16i8, K = 16, A and B one 32-bit VGPR (4 int8) a lane;
//   CDNA3 (gfx942): v_mfma_i32_16x16x32_i8, K = 32, A and B two VGPRs (8 int8) a lane.
// Both: A[m][k] in lane m + 16 (k / (K/4)), byte k % (K/4) of the lane's register(s) (lowest
// byte first); B[k][n] in lane n + 16 (k / (K/4)), byte k % (K/4); D register r of lane l holds
// D[4 (l / 16) + r][l % 16] (as v_mfma_f32_16x16x16_f16). HIP spells them as the LLVM amdgcn
// builtins __builtin_amdgcn_mfma_i32_16x16x16i8 (int, int, int4) and
// __builtin_amdgcn_mfma_i32_16x16x32_i8 (long, long, int4).
#include "core/builtin_layouts.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

IntrinsicOperand registers(std::string name, bool written, DataType dtype, int elements,
                           Fragment layout) {
  return {std::move(name), OperandKind::kRegisters, written, {dtype}, 0,
          elements,        std::move(layout)};
}

/// A (16 x k, m x k): lane m + 16 (k / per), element k % per, per = k / 4 int8 a lane.
Fragment a_fragment(int64_t k) {
  const int64_t per = k / 4;
  return Fragment::from_fn({16, k}, [per](const std::vector<Var>& v, const Var&) {
    return std::pair(v[0] + floordiv(v[1], make_int(per)) * 16, floormod(v[1], make_int(per)));
  });
}

/// B (k x 16, k x n): lane n + 16 (k / per), element k % per.
Fragment b_fragment(int64_t k) {
  const int64_t per = k / 4;
  return Fragment::from_fn({k, 16}, [per](const std::vector<Var>& v, const Var&) {
    return std::pair(v[1] + floordiv(v[0], make_int(per)) * 16, floormod(v[0], make_int(per)));
  });
}

IntrinsicInfo entry(bool cdna3) {
  const DataType i8 = DataType::i8(), i32 = DataType::i32();
  const int k = cdna3 ? 32 : 16, per = k / 4;
  IntrinsicInfo info;
  info.id = cdna3 ? IntrinsicId::kMfma16x16x32I8 : IntrinsicId::kMfma16x16x16I8;
  info.name = cdna3 ? "mfma_16x16x32_i8" : "mfma_16x16x16_i8";
  info.family = IntrinsicFamily::kMma;
  info.warp_size = 64;
  info.nvidia = false;
  info.m = 16;
  info.n = 16;
  info.k = k;
  info.operands = {registers("D", true, i32, 4, mfma_16x16x16_d(i32)),
                   registers("A", false, i8, per, a_fragment(k)),
                   registers("B", false, i8, per, b_fragment(k)),
                   registers("C", false, i32, 4, mfma_16x16x16_d(i32))};
  info.hip =
      cdna3 ? "__builtin_amdgcn_mfma_i32_16x16x32_i8" : "__builtin_amdgcn_mfma_i32_16x16x16i8";
  info.description = std::string("D(16x16, i32) = A(16x") + std::to_string(k) + ", i8) * B(" +
                     std::to_string(k) + "x16, i8) + C, one wave64, wrapping int32 sums (AMD " +
                     (cdna3 ? "CDNA3 v_mfma_i32_16x16x32_i8)" : "CDNA2 v_mfma_i32_16x16x16i8)");
  return info;
}

class MfmaI8Family final : public InstructionFamily {
 public:
  explicit MfmaI8Family(bool cdna3) : cdna3_(cdna3) {}

  std::string_view name() const override {
    return cdna3_ ? "MFMA int8 (CDNA3)" : "MFMA int8 (CDNA2)";
  }

  std::vector<IntrinsicInfo> entries() const override { return {entry(cdna3_)}; }

  void check_call(const IntrinsicInfo&, const std::vector<IntrinsicArg>&,
                  const std::string&) const override {}  // the operand checks say it all

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    return std::nullopt;  // registers only
  }

  /// The helper packs each lane's int8 values into the builtin's integer operand, element e at
  /// bits 8e .. 8e + 7 (the calculator's byte order), and copies the int32 accumulators.
  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kHip) no_spelling(info, lang);
    const int per = info.operands[1].elements;
    const std::string word = per == 8 ? "long" : "int";
    const std::string uword = per == 8 ? "unsigned long" : "unsigned int";
    std::ostringstream o;
    o << "TESSEL_DEVICE void tessel_" << info.name
      << "(int* d, const void* a, const void* b, const int* c) {\n"
      << "  typedef int Acc __attribute__((ext_vector_type(4)));\n"
      << "  const unsigned char* A = static_cast<const unsigned char*>(a);\n"
      << "  const unsigned char* B = static_cast<const unsigned char*>(b);\n"
      << "  " << uword << " av = 0, bv = 0;\n"
      << "  for (int i = 0; i < " << per << "; ++i) {\n"
      << "    av |= static_cast<" << uword << ">(A[i]) << (8 * i);\n"
      << "    bv |= static_cast<" << uword << ">(B[i]) << (8 * i);\n"
      << "  }\n"
      << "  Acc cv;\n"
      << "  for (int i = 0; i < 4; ++i) cv[i] = c[i];\n"
      << "  Acc r = " << info.hip << "(static_cast<" << word << ">(av), static_cast<" << word
      << ">(bv), cv, 0, 0, 0);\n"
      << "  for (int i = 0; i < 4; ++i) d[i] = r[i];\n}\n";
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

 private:
  bool cdna3_;
};

}  // namespace

const InstructionFamily& mfma_i8_cdna2_family() {
  static const MfmaI8Family family(false);
  return family;
}

const InstructionFamily& mfma_i8_cdna3_family() {
  static const MfmaI8Family family(true);
  return family;
}

}  // namespace tessel
