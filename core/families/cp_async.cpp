// The cp.async family (PTX ISA, "cp.async"): cp.async.{ca,cg}.shared.global [dst], [src], bytes,
// src_size copies 4, 8 or 16 bytes per thread from global to shared memory asynchronously (bytes
// past src_size are zero-filled); cp.async.commit_group closes the thread's open group and
// cp.async.wait_group n lands every committed group but the n newest.
#include <algorithm>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

IntrinsicInfo entry(IntrinsicId id, std::string name, IntrinsicFamily kind) {
  IntrinsicInfo info;
  info.id = id;
  info.name = std::move(name);
  info.family = kind;
  return info;
}

IntrinsicInfo copy(IntrinsicId id, int bytes) {
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

class CpAsyncFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "cp.async"; }

  std::vector<IntrinsicInfo> entries() const override {
    IntrinsicInfo commit = entry(IntrinsicId::kCpAsyncCommitGroup, "cp_async_commit_group",
                                 IntrinsicFamily::kCommitGroup);
    commit.cuda = "cp.async.commit_group";
    commit.description = "closes the thread's current group of cp.async copies (PTX ISA)";
    IntrinsicInfo wait =
        entry(IntrinsicId::kCpAsyncWaitGroup, "cp_async_wait_group", IntrinsicFamily::kWaitGroup);
    wait.operands = {{"n", OperandKind::kImmediate, false, {}, 0, 0, Fragment()}};
    wait.cuda = "cp.async.wait_group";
    wait.description =
        "waits until at most n of the thread's committed cp.async groups are "
        "pending; the others land now (PTX ISA)";
    return {copy(IntrinsicId::kCpAsync4, 4), copy(IntrinsicId::kCpAsync8, 8),
            copy(IntrinsicId::kCpAsync16, 16), commit, wait};
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    if (info.family == IntrinsicFamily::kWaitGroup) {
      if (*as_const_int(args[0].value) < 0) {
        user_error(where + ": n = " + to_string(args[0].value) +
                   " is negative; wait for n >= 0 "
                   "pending groups (0 waits for all)");
      }
      return;
    }
    if (info.family != IntrinsicFamily::kCpAsync) return;
    const BufferNode& dst = *args[0].buffer;
    const BufferNode& src = *args[1].buffer;
    const int64_t bits = int64_t{info.bytes} * 8;
    for (const BufferNode* b : {&dst, &src}) {
      if (b == &src && src.dtype != dst.dtype) {
        user_error(where + ": dst '" + dst.name + "' is " + dst.dtype.name() + " but src '" +
                   src.name + "' is " + src.dtype.name() +
                   "; cp.async copies bytes, give both the same element type");
      }
      const DataType t = b->dtype;
      if (t.storage_bits() * t.lanes > bits || bits % (t.storage_bits() * t.lanes) != 0) {
        user_error(where + ": " + std::to_string(info.bytes) + " bytes is not a whole number of " +
                   t.name() + " elements");
      }
    }
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo& info,
                                                   size_t operand) const override {
    if (info.family != IntrinsicFamily::kCpAsync || operand > 1) return std::nullopt;
    // Both addresses: multiples of the copy's size, or the instruction faults.
    return OperandMemoryAccess{info.bytes, 0,
                               false,      true,
                               info.bytes, info.name + (operand == 0 ? " destination" : " source")};
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    const std::string fn = "tessel_" + info.name;
    std::ostringstream o;
    switch (info.family) {
      case IntrinsicFamily::kCpAsync:
        o << "__device__ __forceinline__ void " << fn
          << "(void* dst, const void* src, int src_size) {\n"
          << "  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
          << "  asm volatile(\"" << info.cuda << " [%0], [%1], " << info.bytes
          << ", %2;\\n\" :: \"r\"(addr), \"l\"(src), \"r\"(src_size) : \"memory\");\n}\n";
        break;
      case IntrinsicFamily::kCommitGroup:
        o << "__device__ __forceinline__ void " << fn << "() { asm volatile(\"" << info.cuda
          << ";\\n\" ::: \"memory\"); }\n";
        break;
      case IntrinsicFamily::kWaitGroup:
        o << "template <int N>\n__device__ __forceinline__ void " << fn << "() { asm volatile(\""
          << info.cuda << " %0;\\n\" :: \"n\"(N) : \"memory\"); }\n";
        break;
      default:
        internal_error("cp.async family entry of another kind");
    }
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    if (info.family == IntrinsicFamily::kWaitGroup) {
      used.insert(info.name);
      return "tessel_" + info.name + "<" + text.args[0] + ">();";
    }
    return helper_call(info, text.args, used);
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const uint64_t mask = exec.mask();
    if (info.family == IntrinsicFamily::kCommitGroup) {
      for (uint64_t m = mask; m; m &= m - 1) exec.async_commit(std::countr_zero(m));
      return;
    }
    if (info.family == IntrinsicFamily::kWaitGroup) {
      int n = static_cast<int>(exec.immediate(0));
      for (uint64_t m = mask; m; m &= m - 1) exec.async_wait(std::countr_zero(m), n);
      return;
    }
    const DataType dtype = exec.dtype(0);
    const int elem_bits = dtype.storage_bits() * dtype.lanes;
    const int n = info.bytes * 8 / elem_bits;
    // src_size: the bytes actually read; the rest of the destination is zero-filled.
    std::array<uint8_t, 64> read_elems{};
    uint64_t read_lanes = 0;
    {
      std::array<int64_t, 64> size = exec.values(2, mask);
      for (uint64_t m = mask; m; m &= m - 1) {
        int l = std::countr_zero(m);
        int64_t bytes = std::clamp<int64_t>(size[l], 0, info.bytes);
        read_elems[l] = static_cast<uint8_t>(bytes * 8 / elem_bits);
        if (read_elems[l] > 0) read_lanes |= uint64_t{1} << l;
      }
    }
    OperandRequest src_req{1,     LaneAccess::kLoad, read_lanes, n, read_elems.data(),
                           false, info.bytes};
    OperandLanes src = exec.resolve(src_req);
    OperandRequest dst_req{0, LaneAccess::kAsyncWrite, mask, n, nullptr, false, info.bytes};
    OperandLanes dst = exec.resolve(dst_req);
    exec.observe(src_req, src);
    exec.observe(dst_req, dst);
    for (uint64_t m = dst.ok; m; m &= m - 1) {
      int l = std::countr_zero(m);
      std::vector<uint64_t> cells(static_cast<size_t>(n), 0);  // zero bits: 0 and +0.0
      if ((src.ok >> l) & 1) {
        for (int j = 0; j < read_elems[l]; ++j) cells[j] = exec.global_cell(1, src.flat[l] + j);
      }
      exec.async_issue(l, 0, dst.flat[l], std::move(cells));
    }
  }
};

}  // namespace

const InstructionFamily& cp_async_family() {
  static const CpAsyncFamily family;
  return family;
}

}  // namespace tessel
