// The mma.sync family (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" and
// "for mma.m16n8k32"), one warp, every operand a register fragment:
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: D(16x8, f32) = A(16x16) *
//   B(16x8) + C;
//   mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: D(16x8, s32) = A(16x32, s8) * B(32x8, s8) + C,
//   exact in 32-bit two's complement (no .satfinite: a sum past the int32 range wraps).
#include "core/builtin_layouts.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

IntrinsicOperand registers(std::string name, bool written, DataType dtype, int elements,
                           Fragment layout) {
  return {std::move(name), OperandKind::kRegisters, written, {dtype}, 0,
          elements,        std::move(layout)};
}

IntrinsicInfo entry(IntrinsicId id, DataType in) {
  const DataType f32 = DataType::f32();
  std::string t = in == DataType::f16() ? "f16" : "bf16";
  IntrinsicInfo info;
  info.id = id;
  info.name = "mma_m16n8k16_" + t;
  info.family = IntrinsicFamily::kMma;
  info.m = 16;
  info.n = 8;
  info.k = 16;
  info.operands = {registers("D", true, f32, 4, mma_m16n8k16_c(f32)),
                   registers("A", false, in, 8, mma_m16n8k16_a(in)),
                   registers("B", false, in, 4, mma_m16n8k16_b(in)),
                   registers("C", false, f32, 4, mma_m16n8k16_c(f32))};
  info.cuda = "mma.sync.aligned.m16n8k16.row.col.f32." + t + "." + t + ".f32";
  info.description = "D(16x8, f32) = A(16x16, " + t + ") * B(16x8, " + t +
                     ") + C, one warp (PTX ISA mma.m16n8k16 fragments)";
  return info;
}

/// The int8 instruction: each 32-bit register of A and B holds four int8 values along k.
IntrinsicInfo entry_s8() {
  const DataType i8 = DataType::i8(), i32 = DataType::i32();
  IntrinsicInfo info;
  info.id = IntrinsicId::kMmaM16N8K32S8;
  info.name = "mma_m16n8k32_s8";
  info.family = IntrinsicFamily::kMma;
  info.m = 16;
  info.n = 8;
  info.k = 32;
  info.operands = {registers("D", true, i32, 4, mma_m16n8k16_c(i32)),
                   registers("A", false, i8, 16, mma_m16n8k32_a(i8)),
                   registers("B", false, i8, 8, mma_m16n8k32_b(i8)),
                   registers("C", false, i32, 4, mma_m16n8k16_c(i32))};
  info.cuda = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
  info.description =
      "D(16x8, s32) = A(16x32, s8) * B(32x8, s8) + C, one warp, wrapping int32 sums (PTX ISA "
      "mma.m16n8k32 fragments)";
  return info;
}

class MmaSyncFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "mma.sync"; }

  std::vector<IntrinsicInfo> entries() const override {
    return {entry(IntrinsicId::kMmaM16N8K16F16, DataType::f16()),
            entry(IntrinsicId::kMmaM16N8K16BF16, DataType::bf16()), entry_s8()};
  }

  void check_call(const IntrinsicInfo&, const std::vector<IntrinsicArg>&,
                  const std::string&) const override {}  // the operand checks say it all

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    return std::nullopt;  // registers only
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    const auto& ops = info.operands;  // D, A, B, C
    int d = regs32(ops[0].dtypes[0], ops[0].elements);
    int a = regs32(ops[1].dtypes[0], ops[1].elements);
    int b = regs32(ops[2].dtypes[0], ops[2].elements);
    int c = regs32(ops[3].dtypes[0], ops[3].elements);
    // The accumulator: float registers ("f"), or int32 ones ("r").
    const bool integer = ops[0].dtypes[0] == DataType::i32();
    const char* acc = integer ? "int" : "float";
    const char* reg = integer ? "r" : "f";
    std::ostringstream o;
    o << "__device__ __forceinline__ void tessel_" << info.name << "(" << acc
      << "* d, const void* a, const void* b, const " << acc << "* c) {\n"
      << "  const unsigned* A = static_cast<const unsigned*>(a);\n"
      << "  const unsigned* B = static_cast<const unsigned*>(b);\n"
      << "  asm volatile(\"" << info.cuda << " " << asm_operands(0, d) << ", " << asm_operands(d, a)
      << ", " << asm_operands(d + a, b) << ", " << asm_operands(d + a + b, c)
      << ";\\n\"\n               : ";
    for (int i = 0; i < d; ++i) o << (i ? ", " : "") << "\"=" << reg << "\"(d[" << i << "])";
    o << "\n               : ";
    for (int i = 0; i < a; ++i) o << (i ? ", " : "") << "\"r\"(A[" << i << "])";
    for (int i = 0; i < b; ++i) o << ", \"r\"(B[" << i << "])";
    for (int i = 0; i < c; ++i) o << ", \"" << reg << "\"(c[" << i << "])";
    o << ");\n}\n";
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    return helper_call(info, text.args, used);
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    execute_matrix(info, exec);
  }
};

}  // namespace

const InstructionFamily& mma_sync_family() {
  static const MmaSyncFamily family;
  return family;
}

}  // namespace tessel
