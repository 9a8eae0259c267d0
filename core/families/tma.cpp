// The TMA family (PTX ISA 8.x, "cp.async.bulk.tensor"; sm_90): one thread copies a box of a 1-
// to 5-d global tensor between global and shared memory through the Tensor Memory Accelerator.
// In shared memory the box is dense and row-major from the shared operand's element, its 16-byte
// chunks placed by the tensor map's swizzle mode (core/tma_map.h).
//   - loads (global -> shared): box elements past the tensor's edges (either side) are filled
//     with zeros; the copy completes its bytes — the whole box, fill included — on an mbarrier
//     (mbarrier::complete_tx::bytes), so a reader waits for that barrier's phase.
//   - stores (shared -> global, bulk_group completion): the copy reads the shared box until the
//     issuing thread's cp.async.bulk.wait_group retires its group (tma_store_arrive closes
//     the group, tma_store_wait n waits); box elements past the tensor's edges are not written.
#include <algorithm>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/families/family_util.h"
#include "core/tma_map.h"

namespace tessel {

namespace {

constexpr IntrinsicId kLoads[] = {IntrinsicId::kTmaLoad1D, IntrinsicId::kTmaLoad2D,
                                  IntrinsicId::kTmaLoad3D, IntrinsicId::kTmaLoad4D,
                                  IntrinsicId::kTmaLoad5D};
constexpr IntrinsicId kStores[] = {IntrinsicId::kTmaStore1D, IntrinsicId::kTmaStore2D,
                                   IntrinsicId::kTmaStore3D, IntrinsicId::kTmaStore4D,
                                   IntrinsicId::kTmaStore5D};

IntrinsicOperand immediate(std::string name) {
  return {std::move(name), OperandKind::kImmediate, false, {}, 0, 0, Fragment()};
}

void add_box(IntrinsicInfo& info, int rank) {
  info.box_rank = rank;
  info.box_first = static_cast<int>(info.operands.size());
  for (int d = 0; d < rank; ++d) info.operands.push_back(immediate("box" + std::to_string(d)));
  info.operands.push_back(immediate("swizzle"));
}

IntrinsicInfo load(int rank) {
  IntrinsicInfo info;
  info.id = kLoads[rank - 1];
  info.name = "tma_load_" + std::to_string(rank) + "d";
  info.family = IntrinsicFamily::kTmaLoad;
  info.operands = {{"dst", OperandKind::kShared, true, {}, 0, 0, Fragment()},
                   {"src", OperandKind::kGlobal, false, {}, 0, 0, Fragment()},
                   {"bar", OperandKind::kShared, true, {DataType::i64()}, 0, 1, Fragment()}};
  info.tma_shared = 0;
  info.tma_global = 1;
  add_box(info, rank);
  info.cuda = "cp.async.bulk.tensor." + std::to_string(rank) +
              "d.shared::cluster.global.mbarrier::complete_tx::bytes";
  info.description = "copies a box of " + std::to_string(rank) +
                     "-d global tensor into shared memory (zeros past the edges) and completes "
                     "its bytes on an mbarrier (PTX ISA cp.async.bulk.tensor)";
  return info;
}

IntrinsicInfo store(int rank) {
  IntrinsicInfo info;
  info.id = kStores[rank - 1];
  info.name = "tma_store_" + std::to_string(rank) + "d";
  info.family = IntrinsicFamily::kTmaStore;
  info.operands = {{"dst", OperandKind::kGlobal, true, {}, 0, 0, Fragment()},
                   {"src", OperandKind::kShared, false, {}, 0, 0, Fragment()}};
  info.tma_shared = 1;
  info.tma_global = 0;
  add_box(info, rank);
  info.cuda = "cp.async.bulk.tensor." + std::to_string(rank) + "d.global.shared::cta.bulk_group";
  info.description = "copies a box of shared memory into a " + std::to_string(rank) +
                     "-d global tensor (nothing past the edges), reading shared memory until "
                     "its bulk group is waited for (PTX ISA cp.async.bulk.tensor)";
  return info;
}

IntrinsicInfo group_op(IntrinsicId id, std::string name, IntrinsicFamily kind, std::string cuda,
                       std::string description) {
  IntrinsicInfo info;
  info.id = id;
  info.name = std::move(name);
  info.family = kind;
  info.cuda = std::move(cuda);
  info.description = std::move(description);
  return info;
}

/// The box of a call, outermost first.
std::vector<int64_t> box_of(const IntrinsicInfo& info, WarpIntrinsicExec& exec) {
  std::vector<int64_t> box(info.box_rank);
  for (int d = 0; d < info.box_rank; ++d) box[d] = exec.immediate(info.box_first + d);
  return box;
}

/// Row-major flat position of `idx` in `shape`, or -1 when it lies outside.
int64_t flat_in(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (idx[d] < 0 || idx[d] >= shape[d]) return -1;
    flat = flat * shape[d] + idx[d];
  }
  return flat;
}

/// One lane's box: per element (row-major over the box), its shared element (dense from the
/// shared operand's element, swizzled) and its global element (-1 past the tensor's edges).
struct LaneBox {
  std::vector<int64_t> shared, global;
};

LaneBox lane_box(const IntrinsicInfo& info, WarpIntrinsicExec& exec, int lane) {
  const std::vector<int64_t> box = box_of(info, exec);
  const int rank = info.box_rank;
  const int swizzle = static_cast<int>(exec.immediate(info.box_first + rank));
  const std::vector<int64_t> gshape = exec.shape(info.tma_global);
  const std::vector<int64_t> sshape = exec.shape(info.tma_shared);
  const std::vector<int64_t> origin = exec.lane_indices(info.tma_global, lane);
  const int64_t base = flat_in(exec.lane_indices(info.tma_shared, lane), sshape);
  int64_t size = 1, elements = 1;
  for (int64_t s : sshape) size *= s;
  for (int64_t b : box) elements *= b;
  const int64_t esize = exec.dtype(info.tma_shared).storage_bytes(1);
  if (base < 0 || base + elements > size) {
    user_error("the box of a " + info.name + " (" + std::to_string(elements) +
               " elements) does not fit its shared operand from element " + std::to_string(base) +
               " (" + std::to_string(size) +
               " elements); start the shared tile where the whole box fits");
  }
  LaneBox out;
  out.shared.reserve(elements);
  out.global.reserve(elements);
  std::vector<int64_t> at(gshape.size());
  for (int64_t e = 0; e < elements; ++e) {
    // Global element: the origin's leading dimensions, the box on the trailing `rank`.
    int64_t r = e;
    at = origin;
    for (int d = rank - 1; d >= 0; --d) {
      at[gshape.size() - rank + d] += r % box[d];
      r /= box[d];
    }
    out.global.push_back(flat_in(at, gshape));
    out.shared.push_back(tma_swizzle_byte((base + e) * esize, swizzle) / esize);
  }
  return out;
}

class TmaFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "TMA"; }

  std::vector<IntrinsicInfo> entries() const override {
    std::vector<IntrinsicInfo> out;
    for (int r = 1; r <= 5; ++r) out.push_back(load(r));
    for (int r = 1; r <= 5; ++r) out.push_back(store(r));
    out.push_back(group_op(IntrinsicId::kTmaStoreArrive, "tma_store_arrive",
                           IntrinsicFamily::kBulkCommit, "cp.async.bulk.commit_group",
                           "closes the thread's group of TMA stores (PTX ISA "
                           "cp.async.bulk.commit_group)"));
    IntrinsicInfo wait =
        group_op(IntrinsicId::kTmaStoreWait, "tma_store_wait", IntrinsicFamily::kBulkWait,
                 "cp.async.bulk.wait_group",
                 "waits until at most n of the thread's groups of TMA stores are in flight "
                 "(PTX ISA cp.async.bulk.wait_group)");
    wait.operands = {immediate("n")};
    out.push_back(wait);
    return out;
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    if (info.box_rank == 0) {
      if (info.family == IntrinsicFamily::kBulkWait) {
        int64_t n = *as_const_int(args[0].value);
        if (n < 0 || n > 63) {
          user_error(where + ": tma_store_wait(" + std::to_string(n) +
                     "): the groups left in flight are 0 to 63");
        }
      }
      return;
    }
    const BufferNode& shared = *args[info.tma_shared].buffer;
    const BufferNode& global = *args[info.tma_global].buffer;
    const int rank = info.box_rank;
    if (global.dtype != shared.dtype) {
      user_error(where + ": shared '" + shared.name + "' is " + shared.dtype.name() +
                 " but global '" + global.name + "' is " + global.dtype.name() +
                 "; TMA copies bytes, give both the same element type");
    }
    if (shared.dtype.storage_bits() < 8) {
      user_error(where + ": '" + shared.name + "' holds " + shared.dtype.name() +
                 ", packed two per byte; TMA copies whole-byte elements (copy the packed bytes "
                 "as uint8, or use T.copy)");
    }
    if (static_cast<int>(global.shape.size()) < rank) {
      user_error(where + ": a " + std::to_string(rank) + "-d box needs " + std::to_string(rank) +
                 " dimensions in '" + global.name + "'");
    }
    // A shared tile keeps its dimensions until flatten_buffers gives a laid-out one its storage
    // form (one dimension); the box's extents are checked against them while it has them.
    const bool shaped = static_cast<int>(shared.shape.size()) >= rank;
    for (int d = 0; d < rank; ++d) {
      int64_t b = *as_const_int(args[info.box_first + d].value);
      // PTX ISA / cuTensorMapEncodeTiled: every box extent is 1 to 256.
      if (b < 1 || b > 256) {
        user_error(where + ": box extent " + std::to_string(b) + " in dimension " +
                   std::to_string(d) + "; a TMA box extent is 1 to 256");
      }
      std::optional<int64_t> room =
          shaped ? as_const_int(shared.shape[shared.shape.size() - static_cast<size_t>(rank - d)])
                 : std::nullopt;
      if (room && b > *room) {
        user_error(where + ": box extent " + std::to_string(b) + " in dimension " +
                   std::to_string(d) + " does not fit '" + shared.name + "' (extent " +
                   std::to_string(*room) + ")");
      }
    }
    const int64_t inner_bytes =
        shared.dtype.storage_bytes(*as_const_int(args[info.box_first + rank - 1].value));
    if (inner_bytes % 16 != 0) {
      user_error(where + ": the box's innermost extent is " + std::to_string(inner_bytes) +
                 " bytes; TMA needs a multiple of 16 bytes (cuTensorMapEncodeTiled)");
    }
    const int64_t swizzle = *as_const_int(args[info.box_first + rank].value);
    if (!is_tma_swizzle(swizzle)) {
      user_error(where + ": swizzle " + std::to_string(swizzle) +
                 "; a TMA tensor map swizzles 0, 32, 64 or 128 bytes");
    }
    if (swizzle != 0 && inner_bytes > swizzle) {
      user_error(where + ": the box's innermost extent is " + std::to_string(inner_bytes) +
                 " bytes, more than its " + std::to_string(swizzle) +
                 "-byte swizzle span (cuTensorMapEncodeTiled); copy the tile in column panels "
                 "of at most " +
                 std::to_string(swizzle) + " bytes");
    }
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    // The async proxy moves the box in whole shared-memory lines: no per-lane bank question.
    // The threads that read or write the tile make ordinary accesses, which the proofs see.
    return std::nullopt;
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    std::ostringstream o;
    const std::string fn = "tessel_" + info.name;
    if (info.family == IntrinsicFamily::kBulkCommit) {
      o << "__device__ __forceinline__ void " << fn << "() { asm volatile(\"" << info.cuda
        << ";\\n\" ::: \"memory\"); }\n";
      return o.str();
    }
    if (info.family == IntrinsicFamily::kBulkWait) {
      o << "template <int N>\n__device__ __forceinline__ void " << fn << "() {\n"
        << "  asm volatile(\"" << info.cuda << " %0;\\n\" :: \"n\"(N) : \"memory\");\n}\n";
      return o.str();
    }
    const int rank = info.box_rank;
    const bool is_load = info.family == IntrinsicFamily::kTmaLoad;
    o << "__device__ __forceinline__ void " << fn
      << (is_load ? "(void* dst, const CUtensorMap* map, void* bar"
                  : "(const CUtensorMap* map, const void* src");
    for (int d = 0; d < rank; ++d) o << ", int c" << d;
    o << ") {\n";
    if (is_load) {
      o << "  unsigned dst_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
        << "  unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
        << "  asm volatile(\"" << info.cuda << " [%0], [%1, {";
      for (int d = 0; d < rank; ++d) o << (d ? ", " : "") << "%" << 3 + d;
      o << "}], [%2];\\n\"\n      :: \"r\"(dst_addr), \"l\"(map), \"r\"(bar_addr)";
    } else {
      o << "  unsigned src_addr = static_cast<unsigned>(__cvta_generic_to_shared(src));\n"
        << "  asm volatile(\"" << info.cuda << " [%0, {";
      for (int d = 0; d < rank; ++d) o << (d ? ", " : "") << "%" << 2 + d;
      o << "}], [%1];\\n\"\n      :: \"l\"(map), \"r\"(src_addr)";
    }
    for (int d = 0; d < rank; ++d) o << ", \"r\"(c" << d << ")";
    o << " : \"memory\");\n}\n";
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    used.insert(info.name);
    if (info.family == IntrinsicFamily::kBulkCommit) return "tessel_" + info.name + "();";
    if (info.family == IntrinsicFamily::kBulkWait) {
      return "tessel_" + info.name + "<" + text.args[0] + ">();";
    }
    // The tensor map of the global tensor and the box origin, innermost coordinate first (PTX).
    const size_t g = static_cast<size_t>(info.tma_global);
    internal_check(text.indices.size() > g && !text.buffers[g].empty(),
                   "a TMA call printed without its global operand's indices");
    const int rank = info.box_rank;
    std::vector<std::string> box(text.args.begin() + info.box_first,
                                 text.args.begin() + info.box_first + rank);
    const int swizzle = std::stoi(text.args[info.box_first + rank]);
    const std::string map = "&" + tensor_map_name(text.buffers[g], box, swizzle);
    std::string s = "tessel_" + info.name + "(";
    if (info.family == IntrinsicFamily::kTmaLoad) {
      s += text.args[info.tma_shared] + ", " + map + ", " + text.args[2];
    } else {
      s += map + ", " + text.args[info.tma_shared];
    }
    const std::vector<std::string>& idx = text.indices[g];
    for (int d = 0; d < rank; ++d) s += ", " + idx[idx.size() - 1 - d];
    return s + ");";
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const uint64_t mask = exec.mask();
    if (info.family == IntrinsicFamily::kBulkCommit) {
      for (uint64_t m = mask; m; m &= m - 1) exec.bulk_commit(std::countr_zero(m));
      return;
    }
    if (info.family == IntrinsicFamily::kBulkWait) {
      const int n = static_cast<int>(exec.immediate(0));
      for (uint64_t m = mask; m; m &= m - 1) exec.bulk_wait(std::countr_zero(m), n);
      return;
    }
    if (info.family == IntrinsicFamily::kTmaStore) {
      for (uint64_t m = mask; m; m &= m - 1) {
        const int l = std::countr_zero(m);
        LaneBox b = lane_box(info, exec, l);
        exec.count_lane_ops(static_cast<int64_t>(b.shared.size()));
        exec.tma_store(l, info.tma_shared, b.shared, info.tma_global, b.global);
      }
      return;
    }
    OperandRequest bar_req{2, LaneAccess::kAtomic, mask, 1, nullptr, false, 8};
    OperandLanes bar = exec.resolve(bar_req);
    exec.observe(bar_req, bar);
    for (uint64_t m = bar.ok; m; m &= m - 1) {
      const int l = std::countr_zero(m);
      LaneBox b = lane_box(info, exec, l);
      std::vector<uint64_t> cells;
      cells.reserve(b.global.size());
      for (int64_t g : b.global) {
        cells.push_back(g >= 0 ? exec.global_cell(info.tma_global, g) : 0);  // 0 and +0.0
      }
      exec.count_lane_ops(static_cast<int64_t>(cells.size()));
      exec.tma_write(l, info.tma_shared, b.shared, cells, 2, bar.flat[l]);
    }
  }
};

}  // namespace

std::string tensor_map_name(const std::string& tensor, const std::vector<std::string>& box,
                            int swizzle) {
  std::string s = "tmap_" + tensor;
  for (size_t d = 0; d < box.size(); ++d) s += (d ? "x" : "_") + box[d];
  if (swizzle != 0) s += "_sw" + std::to_string(swizzle);
  return s;
}

const InstructionFamily& tma_family() {
  static const TmaFamily family;
  return family;
}

}  // namespace tessel
