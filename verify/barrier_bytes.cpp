// The transaction bytes of mbarriers (see barrier_bytes.h). A phase of an mbarrier completes when
// its arrivals are in and its transaction count is back to zero: `expect_tx` raises the count by
// the bytes announced, each TMA box that lands lowers it by the box's bytes (the whole box, the
// zero-filled part past a tensor's edge included: PTX ISA, cp.async.bulk.tensor). Announcing more
// than the boxes deliver never completes the phase (a deadlock); announcing less completes it
// while a box is still in flight (its readers race with it).
#include "verify/barrier_bytes.h"

#include <chrono>
#include <map>
#include <optional>

#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

bool is_expect(IntrinsicId id) {
  return id == IntrinsicId::kMbarrierExpectTx || id == IntrinsicId::kMbarrierArriveExpectTx;
}

/// The rank of a TMA load's box (0 for any other call).
int tma_load_rank(IntrinsicId id) {
  switch (id) {
    case IntrinsicId::kTmaLoad1D:
      return 1;
    case IntrinsicId::kTmaLoad2D:
      return 2;
    case IntrinsicId::kTmaLoad3D:
      return 3;
    case IntrinsicId::kTmaLoad4D:
      return 4;
    case IntrinsicId::kTmaLoad5D:
      return 5;
    default:
      return 0;
  }
}

/// The barrier operand of an expect_tx (its first) or a TMA load (its third).
const IntrinsicArg& barrier_of(const IntrinsicCallNode& c) {
  return c.args[tma_load_rank(c.intrinsic) > 0 ? 2 : 0];
}

/// The bytes a TMA load's box completes on its barrier, when its extents are constants.
std::optional<int64_t> box_bytes(const IntrinsicCallNode& c) {
  const int rank = tma_load_rank(c.intrinsic);
  int64_t elements = 1;
  for (int k = 0; k < rank; ++k) {
    std::optional<int64_t> n = as_const_int(c.args[3 + k].value);
    if (!n) return std::nullopt;
    elements *= *n;
  }
  return c.args[0].buffer->dtype.storage_bytes(elements);
}

std::string element_text(const IntrinsicArg& a) {
  std::string s = a.buffer->name + "[";
  for (size_t i = 0; i < a.indices.size(); ++i) s += (i ? ", " : "") + to_string(a.indices[i]);
  return s + "]";
}

bool same_element(const IntrinsicArg& a, const IntrinsicArg& b) {
  if (!a.buffer.same_as(b.buffer) || a.indices.size() != b.indices.size()) return false;
  for (size_t i = 0; i < a.indices.size(); ++i) {
    if (!structural_equal(a.indices[i], b.indices[i])) return false;
  }
  return true;
}

/// One expect_tx and the loads after it in its sequence onto the same barrier element.
struct Group {
  const IntrinsicCallNode* expect = nullptr;
  SourceLoc loc;
  int64_t announced = 0;
  int64_t delivered = 0;
  std::vector<std::string> loads;  ///< "tma_load_2d into A_shared (8192 bytes)"
};

struct BarrierBytes {
  Buffer buffer;
  std::vector<Group> groups;
  bool has_loads = false;
  bool recognised = true;  ///< every expect_tx and load on it sits in a group
};

class Collector : public StmtVisitor {
 public:
  std::map<const BufferNode*, BarrierBytes> barriers;

 protected:
  void visit_Seq(const SeqNode* op, const Stmt&) override {
    // The open group of each barrier buffer in this sequence (index into its groups).
    std::map<const BufferNode*, size_t> open;
    for (const Stmt& s : op->stmts) {
      const auto* c = s.as<IntrinsicCallNode>();
      if (!c || (!is_expect(c->intrinsic) && tma_load_rank(c->intrinsic) == 0)) {
        visit(s);
        continue;
      }
      const IntrinsicArg& bar = barrier_of(*c);
      BarrierBytes& b = entry(bar.buffer);
      if (is_expect(c->intrinsic)) {
        std::optional<int64_t> n = as_const_int(c->args[1].value);
        if (!n) {
          b.recognised = false;
          open.erase(bar.buffer.get());
          continue;
        }
        b.groups.push_back({c, s->loc, *n, 0, {}});
        open[bar.buffer.get()] = b.groups.size() - 1;
        continue;
      }
      b.has_loads = true;
      auto it = open.find(bar.buffer.get());
      std::optional<int64_t> bytes = box_bytes(*c);
      if (it == open.end() || !bytes ||
          !same_element(barrier_of(*b.groups[it->second].expect), bar)) {
        b.recognised = false;
        continue;
      }
      Group& g = b.groups[it->second];
      g.delivered += *bytes;
      g.loads.push_back(intrinsic_info(c->intrinsic).name + " into " + c->args[0].buffer->name +
                        " (" + std::to_string(*bytes) + " bytes)");
    }
  }
  void visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt&) override {
    // Outside a sequence: a load or expect_tx on its own (no group the check recognises).
    if (!is_expect(op->intrinsic) && tma_load_rank(op->intrinsic) == 0) return;
    BarrierBytes& b = entry(barrier_of(*op).buffer);
    b.recognised = false;
    if (tma_load_rank(op->intrinsic) > 0) b.has_loads = true;
  }

 private:
  BarrierBytes& entry(const Buffer& buffer) {
    BarrierBytes& b = barriers[buffer.get()];
    b.buffer = buffer;
    return b;
  }
};

}  // namespace

std::vector<KernelCheck> prove_barrier_bytes(const Kernel& kernel) {
  Collector collector;
  collector.visit(kernel->body);
  std::vector<KernelCheck> out;
  for (const auto& [_, b] : collector.barriers) {
    if (!b.has_loads || !b.recognised) continue;
    auto start = std::chrono::steady_clock::now();
    KernelCheck check;
    check.what =
        "mbarrier bytes on '" + b.buffer->name + "': every expect_tx (" +
        std::to_string(b.groups.size()) +
        ") announces exactly the bytes of the TMA boxes completing on its barrier after it";
    check.result = "proved";
    for (const Group& g : b.groups) {
      if (g.announced == g.delivered) continue;
      std::string loads;
      for (const std::string& l : g.loads) loads += (loads.empty() ? "" : ", ") + l;
      check.result = "failed";
      check.counterexample =
          "the expect_tx at " + g.loc.str() + " announces " + std::to_string(g.announced) +
          " bytes on '" + element_text(g.expect->args[0]) + "', but the TMA copies after it " +
          "deliver " + std::to_string(g.delivered) + " (" + (loads.empty() ? "none" : loads) +
          "): " +
          (g.announced > g.delivered
               ? "the phase never completes (the waiting warps deadlock)"
               : "the phase completes before every box has landed (its readers race with it)") +
          "; announce the sum of the boxes' bytes (the product of each box's extents times the "
          "element size)";
      break;
    }
    check.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out.push_back(std::move(check));
  }
  return out;
}

}  // namespace tessel
