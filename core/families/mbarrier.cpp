// The mbarrier family (PTX ISA 8.x, "mbarrier"; sm_90): shared-memory barriers with phases.
// mbarrier.init sets the arrivals each phase expects; mbarrier.arrive counts one;
// mbarrier.expect_tx adds bytes of asynchronous transactions (TMA) the current phase also waits
// for; a phase completes when its pending arrivals reach zero and all expected bytes have
// landed, and the phase bit flips. mbarrier.try_wait.parity P succeeds once the phase of parity
// P has completed (the current phase's parity differs from P). Also fence.proxy.async (generic
// proxy writes before async proxy reads) and setmaxnreg (warpgroup register reallocation).
#include <algorithm>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

IntrinsicOperand barrier_operand() {
  return {"bar", OperandKind::kShared, true, {DataType::i64()}, 0, 1, Fragment()};
}
IntrinsicOperand value_operand(const char* name) {
  return {name, OperandKind::kValue, false, {}, 0, 0, Fragment()};
}

IntrinsicInfo entry(IntrinsicId id, std::string name, IntrinsicFamily kind, std::string cuda,
                    std::string description) {
  IntrinsicInfo info;
  info.id = id;
  info.name = std::move(name);
  info.family = kind;
  info.sync = true;
  info.cuda = std::move(cuda);
  info.description = std::move(description);
  return info;
}

class MbarrierFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "mbarrier"; }

  std::vector<IntrinsicInfo> entries() const override {
    IntrinsicInfo init =
        entry(IntrinsicId::kMbarrierInit, "mbarrier_init", IntrinsicFamily::kMbarrier,
              "mbarrier.init.shared::cta.b64",
              "initialises a barrier: each phase completes after `count` arrivals (PTX ISA)");
    init.operands = {barrier_operand(), value_operand("count")};
    IntrinsicInfo arrive =
        entry(IntrinsicId::kMbarrierArrive, "mbarrier_arrive", IntrinsicFamily::kMbarrier,
              "mbarrier.arrive.shared::cta.b64",
              "one arrival of the thread on the barrier's current phase (PTX ISA)");
    arrive.operands = {barrier_operand()};
    IntrinsicInfo expect =
        entry(IntrinsicId::kMbarrierExpectTx, "mbarrier_expect_tx", IntrinsicFamily::kMbarrier,
              "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
              "the current phase also waits for `tx` more bytes of asynchronous copies (PTX ISA)");
    expect.operands = {barrier_operand(), value_operand("tx")};
    IntrinsicInfo arrive_tx =
        entry(IntrinsicId::kMbarrierArriveExpectTx, "mbarrier_arrive_expect_tx",
              IntrinsicFamily::kMbarrier, "mbarrier.arrive.expect_tx.shared::cta.b64",
              "expect_tx of `tx` bytes, then one arrival, as one instruction (PTX ISA)");
    arrive_tx.operands = {barrier_operand(), value_operand("tx")};
    IntrinsicInfo wait = entry(
        IntrinsicId::kMbarrierWaitParity, "mbarrier_wait_parity", IntrinsicFamily::kMbarrierWait,
        "mbarrier.try_wait.parity.shared::cta.b64",
        "waits until the barrier's phase of parity `parity` has completed (PTX ISA try_wait)");
    wait.operands = {barrier_operand(), value_operand("parity")};
    wait.blocking = true;
    IntrinsicInfo fence =
        entry(IntrinsicId::kFenceProxyAsync, "fence_proxy_async", IntrinsicFamily::kFence,
              "fence.proxy.async.shared::cta",
              "orders the thread's shared-memory writes before later async-proxy reads "
              "(TMA stores, wgmma) (PTX ISA membar/fence)");
    IntrinsicInfo nreg =
        entry(IntrinsicId::kSetMaxNreg, "set_max_nreg", IntrinsicFamily::kRegAlloc,
              "setmaxnreg.sync.aligned.u32",
              "sets the registers per thread of the executing warpgroup to n, raising (inc = 1) "
              "or lowering (inc = 0) it (PTX ISA setmaxnreg)");
    nreg.operands = {{"n", OperandKind::kImmediate, false, {}, 0, 0, Fragment()},
                     {"inc", OperandKind::kImmediate, false, {}, 0, 0, Fragment()}};
    nreg.warp_size = 128;
    return {init, arrive, expect, arrive_tx, wait, fence, nreg};
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    if (info.family != IntrinsicFamily::kRegAlloc) return;
    // PTX ISA setmaxnreg: the count is in [24, 256] and a multiple of 8.
    int64_t n = *as_const_int(args[0].value);
    int64_t inc = *as_const_int(args[1].value);
    if (n < 24 || n > 256 || n % 8 != 0) {
      user_error(where + ": n = " + std::to_string(n) +
                 " registers per thread; setmaxnreg takes a multiple of 8 from 24 to 256");
    }
    if (inc != 0 && inc != 1) {
      user_error(where + ": inc = " + std::to_string(inc) +
                 "; it is 1 (raise the count, setmaxnreg.inc) or 0 (lower it, setmaxnreg.dec)");
    }
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    // A barrier is one 8-byte word updated by one thread at a time: no bank or alignment
    // question beyond the buffer's own 8-byte alignment.
    return std::nullopt;
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    const std::string fn = "tessel_" + info.name;
    const char* addr = "  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n";
    std::ostringstream o;
    switch (info.id) {
      case IntrinsicId::kMbarrierInit:
        o << "__device__ __forceinline__ void " << fn << "(void* bar, int count) {\n"
          << addr << "  asm volatile(\"" << info.cuda
          << " [%0], %1;\\n\" :: \"r\"(addr), \"r\"(count) : \"memory\");\n}\n";
        break;
      case IntrinsicId::kMbarrierArrive:
        o << "__device__ __forceinline__ void " << fn << "(void* bar) {\n"
          << addr << "  asm volatile(\"" << info.cuda
          << " _, [%0];\\n\" :: \"r\"(addr) : \"memory\");\n}\n";
        break;
      case IntrinsicId::kMbarrierExpectTx:
        o << "__device__ __forceinline__ void " << fn << "(void* bar, int tx) {\n"
          << addr << "  asm volatile(\"" << info.cuda
          << " [%0], %1;\\n\" :: \"r\"(addr), \"r\"(tx) : \"memory\");\n}\n";
        break;
      case IntrinsicId::kMbarrierArriveExpectTx:
        o << "__device__ __forceinline__ void " << fn << "(void* bar, int tx) {\n"
          << addr << "  asm volatile(\"" << info.cuda
          << " _, [%0], %1;\\n\" :: \"r\"(addr), \"r\"(tx) : \"memory\");\n}\n";
        break;
      case IntrinsicId::kMbarrierWaitParity:
        // try_wait may give up after a time limit; the loop retries until the phase completed.
        o << "__device__ __forceinline__ void " << fn << "(void* bar, int parity) {\n"
          << addr << "  asm volatile(\n"
          << "      \"{\\n .reg .pred done;\\n\"\n"
          << "      \"WAIT_%=:\\n\"\n"
          << "      \" " << info.cuda << " done, [%0], %1;\\n\"\n"
          << "      \" @!done bra WAIT_%=;\\n}\\n\" :: \"r\"(addr), \"r\"(parity) : "
             "\"memory\");\n}\n";
        break;
      case IntrinsicId::kFenceProxyAsync:
        o << "__device__ __forceinline__ void " << fn << "() { asm volatile(\"" << info.cuda
          << ";\\n\" ::: \"memory\"); }\n";
        break;
      case IntrinsicId::kSetMaxNreg:
        o << "template <int N, int INC>\n__device__ __forceinline__ void " << fn << "() {\n"
          << "  if constexpr (INC) asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\\n\" :: "
             "\"n\"(N));\n"
          << "  else asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\\n\" :: \"n\"(N));\n}\n";
        break;
      default:
        internal_error("mbarrier family entry of another kind");
    }
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    if (info.id == IntrinsicId::kSetMaxNreg) {
      used.insert(info.name);
      return "tessel_" + info.name + "<" + text.args[0] + ", " + text.args[1] + ">();";
    }
    return helper_call(info, text.args, used);
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const uint64_t mask = exec.mask();
    if (info.family == IntrinsicFamily::kFence) {
      for (uint64_t m = mask; m; m &= m - 1) exec.fence_proxy_async(std::countr_zero(m));
      return;
    }
    if (info.family == IntrinsicFamily::kRegAlloc) {
      // Every thread of the warpgroup executes it (.sync.aligned); the simulator has no register
      // file limit to change, so the warp's part is only checked to be whole.
      exec.require_full_warp();
      return;
    }
    std::array<int64_t, 64> value{};
    if (info.operands.size() > 1) value = exec.values(1, mask);
    OperandRequest req{0, LaneAccess::kAtomic, mask, 1, nullptr, false, 8};
    OperandLanes bar = exec.resolve(req);
    if (info.family == IntrinsicFamily::kMbarrierWait) {
      // Nothing is written: the models see no access (a wait may run many times).
      for (uint64_t m = bar.ok; m; m &= m - 1) {
        int l = std::countr_zero(m);
        if (!exec.mbarrier_try_wait(l, 0, bar.flat[l], value[l] & 1)) {
          exec.block(l, 0, bar.flat[l], value[l] & 1);
          return;
        }
      }
      return;
    }
    exec.observe(req, bar);
    for (uint64_t m = bar.ok; m; m &= m - 1) {
      int l = std::countr_zero(m);
      switch (info.id) {
        case IntrinsicId::kMbarrierInit:
          exec.mbarrier_init(l, 0, bar.flat[l], value[l]);
          break;
        case IntrinsicId::kMbarrierArrive:
          exec.mbarrier_arrive(l, 0, bar.flat[l], 0, true);
          break;
        case IntrinsicId::kMbarrierExpectTx:
          exec.mbarrier_arrive(l, 0, bar.flat[l], value[l], false);
          break;
        case IntrinsicId::kMbarrierArriveExpectTx:
          exec.mbarrier_arrive(l, 0, bar.flat[l], value[l], true);
          break;
        default:
          internal_error("mbarrier family entry of another kind");
      }
    }
  }
};

}  // namespace

const InstructionFamily& mbarrier_family() {
  static const MbarrierFamily family;
  return family;
}

}  // namespace tessel
