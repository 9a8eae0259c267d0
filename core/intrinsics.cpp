// The intrinsic table (one entry per instruction), argument validation and printing of calls.
#include "core/intrinsics.h"

#include <algorithm>
#include <initializer_list>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/op_atomic.h"
#include "core/stmt.h"

namespace tessel {

namespace {

const DataType kF16 = DataType::f16();
const DataType kBF16 = DataType::bf16();
const DataType kF32 = DataType::f32();

IntrinsicInfo entry(IntrinsicId id, std::string name, IntrinsicFamily family) {
  IntrinsicInfo info;
  info.id = id;
  info.name = std::move(name);
  info.family = family;
  return info;
}

IntrinsicOperand registers(std::string name, bool written, DataType dtype, int elements,
                           Fragment layout) {
  return {std::move(name), OperandKind::kRegisters, written, {dtype}, 0,
          elements,        std::move(layout)};
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (PTX ISA, "Matrix Fragments
/// for mma.m16n8k16 with floating point type").
IntrinsicInfo mma(IntrinsicId id, DataType in) {
  std::string t = in == kF16 ? "f16" : "bf16";
  IntrinsicInfo info = entry(id, "mma_m16n8k16_" + t, IntrinsicFamily::kMma);
  info.m = 16;
  info.n = 8;
  info.k = 16;
  info.operands = {registers("D", true, kF32, 4, mma_m16n8k16_c(kF32)),
                   registers("A", false, in, 8, mma_m16n8k16_a(in)),
                   registers("B", false, in, 4, mma_m16n8k16_b(in)),
                   registers("C", false, kF32, 4, mma_m16n8k16_c(kF32))};
  info.cuda = "mma.sync.aligned.m16n8k16.row.col.f32." + t + "." + t + ".f32";
  info.description = "D(16x8, f32) = A(16x16, " + t + ") * B(16x8, " + t +
                     ") + C, one warp (PTX ISA mma.m16n8k16 fragments)";
  return info;
}

/// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_size (PTX ISA, "cp.async").
IntrinsicInfo cp_async(IntrinsicId id, int bytes) {
  IntrinsicInfo info = entry(id, "cp_async_" + std::to_string(bytes), IntrinsicFamily::kCpAsync);
  info.bytes = bytes;
  // `elements` of the address operands is bytes / element size, fixed per call by its dtype.
  info.operands = {{"dst", OperandKind::kShared, true, {}, 0, 0, Fragment()},
                   {"src", OperandKind::kGlobal, false, {}, 0, 0, Fragment()},
                   {"src_size", OperandKind::kValue, false, {}, 0, 0, Fragment()}};
  info.cuda = std::string(bytes == 16 ? "cp.async.cg" : "cp.async.ca") + ".shared.global";
  info.description = "asynchronous copy of " + std::to_string(bytes) +
                     " bytes per thread from global to shared memory; bytes past src_size are "
                     "zero-filled; lands at cp_async_wait_group (PTX ISA cp.async)";
  return info;
}

/// v_mfma_f32_{16x16x16,32x32x8}_{f16,bf16} (AMD Matrix Instruction Calculator, CDNA3, wave64).
IntrinsicInfo mfma(IntrinsicId id, int m, DataType in) {
  bool big = m == 32;
  std::string t = in == kF16 ? "f16" : "bf16";
  std::string shape = big ? "32x32x8" : "16x16x16";
  IntrinsicInfo info = entry(id, "mfma_" + shape + "_" + t, IntrinsicFamily::kMma);
  info.warp_size = 64;
  info.nvidia = false;
  info.m = m;
  info.n = m;
  info.k = big ? 8 : 16;
  int d_regs = big ? 16 : 4;
  info.operands = {
      registers("D", true, kF32, d_regs, big ? mfma_32x32x8_d(kF32) : mfma_16x16x16_d(kF32)),
      registers("A", false, in, 4, big ? mfma_32x32x8_a(in) : mfma_16x16x16_a(in)),
      registers("B", false, in, 4, big ? mfma_32x32x8_b(in) : mfma_16x16x16_b(in)),
      registers("C", false, kF32, d_regs, big ? mfma_32x32x8_d(kF32) : mfma_16x16x16_d(kF32))};
  // The LLVM builtins spell bf16 variants with a "_1k" suffix on CDNA2+.
  info.hip = "__builtin_amdgcn_mfma_f32_" + shape + (in == kF16 ? "f16" : "bf16_1k");
  info.description = "D(" + std::to_string(m) + "x" + std::to_string(m) +
                     ", f32) = A * B + C, k = " + std::to_string(info.k) +
                     ", one wave64 (AMD CDNA3 v_mfma_f32_" + shape + "_" + t + ")";
  return info;
}

/// atom.{add,max,min} on one global or shared element per thread (CUDA atomicAdd/Max/Min, HIP
/// the same names). Element types: those some CUDA or HIP overload or a compare-and-swap loop
/// on 16/32/64-bit words covers (see atomic_function).
IntrinsicInfo atomic(IntrinsicId id, AtomicKind kind) {
  std::string op = atomic_kind_name(kind);
  IntrinsicInfo info = entry(id, "atom_" + op, IntrinsicFamily::kAtomic);
  info.atomic = kind;
  info.any_vendor = true;
  std::vector<DataType> dtypes = {
      kF32, DataType::f64(), kF16, kBF16, DataType::i32(), DataType::u32(), DataType::i64()};
  info.operands = {{"dst", OperandKind::kMemory, true, dtypes, 0, 1, Fragment()},
                   {"value", OperandKind::kNumber, false, {}, 0, 0, Fragment()}};
  std::string fn = kind == AtomicKind::kAdd   ? "atomicAdd"
                   : kind == AtomicKind::kMax ? "atomicMax"
                                              : "atomicMin";
  info.cuda = fn;
  info.hip = fn;
  std::string update = kind == AtomicKind::kAdd ? "dst + value" : op + "(dst, value)";
  info.description = "dst = " + update +
                     " per thread, atomically: the active lanes update dst one after another (" +
                     fn + "; see atomic_function for the element types that need a helper)";
  return info;
}

std::vector<IntrinsicInfo> build_table() {
  std::vector<IntrinsicInfo> t;
  t.push_back(mma(IntrinsicId::kMmaM16N8K16F16, kF16));
  t.push_back(mma(IntrinsicId::kMmaM16N8K16BF16, kBF16));
  t.push_back(cp_async(IntrinsicId::kCpAsync4, 4));
  t.push_back(cp_async(IntrinsicId::kCpAsync8, 8));
  t.push_back(cp_async(IntrinsicId::kCpAsync16, 16));
  IntrinsicInfo commit = entry(IntrinsicId::kCpAsyncCommitGroup, "cp_async_commit_group",
                               IntrinsicFamily::kCommitGroup);
  commit.cuda = "cp.async.commit_group";
  commit.description = "closes the thread's current group of cp.async copies (PTX ISA)";
  t.push_back(commit);
  IntrinsicInfo wait =
      entry(IntrinsicId::kCpAsyncWaitGroup, "cp_async_wait_group", IntrinsicFamily::kWaitGroup);
  wait.operands = {{"n", OperandKind::kImmediate, false, {}, 0, 0, Fragment()}};
  wait.cuda = "cp.async.wait_group";
  wait.description =
      "waits until at most n of the thread's committed cp.async groups are "
      "pending; the others land now (PTX ISA)";
  t.push_back(wait);
  t.push_back(mfma(IntrinsicId::kMfma16x16x16F16, 16, kF16));
  t.push_back(mfma(IntrinsicId::kMfma16x16x16BF16, 16, kBF16));
  t.push_back(mfma(IntrinsicId::kMfma32x32x8F16, 32, kF16));
  t.push_back(mfma(IntrinsicId::kMfma32x32x8BF16, 32, kBF16));
  t.push_back(atomic(IntrinsicId::kAtomAdd, AtomicKind::kAdd));
  t.push_back(atomic(IntrinsicId::kAtomMax, AtomicKind::kMax));
  t.push_back(atomic(IntrinsicId::kAtomMin, AtomicKind::kMin));
  for (const InstructionFamily* family : instruction_families()) {
    for (IntrinsicInfo info : family->entries()) {
      info.home = family;
      t.push_back(std::move(info));
    }
  }
  std::stable_sort(t.begin(), t.end(),
                   [](const IntrinsicInfo& a, const IntrinsicInfo& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.size(); ++i) {
    internal_check(static_cast<size_t>(t[i].id) == i,
                   "intrinsic table: an IntrinsicId without an entry, or with two");
  }
  return t;
}

std::string arg_to_string(const IntrinsicArg& a) {
  if (a.buffer.defined()) return to_string(BufferLoadNode::make(a.buffer, a.indices));
  return to_string(a.value);
}

bool scope_fits(OperandKind kind, Scope scope) {
  switch (kind) {
    case OperandKind::kRegisters:
      return scope == Scope::kLocal || scope == Scope::kFragment;
    case OperandKind::kShared:
      return scope == Scope::kShared || scope == Scope::kSharedDyn;
    case OperandKind::kGlobal:
      return scope == Scope::kGlobal;
    case OperandKind::kMemory:
      return scope == Scope::kGlobal || scope == Scope::kShared || scope == Scope::kSharedDyn;
    default:
      return false;
  }
}

const char* kind_words(OperandKind kind) {
  switch (kind) {
    case OperandKind::kRegisters:
      return "an element of a local (register) buffer";
    case OperandKind::kShared:
      return "an element of a shared buffer";
    case OperandKind::kGlobal:
      return "an element of a global tensor";
    case OperandKind::kMemory:
      return "an element of a global or shared buffer";
    case OperandKind::kValue:
      return "an integer value";
    case OperandKind::kNumber:
      return "a number";
    case OperandKind::kImmediate:
      return "an integer constant";
  }
  return "?";
}

/// "float32, float16 or int32".
std::string dtype_list(const std::vector<DataType>& dtypes) {
  std::string s;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == dtypes.size() ? " or " : ", ") + dtypes[i].name();
  }
  return s;
}

}  // namespace

bool is_element_operand(OperandKind kind) {
  return kind == OperandKind::kRegisters || kind == OperandKind::kShared ||
         kind == OperandKind::kGlobal || kind == OperandKind::kMemory;
}

const std::vector<IntrinsicInfo>& intrinsic_table() {
  static const std::vector<IntrinsicInfo> table = build_table();
  return table;
}

const IntrinsicInfo& intrinsic_info(IntrinsicId id) {
  return intrinsic_table()[static_cast<size_t>(id)];
}

std::optional<IntrinsicId> find_intrinsic(std::string_view name) {
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (info.name == name) return info.id;
  }
  return std::nullopt;
}

std::optional<IntrinsicId> find_matrix_intrinsic(bool nvidia, int m, int n, int k, DataType in) {
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (info.family == IntrinsicFamily::kMma && info.nvidia == nvidia && info.m == m &&
        info.n == n && info.k == k && info.operands[1].dtypes[0] == in) {
      return info.id;
    }
  }
  return std::nullopt;
}

Stmt IntrinsicCallNode::make(IntrinsicId intrinsic, std::vector<IntrinsicArg> args, SourceLoc loc) {
  const IntrinsicInfo& info = intrinsic_info(intrinsic);
  std::string where = "T." + info.name + (loc.known() ? " at " + loc.str() : "");
  if (args.size() != info.operands.size()) {
    std::string names;
    for (const IntrinsicOperand& o : info.operands) names += (names.empty() ? "" : ", ") + o.name;
    user_error(where + " takes " + std::to_string(info.operands.size()) + " argument(s) (" + names +
               "), got " + std::to_string(args.size()));
  }
  DataType address_dtype;  // cp.async: dst and src must agree
  for (size_t i = 0; i < args.size(); ++i) {
    const IntrinsicOperand& o = info.operands[i];
    IntrinsicArg& a = args[i];
    std::string what = where + ", operand " + o.name;
    bool is_access = is_element_operand(o.kind);
    if (is_access != a.buffer.defined()) {
      user_error(what + " must be " + kind_words(o.kind) + ", got " + arg_to_string(a));
    }
    if (!is_access) {
      internal_check(a.value.defined(), "intrinsic argument without a value");
      if (o.kind == OperandKind::kNumber) {
        internal_check(i > 0 && is_element_operand(info.operands[0].kind),
                       "a number operand converts to operand 0, which must be an element");
        a.value = cast(args[0].buffer->dtype, a.value);
        continue;
      }
      if (!a.value.dtype().is_integral()) {
        user_error(what + " must be an integer, got " + to_string(a.value) + " of type " +
                   a.value.dtype().name());
      }
      if (o.kind == OperandKind::kImmediate && !as_const_int(a.value)) {
        user_error(what + " must be a constant, got " + to_string(a.value) +
                   "; write the number itself");
      }
      continue;
    }
    check_indices(a.buffer, a.indices, what.c_str());
    const BufferNode& b = *a.buffer;
    if (!scope_fits(o.kind, b.scope)) {
      user_error(what + " must be " + kind_words(o.kind) + ", but '" + b.name + "' is a " +
                 scope_name(b.scope) + " buffer");
    }
    DataType t = b.dtype;
    bool ok = o.dtypes.empty() ? (o.bits == 0 || t.storage_bits() * t.lanes == o.bits)
                               : std::find(o.dtypes.begin(), o.dtypes.end(), t) != o.dtypes.end();
    if (!ok) {
      std::string want =
          o.dtypes.empty() ? std::to_string(o.bits) + "-bit elements" : dtype_list(o.dtypes);
      user_error(what + " needs " + want + ", but '" + b.name + "' holds " + t.name());
    }
    if (info.family == IntrinsicFamily::kCpAsync) {
      if (i == 1 && t != address_dtype) {
        user_error(where + ": dst '" + args[0].buffer->name + "' is " + address_dtype.name() +
                   " but src '" + b.name + "' is " + t.name() +
                   "; cp.async copies bytes, give both the same element type");
      }
      address_dtype = t;
      int64_t bits = int64_t{info.bytes} * 8;
      if (t.storage_bits() * t.lanes > bits || bits % (t.storage_bits() * t.lanes) != 0) {
        user_error(where + ": " + std::to_string(info.bytes) + " bytes is not a whole number of " +
                   t.name() + " elements");
      }
    }
  }
  if (info.home) info.home->check_call(info, args, where);
  if (info.family == IntrinsicFamily::kWaitGroup && *as_const_int(args[0].value) < 0) {
    user_error(where + ": n = " + to_string(args[0].value) +
               " is negative; wait for n >= 0 "
               "pending groups (0 waits for all)");
  }
  return Stmt(
      std::make_shared<const IntrinsicCallNode>(intrinsic, std::move(args), std::move(loc)));
}

IntrinsicId atomic_intrinsic(AtomicKind kind) {
  switch (kind) {
    case AtomicKind::kAdd:
      return IntrinsicId::kAtomAdd;
    case AtomicKind::kMax:
      return IntrinsicId::kAtomMax;
    case AtomicKind::kMin:
      return IntrinsicId::kAtomMin;
  }
  internal_error("unknown atomic kind");
}

std::string atomic_function(IntrinsicId id, DataType dtype, bool hip) {
  const IntrinsicInfo& info = intrinsic_info(id);
  internal_check(info.family == IntrinsicFamily::kAtomic, "atomic_function of a non-atomic");
  const IntrinsicOperand& dst = info.operands[0];
  internal_check(std::find(dst.dtypes.begin(), dst.dtypes.end(), dtype) != dst.dtypes.end(),
                 "atomic_function of an element type the instruction does not take");
  const bool add = info.atomic == AtomicKind::kAdd;
  auto any_of = [&](std::initializer_list<DataType> ts) {
    return std::find(ts.begin(), ts.end(), dtype) != ts.end();
  };
  const DataType f64 = DataType::f64(), i32 = DataType::i32(), u32 = DataType::u32(),
                 i64 = DataType::i64();
  bool native = false;
  if (add) {
    // CUDA: float, double, int, unsigned, __half (sm_70), __nv_bfloat16 (sm_80); neither runtime
    // has a signed 64-bit atomicAdd.
    native = hip ? any_of({kF32, f64, i32, u32}) : any_of({kF32, f64, kF16, kBF16, i32, u32});
  } else {
    // CUDA: int, unsigned, long long; HIP: int, unsigned, float, double.
    native = hip ? any_of({i32, u32, kF32, f64}) : any_of({i32, u32, i64});
  }
  if (native) return hip ? info.hip : info.cuda;
  return std::string("tessel_atomic_") + atomic_kind_name(info.atomic);
}

std::string intrinsic_call_to_string(const IntrinsicCallNode& call) {
  const IntrinsicInfo& info = intrinsic_info(call.intrinsic);
  std::string s = "T." + info.name + "(";
  for (size_t i = 0; i < call.args.size(); ++i) s += (i ? ", " : "") + arg_to_string(call.args[i]);
  return s + ")";
}

}  // namespace tessel
