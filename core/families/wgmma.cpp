// The wgmma family (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate";
// sm_90a): wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}, N = 8, 16, ..., 256,
// executed by a warpgroup (4 consecutive warps, 128 threads): D(64xN, f32) = A(64x16) B(16xN)
// (+ D when scale_d), B read from shared memory through a matrix descriptor, A from shared memory
// (wgmma_ss_*) or from registers (wgmma_rs_*); wgmma.fence, wgmma.commit_group and
// wgmma.wait_group N order them. Warp w % 4 of the warpgroup computes rows 16 (w % 4) .. +15 of
// D, so each warp runs its own part here: it reads its rows of A and all of B at issue, and its
// accumulator registers (d_i of lane l: row l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) +
// 2 (l % 4) + i % 2, PTX ISA Figure 149) receive the results at the wait_group that retires the
// operation; the shared elements it reads count as read until then (a write meanwhile is a wgmma
// race, sim/block_sim_wgmma.cpp).
#include <bit>
#include <cmath>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/families/family_util.h"

namespace tessel {

int wgmma_swizzle_code(int swizzle_bytes) {
  switch (swizzle_bytes) {
    case 128:
      return 1;
    case 64:
      return 2;
    case 32:
      return 3;
    default:
      return 0;
  }
}

namespace {

IntrinsicOperand imm(const std::string& name) {
  return {name, OperandKind::kImmediate, false, {}, 0, 0, Fragment()};
}

/// The descriptor immediates of one shared operand: <x>_swizzle, <x>_lbo, <x>_sbo, <x>_mn_major.
void add_desc(std::vector<IntrinsicOperand>& ops, const std::string& x) {
  for (const char* f : {"_swizzle", "_lbo", "_sbo", "_mn_major"}) ops.push_back(imm(x + f));
}

IntrinsicInfo mma(IntrinsicId id, DataType in, bool a_regs) {
  const DataType f32 = DataType::f32();
  const std::string t = in == DataType::f16() ? "f16" : "bf16";
  IntrinsicInfo info;
  info.id = id;
  info.name = std::string("wgmma_") + (a_regs ? "rs_" : "ss_") + t;
  info.family = IntrinsicFamily::kWgmma;
  info.warp_size = 32;
  info.m = 64;
  info.k = 16;
  // D's register count is N / 2 (operand n), so the table gives it no fixed fragment; the
  // fragment is the formula at the top of this file.
  info.operands.push_back({"D", OperandKind::kRegisters, true, {f32}, 0, 0, Fragment()});
  if (a_regs) {
    info.operands.push_back({"A", OperandKind::kRegisters, false, {in}, 0, 8, mma_m16n8k16_a(in)});
  } else {
    info.operands.push_back({"A", OperandKind::kShared, false, {in}, 0, 1, Fragment()});
  }
  info.operands.push_back({"B", OperandKind::kShared, false, {in}, 0, 1, Fragment()});
  info.operands.push_back(imm("n"));
  if (!a_regs) add_desc(info.operands, "a");
  add_desc(info.operands, "b");
  info.operands.push_back(imm("scale_d"));
  info.cuda = "wgmma.mma_async.sync.aligned.m64nNk16.f32." + t + "." + t;
  info.description = "D(64xN, f32) = A(64x16, " + t + ", " + (a_regs ? "registers" : "shared") +
                     ") * B(16xN, " + t +
                     ", shared) + D, one warpgroup, asynchronous (PTX ISA wgmma.mma_async)";
  return info;
}

IntrinsicInfo group_op(IntrinsicId id, const std::string& name, const std::string& ptx) {
  IntrinsicInfo info;
  info.id = id;
  info.name = name;
  info.family = IntrinsicFamily::kWgmmaGroup;
  if (id == IntrinsicId::kWgmmaWaitGroup) info.operands.push_back(imm("n"));
  info.cuda = ptx;
  info.description = ptx + " (PTX ISA 9.7.15.7), one warpgroup";
  return info;
}

bool a_in_regs(const IntrinsicInfo& info) {
  return info.id == IntrinsicId::kWgmmaRsF16 || info.id == IntrinsicId::kWgmmaRsBF16;
}

/// Operand index of the first descriptor immediate of `x` ('a' or 'b').
size_t desc_at(const IntrinsicInfo& info, char x) {
  if (a_in_regs(info)) return 4;
  return x == 'a' ? 4 : 8;
}

WgmmaOperandDesc read_desc(const std::vector<int64_t>& v) {
  return {static_cast<int>(v[0]), v[1], v[2], v[3] != 0};
}

/// Flat element of the shared operand read for (mn, k); user error outside the buffer.
int64_t operand_flat(const WgmmaOperandDesc& d, int eb, int64_t start, int64_t mn, int64_t k,
                     int64_t size, const IntrinsicInfo& info, const char* which) {
  int64_t byte = wgmma_element_byte<int64_t>(d, eb, start, mn, k);
  if (byte < 0 || byte / eb >= size) {
    user_error(info.name + ": its " + which + " descriptor reaches element (" + std::to_string(mn) +
               ", " + std::to_string(k) + ") at byte " + std::to_string(byte) +
               ", outside the operand's shared buffer of " + std::to_string(size * eb) +
               " bytes; check the start, LBO and SBO");
  }
  return byte / eb;
}

class WgmmaFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "wgmma"; }

  std::vector<IntrinsicInfo> entries() const override {
    return {mma(IntrinsicId::kWgmmaSsF16, DataType::f16(), false),
            mma(IntrinsicId::kWgmmaSsBF16, DataType::bf16(), false),
            mma(IntrinsicId::kWgmmaRsF16, DataType::f16(), true),
            mma(IntrinsicId::kWgmmaRsBF16, DataType::bf16(), true),
            group_op(IntrinsicId::kWgmmaFence, "wgmma_fence", "wgmma.fence.sync.aligned"),
            group_op(IntrinsicId::kWgmmaCommitGroup, "wgmma_commit_group",
                     "wgmma.commit_group.sync.aligned"),
            group_op(IntrinsicId::kWgmmaWaitGroup, "wgmma_wait_group",
                     "wgmma.wait_group.sync.aligned")};
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    auto imm_of = [&](size_t i) { return *as_const_int(args[i].value); };
    if (info.family == IntrinsicFamily::kWgmmaGroup) {
      if (!info.operands.empty() && (imm_of(0) < 0 || imm_of(0) > 7)) {
        user_error(where + ": wait_group " + std::to_string(imm_of(0)) +
                   "; PTX allows 0 to 7 pending groups");
      }
      return;
    }
    const int64_t n = imm_of(3);
    if (n < 8 || n > 256 || n % 8 != 0) {
      user_error(where + ": n = " + std::to_string(n) +
                 "; wgmma.m64nNk16 takes N = 8, 16, ..., 256");
    }
    for (char x : {'a', 'b'}) {
      if (x == 'a' && a_in_regs(info)) continue;
      size_t at = desc_at(info, x);
      const int64_t sw = imm_of(at), lbo = imm_of(at + 1), sbo = imm_of(at + 2),
                    mn = imm_of(at + 3);
      const std::string op = std::string(1, static_cast<char>(x - 'a' + 'A'));
      if (sw != 0 && sw != 32 && sw != 64 && sw != 128) {
        user_error(where + ": " + op + "'s swizzle is " + std::to_string(sw) +
                   " bytes; a wgmma descriptor swizzles 0, 32, 64 or 128 bytes");
      }
      for (int64_t v : {lbo, sbo}) {
        // 14-bit fields of the offset >> 4 (bits 16-29, 32-45).
        if (v < 0 || v % 16 != 0 || (v >> 4) >= (1 << 14)) {
          user_error(where + ": " + op + "'s LBO/SBO " + std::to_string(v) +
                     " bytes; a descriptor offset is a multiple of 16 below 256 KiB");
        }
      }
      if (mn != 0 && mn != 1) user_error(where + ": " + op + "_mn_major must be 0 or 1");
    }
    if (imm_of(args.size() - 1) != 0 && imm_of(args.size() - 1) != 1) {
      user_error(where + ": scale_d must be 0 (D = A B) or 1 (D = A B + D)");
    }
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo& info,
                                                   size_t operand) const override {
    // The async proxy reads the operand tiles in whole lines, not per lane: no bank question
    // (verify/ proves instead that the descriptor addresses the operand's shared layout). The
    // swizzle XORs bits of the whole shared address, so the buffer starts at 1024 bytes.
    if (info.family != IntrinsicFamily::kWgmma ||
        info.operands[operand].kind != OperandKind::kShared) {
      return std::nullopt;
    }
    OperandMemoryAccess a;
    a.bytes = 2;
    a.lanes = 1;
    a.banks = false;
    a.buffer_align = 1024;
    a.what = info.name + " " + info.operands[operand].name + " descriptor";
    return a;
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    // One descriptor helper for every variant: call() records it under wgmma_ss_f16's name.
    if (info.id != IntrinsicId::kWgmmaSsF16) return "";
    // The 64-bit matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address >> 4
    // in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, base offset 0, swizzle in 62-63.
    return "__device__ __forceinline__ unsigned long long tessel_wgmma_desc(const void* p, "
           "unsigned lbo, unsigned sbo, unsigned long long swizzle) {\n"
           "  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));\n"
           "  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |\n"
           "         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |\n"
           "         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32) | "
           "(swizzle << 62);\n"
           "}\n"
           // The tile 16 * off16 bytes into a shared buffer that starts 16-byte aligned: the
           // buffer's descriptor (loop-invariant: nvcc builds it once) plus off16 in the start
           // field. The caller makes it only where every shared address of the block is below
           // 2^18 (call()): then (start >> 4) + off16 = (start + 16 off16) >> 4 < 2^14 and the
           // add cannot carry out of bits 0-13, so it is the low word's alone.
           "__device__ __forceinline__ unsigned long long tessel_wgmma_desc_at(const void* "
           "base, unsigned off16, unsigned lbo, unsigned sbo, unsigned long long swizzle) {\n"
           "  const unsigned long long d = tessel_wgmma_desc(base, lbo, sbo, swizzle);\n"
           "  return (d & 0xFFFFFFFF00000000ull) | (static_cast<unsigned>(d) + off16);\n"
           "}\n";
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    if (info.id == IntrinsicId::kWgmmaFence)
      return "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");";
    if (info.id == IntrinsicId::kWgmmaCommitGroup) {
      return "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");";
    }
    if (info.id == IntrinsicId::kWgmmaWaitGroup) {
      return "asm volatile(\"wgmma.wait_group.sync.aligned " + text.args[0] +
             ";\\n\" ::: \"memory\");";
    }
    used.insert(intrinsic_info(IntrinsicId::kWgmmaSsF16).name);  // tessel_wgmma_desc
    const int n = std::stoi(text.args[3]);
    const bool rs = a_in_regs(info);
    const std::string t = info.operands[1].dtypes[0] == DataType::f16() ? "f16" : "bf16";
    // The 14-bit start field holds shared addresses below 2^18; where every address of the
    // block is provably below that (CallText::shared_address_bound), a descriptor is the
    // buffer's plus the operand's 16-byte offset (tessel_wgmma_desc_at), else it is built from
    // the operand's address.
    const bool offsets =
        text.shared_address_bound > 0 && text.shared_address_bound <= (int64_t{1} << 18);
    auto desc = [&](char x, size_t operand) {
      size_t at = desc_at(info, x);
      const std::string fields = text.args[at + 1] + "u, " + text.args[at + 2] + "u, " +
                                 std::to_string(wgmma_swizzle_code(std::stoi(text.args[at]))) +
                                 "ull)";
      if (offsets && operand < text.offsets16.size() && !text.offsets16[operand].empty()) {
        return "tessel_wgmma_desc_at(" + text.buffers[operand] + ", " + text.offsets16[operand] +
               ", " + fields;
      }
      return "tessel_wgmma_desc(" + text.args[operand] + ", " + fields;
    };
    const int d = n / 2;
    std::ostringstream o;
    o << "{\n  float* tessel_d = " << text.args[0] << ";\n";
    if (rs)
      o << "  const unsigned* tessel_a = reinterpret_cast<const unsigned*>(" << text.args[1]
        << ");\n";
    else
      o << "  unsigned long long tessel_da = " << desc('a', 1) << ";\n";
    o << "  unsigned long long tessel_db = " << desc('b', 2) << ";\n";
    // Inputs after the d outputs: ss: desc A, desc B, scale_d, trans A, trans B; rs: A's four
    // registers, desc B, scale_d, trans B.
    o << "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << d + (rs ? 5 : 2)
      << ", 0;\\nwgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << t << "." << t << " "
      << asm_operands(0, d) << ", ";
    int next = d;
    if (rs) {
      o << asm_operands(next, 4) << ", %" << next + 4 << ", p, 1, 1, %" << next + 6 << ";\\n}\\n\"";
    } else {
      o << "%" << next << ", %" << next + 1 << ", p, 1, 1, %" << next + 3 << ", %" << next + 4
        << ";\\n}\\n\"";
    }
    o << "\n      : ";
    for (int i = 0; i < d; ++i) o << (i ? ", " : "") << "\"+f\"(tessel_d[" << i << "])";
    o << "\n      : ";
    if (rs) {
      o << "\"r\"(tessel_a[0]), \"r\"(tessel_a[1]), \"r\"(tessel_a[2]), \"r\"(tessel_a[3]), "
        << "\"l\"(tessel_db), \"r\"(" << text.args.back() << "), \"n\"("
        << text.args[desc_at(info, 'b') + 3] << ")";
    } else {
      o << "\"l\"(tessel_da), \"l\"(tessel_db), \"r\"(" << text.args.back() << "), \"n\"("
        << text.args[desc_at(info, 'a') + 3] << "), \"n\"(" << text.args[desc_at(info, 'b') + 3]
        << ")";
    }
    o << "\n      : \"memory\");\n}";
    return o.str();
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    exec.require_full_warp();
    if (info.id == IntrinsicId::kWgmmaFence) return exec.wgmma_fence();
    if (info.id == IntrinsicId::kWgmmaCommitGroup) return exec.wgmma_commit();
    if (info.id == IntrinsicId::kWgmmaWaitGroup) {
      return exec.wgmma_wait(static_cast<int>(exec.immediate(0)));
    }
    const bool rs = a_in_regs(info);
    const int n = static_cast<int>(exec.immediate(3));
    const int d_regs = n / 2;
    const uint64_t mask = exec.mask();
    const int row0 = 16 * (exec.warp_index() % 4);
    const int eb = static_cast<int>(info.operands[2].dtypes[0].storage_bytes(1));
    auto desc_of = [&](char x) {
      size_t at = desc_at(info, x);
      return read_desc(
          {exec.immediate(static_cast<int>(at)), exec.immediate(static_cast<int>(at + 1)),
           exec.immediate(static_cast<int>(at + 2)), exec.immediate(static_cast<int>(at + 3))});
    };
    auto start_of = [&](int operand, int64_t& size) {
      // The descriptor's start: the operand element's byte offset in its (row-major) buffer.
      const std::vector<int64_t> shape = exec.shape(operand);
      const std::vector<int64_t> idx = exec.lane_indices(operand, std::countr_zero(mask));
      int64_t flat = 0;
      size = 1;
      for (size_t i = 0; i < shape.size(); ++i) {
        flat = flat * shape[i] + idx[i];
        size *= shape[i];
      }
      return flat * eb;
    };
    std::vector<std::pair<int, int64_t>> reads;
    // B (16 x N), read by every warp of the warpgroup.
    int64_t b_size = 0;
    const int64_t b_start = start_of(2, b_size);
    const WgmmaOperandDesc bd = desc_of('b');
    std::vector<double> b(static_cast<size_t>(16 * n));
    for (int k = 0; k < 16; ++k) {
      for (int j = 0; j < n; ++j) {
        int64_t f = operand_flat(bd, eb, b_start, j, k, b_size, info, "B");
        reads.emplace_back(2, f);
        b[static_cast<size_t>(k * n + j)] = std::bit_cast<double>(exec.cell(2, 0, f));
      }
    }
    // A: this warp's 16 rows.
    std::vector<double> a(16 * 16);
    std::vector<WarpIntrinsicExec::WgmmaRegister> a_regs;
    if (rs) {
      OperandRequest req{1, LaneAccess::kLoad, mask, 8};
      req.wgmma_registers = true;
      OperandLanes res = exec.resolve(req);
      for (uint64_t m = res.ok; m; m &= m - 1) {
        const int l = std::countr_zero(m);
        for (int j = 0; j < 8; ++j) a_regs.push_back({1, l, res.flat[l] + j});
      }
      const FragmentTable& ta = fragment_table(info, 1);
      for (int r = 0; r < 16; ++r) {
        for (int k = 0; k < 16; ++k) {
          auto [lane, reg] = ta.at(r, k);
          a[r * 16 + k] = ((res.ok >> lane) & 1)
                              ? std::bit_cast<double>(exec.cell(1, lane, res.flat[lane] + reg))
                              : 0.0;
        }
      }
      exec.observe(req, res);
    } else {
      int64_t a_size = 0;
      const int64_t a_start = start_of(1, a_size);
      const WgmmaOperandDesc ad = desc_of('a');
      for (int r = 0; r < 16; ++r) {
        for (int k = 0; k < 16; ++k) {
          int64_t f = operand_flat(ad, eb, a_start, row0 + r, k, a_size, info, "A");
          reads.emplace_back(1, f);
          a[r * 16 + k] = std::bit_cast<double>(exec.cell(1, 0, f));
        }
      }
    }
    // D: lane l's register i is row l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2
    // of this warp's 16 rows. The accumulator is read (scale_d) and written as registers.
    const bool scale_d = exec.immediate(static_cast<int>(info.operands.size() - 1)) != 0;
    // D is observed as written (its registers count as initialised): the chained read of the
    // accumulator happens inside the tensor core, not as a thread's register read, which would be
    // a wgmma race while an earlier wgmma on it is pending.
    OperandRequest dreq{0, LaneAccess::kStore, mask, d_regs};
    dreq.wgmma_registers = true;
    OperandLanes dres = exec.resolve(dreq);
    std::vector<WarpIntrinsicExec::WgmmaWrite> writes;
    writes.reserve(static_cast<size_t>(std::popcount(dres.ok)) * d_regs);
    for (uint64_t m = dres.ok; m; m &= m - 1) {
      const int l = std::countr_zero(m);
      for (int i = 0; i < d_regs; ++i) {
        const int r = l / 4 + 8 * ((i / 2) % 2), c = 8 * (i / 4) + 2 * (l % 4) + i % 2;
        const int64_t flat = dres.flat[l] + i;
        double acc = scale_d ? std::bit_cast<double>(exec.wgmma_accumulator(0, l, flat)) : 0.0;
        for (int k = 0; k < 16; ++k) acc += a[r * 16 + k] * b[static_cast<size_t>(k * n + c)];
        writes.push_back(
            {0, l, flat, std::bit_cast<uint64_t>(static_cast<double>(static_cast<float>(acc)))});
      }
    }
    exec.observe(dreq, dres);
    exec.count_lane_ops(int64_t{16} * n * 16);
    exec.wgmma_issue(reads, a_regs, writes);
  }
};

}  // namespace

const InstructionFamily& wgmma_family() {
  static const WgmmaFamily family;
  return family;
}

}  // namespace tessel
