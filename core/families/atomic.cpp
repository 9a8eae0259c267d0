// The atomics family: atom.{add,max,min} on one global or shared element per thread (CUDA
// atomicAdd/Max/Min, HIP the same names). Element types: those some CUDA or HIP overload or a
// compare-and-swap loop on 16/32/64-bit words covers (see atomic_function). Execution: each
// lane's update is rounded to dst's type (integers wrap), lanes in lane order.
#include <algorithm>
#include <bit>
#include <cmath>
#include <initializer_list>

#include "core/error.h"
#include "core/families/family_util.h"
#include "core/op_atomic.h"

namespace tessel {

namespace {

IntrinsicInfo entry(IntrinsicId id, AtomicKind kind) {
  std::string op = atomic_kind_name(kind);
  IntrinsicInfo info;
  info.id = id;
  info.name = "atom_" + op;
  info.family = IntrinsicFamily::kAtomic;
  info.atomic = kind;
  info.any_vendor = true;
  std::vector<DataType> dtypes = {DataType::f32(),  DataType::f64(), DataType::f16(),
                                  DataType::bf16(), DataType::i32(), DataType::u32(),
                                  DataType::i64()};
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

/// dst (op) value for one lane, as a cell of dst's kind (double bits for floats, int64 else).
/// `value` is already of dst's type (IntrinsicCallNode::make converts it).
uint64_t update(AtomicKind kind, DataType dtype, uint64_t old, int64_t value) {
  if (dtype.is_float()) {
    double a = std::bit_cast<double>(old), b = std::bit_cast<double>(value);
    double r = kind == AtomicKind::kAdd   ? round_to(dtype, a + b)
               : kind == AtomicKind::kMax ? std::fmax(a, b)
                                          : std::fmin(a, b);
    return std::bit_cast<uint64_t>(r);
  }
  int64_t a = static_cast<int64_t>(old);
  int64_t r = kind == AtomicKind::kAdd
                  ? wrap_int(dtype, static_cast<int64_t>(static_cast<uint64_t>(a) +
                                                         static_cast<uint64_t>(value)))
              : kind == AtomicKind::kMax ? std::max(a, value)
                                         : std::min(a, value);
  return static_cast<uint64_t>(r);
}

class AtomicFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "atomics"; }

  std::vector<IntrinsicInfo> entries() const override {
    return {entry(IntrinsicId::kAtomAdd, AtomicKind::kAdd),
            entry(IntrinsicId::kAtomMax, AtomicKind::kMax),
            entry(IntrinsicId::kAtomMin, AtomicKind::kMin)};
  }

  void check_call(const IntrinsicInfo&, const std::vector<IntrinsicArg>&,
                  const std::string&) const override {}  // the operand checks say it all

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    // The lanes of an atomic on shared memory serialise: no bank-conflict question, and one
    // element per lane is aligned by its type.
    return std::nullopt;
  }

  std::string helper(Language, const IntrinsicInfo&) const override {
    return "";  // the runtime's function, or codegen's compare-and-swap helpers ("atomics")
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    std::string fn = atomic_function(info.id, text.dst_type, text.lang == Language::kHip);
    if (fn.rfind("tessel_", 0) == 0) used.insert("atomics");
    return fn + "(" + text.args[0] + ", static_cast<" + text.c_type(text.dst_type) + ">(" +
           text.args[1] + "));";
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const uint64_t mask = exec.mask();
    const DataType dtype = exec.dtype(0);
    std::array<int64_t, 64> value = exec.values(1, mask);
    OperandRequest req{0, LaneAccess::kAtomic, mask, 1};
    OperandLanes r = exec.resolve(req);
    if (exec.is_global(0)) {
      std::unique_lock<std::mutex> lock = exec.lock_atomics();
      for (uint64_t m = r.ok; m; m &= m - 1) {
        int l = std::countr_zero(m);
        uint64_t old = exec.global_cell(0, r.flat[l]);
        exec.set_global_cell(0, r.flat[l], update(info.atomic, dtype, old, value[l]));
      }
    } else {
      for (uint64_t m = r.ok; m; m &= m - 1) {
        int l = std::countr_zero(m);
        uint64_t& c = exec.cell(0, l, r.flat[l]);
        c = update(info.atomic, dtype, c, value[l]);
      }
    }
    exec.observe(req, r);
  }
};

}  // namespace

const InstructionFamily& atomic_family() {
  static const AtomicFamily family;
  return family;
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
  const DataType f32 = DataType::f32(), f16 = DataType::f16(), bf16 = DataType::bf16(),
                 f64 = DataType::f64(), i32 = DataType::i32(), u32 = DataType::u32(),
                 i64 = DataType::i64();
  bool native = false;
  if (add) {
    // CUDA: float, double, int, unsigned, __half (sm_70), __nv_bfloat16 (sm_80); neither runtime
    // has a signed 64-bit atomicAdd.
    native = hip ? any_of({f32, f64, i32, u32}) : any_of({f32, f64, f16, bf16, i32, u32});
  } else {
    // CUDA: int, unsigned, long long; HIP: int, unsigned, float, double.
    native = hip ? any_of({i32, u32, f32, f64}) : any_of({i32, u32, i64});
  }
  if (native) return hip ? info.hip : info.cuda;
  return std::string("tessel_atomic_") + atomic_kind_name(info.atomic);
}

}  // namespace tessel
