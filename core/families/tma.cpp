// The TMA family (PTX ISA 8.x, "cp.async.bulk.tensor"; sm_90): one thread copies a box of a
// 1- to 5-d global tensor into shared memory through the Tensor Memory Accelerator. Box
// elements past the tensor's edges (either side) are filled with zeros; the copy completes its
// bytes — the whole box, fill included — on an mbarrier (mbarrier::complete_tx::bytes), so a
// reader waits for that barrier's phase. The box lands row-major in the destination's trailing
// dimensions, without swizzle (CU_TENSOR_MAP_SWIZZLE_NONE).
#include <algorithm>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/families/family_util.h"

namespace tessel {

namespace {

constexpr IntrinsicId kLoads[] = {IntrinsicId::kTmaLoad1D, IntrinsicId::kTmaLoad2D,
                                  IntrinsicId::kTmaLoad3D, IntrinsicId::kTmaLoad4D,
                                  IntrinsicId::kTmaLoad5D};

IntrinsicInfo load(int rank) {
  IntrinsicInfo info;
  info.id = kLoads[rank - 1];
  info.name = "tma_load_" + std::to_string(rank) + "d";
  info.family = IntrinsicFamily::kTmaLoad;
  info.box_rank = rank;
  info.operands = {{"dst", OperandKind::kShared, true, {}, 0, 0, Fragment()},
                   {"src", OperandKind::kGlobal, false, {}, 0, 0, Fragment()},
                   {"bar", OperandKind::kShared, true, {DataType::i64()}, 0, 1, Fragment()}};
  for (int d = 0; d < rank; ++d) {
    info.operands.push_back(
        {"box" + std::to_string(d), OperandKind::kImmediate, false, {}, 0, 0, Fragment()});
  }
  info.cuda = "cp.async.bulk.tensor." + std::to_string(rank) +
              "d.shared::cluster.global.mbarrier::complete_tx::bytes";
  info.description = "copies a box of " + std::to_string(rank) +
                     "-d global tensor into shared memory (zeros past the edges) and completes "
                     "its bytes on an mbarrier (PTX ISA cp.async.bulk.tensor)";
  return info;
}

class TmaFamily final : public InstructionFamily {
 public:
  std::string_view name() const override { return "TMA"; }

  std::vector<IntrinsicInfo> entries() const override {
    std::vector<IntrinsicInfo> out;
    for (int r = 1; r <= 5; ++r) out.push_back(load(r));
    return out;
  }

  void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                  const std::string& where) const override {
    const BufferNode& dst = *args[0].buffer;
    const BufferNode& src = *args[1].buffer;
    const int rank = info.box_rank;
    if (src.dtype != dst.dtype) {
      user_error(where + ": dst '" + dst.name + "' is " + dst.dtype.name() + " but src '" +
                 src.name + "' is " + src.dtype.name() +
                 "; TMA copies bytes, give both the same "
                 "element type");
    }
    if (static_cast<int>(src.shape.size()) < rank || static_cast<int>(dst.shape.size()) < rank) {
      user_error(where + ": a " + std::to_string(rank) + "-d box needs " + std::to_string(rank) +
                 " dimensions in both '" + src.name + "' and '" + dst.name + "'");
    }
    int64_t elements = 1;
    for (int d = 0; d < rank; ++d) {
      int64_t b = *as_const_int(args[3 + d].value);
      // PTX ISA / cuTensorMapEncodeTiled: every box extent is 1 to 256.
      if (b < 1 || b > 256) {
        user_error(where + ": box extent " + std::to_string(b) + " in dimension " +
                   std::to_string(d) + "; a TMA box extent is 1 to 256");
      }
      elements *= b;
      std::optional<int64_t> room =
          as_const_int(dst.shape[dst.shape.size() - static_cast<size_t>(rank - d)]);
      if (room && b > *room) {
        user_error(where + ": box extent " + std::to_string(b) + " in dimension " +
                   std::to_string(d) + " does not fit '" + dst.name + "' (extent " +
                   std::to_string(*room) + ")");
      }
    }
    const int64_t inner_bytes = dst.dtype.storage_bytes(*as_const_int(args[3 + rank - 1].value));
    if (inner_bytes % 16 != 0) {
      user_error(where + ": the box's innermost extent is " + std::to_string(inner_bytes) +
                 " bytes; TMA needs a multiple of 16 bytes (cuTensorMapEncodeTiled)");
    }
    (void)elements;
  }

  std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo&, size_t) const override {
    // The async proxy writes the box in whole shared-memory lines: no per-lane bank question.
    // The threads that later read the tile make ordinary loads, which the bank proofs see.
    return std::nullopt;
  }

  std::string helper(Language lang, const IntrinsicInfo& info) const override {
    if (lang != Language::kCuda) no_spelling(info, lang);
    const int rank = info.box_rank;
    std::ostringstream o;
    o << "__device__ __forceinline__ void tessel_" << info.name
      << "(void* dst, const CUtensorMap* map, void* bar";
    for (int d = 0; d < rank; ++d) o << ", int c" << d;
    o << ") {\n"
      << "  unsigned dst_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
      << "  unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
      << "  asm volatile(\"" << info.cuda << " [%0], [%1, {";
    for (int d = 0; d < rank; ++d) o << (d ? ", " : "") << "%" << 3 + d;
    o << "}], [%2];\\n\"\n      :: \"r\"(dst_addr), \"l\"(map), \"r\"(bar_addr)";
    for (int d = 0; d < rank; ++d) o << ", \"r\"(c" << d << ")";
    o << " : \"memory\");\n}\n";
    return o.str();
  }

  std::string call(const IntrinsicInfo& info, const CallText& text,
                   std::set<std::string>& used) const override {
    // The tensor map of the source and the box origin, innermost coordinate first (PTX order).
    internal_check(text.indices.size() > 1 && !text.buffers[1].empty(),
                   "a TMA call printed without its source's indices");
    used.insert(info.name);
    std::vector<std::string> box(text.args.begin() + 3, text.args.end());
    std::string s = "tessel_" + info.name + "(" + text.args[0] + ", &" +
                    tensor_map_name(text.buffers[1], box) + ", " + text.args[2];
    const std::vector<std::string>& idx = text.indices[1];
    for (int d = 0; d < info.box_rank; ++d) s += ", " + idx[idx.size() - 1 - d];
    return s + ");";
  }

  void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const override {
    const uint64_t mask = exec.mask();
    const int rank = info.box_rank;
    std::vector<int64_t> box(rank);
    int64_t elements = 1;
    for (int d = 0; d < rank; ++d) elements *= box[d] = exec.immediate(3 + d);
    OperandRequest bar_req{2, LaneAccess::kAtomic, mask, 1, nullptr, false, 8};
    OperandLanes bar = exec.resolve(bar_req);
    exec.observe(bar_req, bar);
    const std::vector<int64_t> gshape = exec.shape(1);
    const std::vector<int64_t> dshape = exec.shape(0);
    for (uint64_t m = bar.ok; m; m &= m - 1) {
      const int l = std::countr_zero(m);
      const std::vector<int64_t> src = exec.lane_indices(1, l);
      const std::vector<int64_t> dst = exec.lane_indices(0, l);
      std::vector<int64_t> flats;
      std::vector<uint64_t> cells;
      std::vector<int64_t> at(rank, 0);
      for (int64_t e = 0; e < elements; ++e) {
        for (int64_t r = e, d = rank - 1; d >= 0; --d) {
          at[d] = r % box[d];
          r /= box[d];
        }
        // Global element: the origin's leading dimensions, the box on the trailing `rank`.
        bool inside = true;
        int64_t gflat = 0;
        for (size_t d = 0; d < gshape.size(); ++d) {
          int64_t i = src[d];
          if (d >= gshape.size() - rank) i += at[d - (gshape.size() - rank)];
          inside = inside && i >= 0 && i < gshape[d];
          gflat = gflat * gshape[d] + i;
        }
        int64_t dflat = 0;
        bool fits = true;
        for (size_t d = 0; d < dshape.size(); ++d) {
          int64_t i = dst[d];
          if (d >= dshape.size() - rank) i += at[d - (dshape.size() - rank)];
          fits = fits && i >= 0 && i < dshape[d];
          dflat = dflat * dshape[d] + i;
        }
        if (!fits) {
          user_error("TMA box element " + std::to_string(e) + " of a " + info.name +
                     " lands outside its shared destination (extents " +
                     std::to_string(dshape.back()) +
                     " in the last dimension); start the "
                     "destination where the whole box fits");
        }
        flats.push_back(dflat);
        cells.push_back(inside ? exec.global_cell(1, gflat) : 0);  // zero bits: 0 and +0.0
      }
      exec.count_lane_ops(elements);
      exec.tma_write(l, 0, flats, cells, 2, bar.flat[l]);
    }
  }
};

}  // namespace

std::string tensor_map_name(const std::string& tensor, const std::vector<std::string>& box) {
  std::string s = "tmap_" + tensor;
  for (size_t d = 0; d < box.size(); ++d) s += (d ? "x" : "_") + box[d];
  return s;
}

const InstructionFamily& tma_family() {
  static const TmaFamily family;
  return family;
}

}  // namespace tessel
