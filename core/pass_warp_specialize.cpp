// Pass warp_specialize (sm90): each T.Pipelined loop becomes a producer/consumer split (the
// paper's §4.4). The block gets one more warpgroup (128 threads, after the T consumer threads);
// it issues the loop's global->shared copies into num_stages stage buffers and the consumers
// compute on them, ordered by two mbarriers per stage:
//
//   producer (tx >= T), round r = (k - min) / S of stage s = (k - min) % S:
//     wait empty[s] parity (r + 1) % 2      (phase r - 1 done: the consumers have read stage s;
//                                            round 0 passes at once, the barrier being fresh)
//     the copies into version s (cp.async, each thread its part of the copy's partition)
//     cp_async_commit_group; cp_async_wait_group(S - 1)  (iteration k - S + 1's copies landed)
//     arrive full[stage of k - S + 1]                       (full counts 128)
//   and after the loop: cp_async_wait_group(0), arrive full for the last S - 1 iterations
//   consumer (tx < T):
//     wait full[s] parity r % 2             (phase r done: the producer filled stage s)
//     the loop's other statements on version s; arrive empty[s]           (empty counts T)
//
// Registers are rebalanced with setmaxnreg (producer down, consumers up) when T is whole
// warpgroups. The statements outside the loops run in the consumer threads only (they were
// lowered for T threads); allocations and the barriers insert_barriers adds stay block-wide.
// Where the split does not apply (see `split_blocker`), the loops get sm80's software pipeline.
#include <algorithm>

#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/op_copy.h"
#include "core/passes.h"
#include "core/pipeline_inject.h"
#include "core/stmt_functor.h"
#include "core/tma_placement.h"

namespace tessel {

namespace {

/// Threads in a warpgroup (PTX ISA: 4 warps of 32); the producer is one.
constexpr int kWarpGroup = 128;
/// Registers per thread the registers of a block are shared out in (setmaxnreg).
constexpr int kBlockRegisters = 65536;
/// setmaxnreg of the producer: it only computes addresses.
constexpr int kProducerRegisters = 40;
/// setmaxnreg of a TMA producer: one thread issues the boxes (TileLang's choice).
constexpr int kTmaProducerRegisters = 24;
/// The most registers per thread setmaxnreg gives the consumers (TileLang's choice).
constexpr int kConsumerRegistersMax = 240;

bool is_shared(const Buffer& b) {
  return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
}

/// After lower_tile_ops, the T.Pipelined loops left are the ones deferred to this pass.
bool is_deferred_pipeline(const Stmt& s) {
  const auto* f = s.as<ForNode>();
  return f && f->for_kind == ForKind::kPipelined;
}

/// The deferred loops' lowered statements (LoweringState::deferred_pipelines).
using Deferred = std::map<const ExprNode*, std::vector<PipelineGroup>>;

const std::vector<PipelineGroup>& groups_of(const Deferred& deferred, const ForNode& loop) {
  auto it = deferred.find(loop.var.get());
  if (it == deferred.end()) internal_error("warp_specialize: a pipelined loop without its plan");
  return it->second;
}

bool has_barrier(const Stmt& s) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& x) { found = found || x.as<BarrierNode>() != nullptr; });
  return found;
}

Stmt intrinsic(IntrinsicId id, std::vector<IntrinsicArg> args, const SourceLoc& loc) {
  return IntrinsicCallNode::make(id, std::move(args), loc);
}
IntrinsicArg value(Expr e) { return IntrinsicArg{Buffer(), {}, std::move(e)}; }
IntrinsicArg element(const Buffer& b, Expr i) { return IntrinsicArg{b, {std::move(i)}, Expr()}; }

/// `s` without the block barrier that publishes generic-proxy shared writes to a wgmma (the
/// T.sync_threads() right before a wgmma_fence): in the consumer branch the stage data are
/// published by the producer (its fence.proxy.async or TMA) and ordered by the full barrier,
/// and a block-wide barrier there would wait for the producer warps.
Stmt without_wgmma_publish_barriers(const Stmt& s) {
  class Drop : public StmtMutator {
   protected:
    Stmt visit_Seq(const SeqNode* op, const Stmt& self) override {
      Stmt m = StmtMutator::visit_Seq(op, self);
      const auto* seq = m.as<SeqNode>();
      if (!seq) return m;
      std::vector<Stmt> out;
      bool dropped = false;
      for (size_t i = 0; i < seq->stmts.size(); ++i) {
        const auto* next =
            i + 1 < seq->stmts.size() ? seq->stmts[i + 1].as<IntrinsicCallNode>() : nullptr;
        if (seq->stmts[i].as<BarrierNode>() && next &&
            intrinsic_info(next->intrinsic).name == "wgmma_fence") {
          dropped = true;
          continue;
        }
        out.push_back(seq->stmts[i]);
      }
      return dropped ? SeqNode::make(std::move(out)) : m;
    }
  };
  return Drop().mutate(s);
}

/// `s` without its `fence.proxy.async`s: in the consumer branch of the loop, which writes no
/// shared memory (split_blocker), they have no generic-proxy write of the thread to order before
/// a wgmma; the stage data come from TMA (the async proxy) or from a cp.async producer that
/// fences before it arrives. Each cost a MEMBAR and a FENCE.VIEW.ASYNC per k step.
Stmt without_proxy_fences(const Stmt& s) {
  class Drop : public StmtMutator {
   protected:
    Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& self) override {
      return op->intrinsic == IntrinsicId::kFenceProxyAsync ? SeqNode::make({}) : self;
    }
  };
  return Drop().mutate(s);
}

/// The deferred pipelines reachable from the body through sequences and lets only (the ones
/// every thread of the block reaches), and whether any other exists.
struct PipelineCensus {
  std::vector<const ForNode*> top;
  int nested = 0;
};

void census(const Stmt& s, bool top, PipelineCensus& out) {
  if (is_deferred_pipeline(s)) {
    if (top) {
      out.top.push_back(s.as<ForNode>());
    } else {
      ++out.nested;
    }
    return;
  }
  if (const auto* seq = s.as<SeqNode>()) {
    for (const Stmt& c : seq->stmts) census(c, top, out);
    return;
  }
  if (const auto* let = s.as<LetNode>()) return census(let->body, top, out);
  for_each_stmt(s, [&](const Stmt& x) {
    if (!x.same_as(s) && is_deferred_pipeline(x)) ++out.nested;
  });
}

/// Why the split cannot apply to this kernel (empty when it can). Every pipelined loop must be
/// at the top of the body; in each, the stage-0 statements may only copy global memory into
/// shared memory and the later ones may not write shared memory (both sides synchronise only
/// through the stage barriers); statements outside the loops may not need a block barrier
/// inside themselves (they run in the consumer threads only).
std::string split_blocker(const Kernel& kernel, const PipelineCensus& c, const Deferred& deferred) {
  if (c.nested > 0) return "a T.Pipelined loop inside another loop or a branch";
  for (const ForNode* loop : c.top) {
    for (const PipelineGroup& g : groups_of(deferred, *loop)) {
      if (has_barrier(without_wgmma_publish_barriers(g.stmt)))
        return "a statement of the loop needs a block barrier";
      for (const BufferAccess& a : buffer_accesses(g.stmt)) {
        if (g.stage == 0) {
          if (a.write ? !is_shared(a.buffer) : a.buffer->scope != Scope::kGlobal)
            return "a stage-0 statement of the loop is not a global->shared copy";
        } else if (a.write && is_shared(a.buffer)) {
          return "a consumer statement of the loop writes shared memory ('" + a.buffer->name + "')";
        }
      }
    }
  }
  // Statements outside the loops: no barrier needed inside one (it writes and reads shared).
  class Outside : public StmtVisitor {
   public:
    std::string blocker;

   protected:
    void visit_Let(const LetNode* op, const Stmt&) override { visit(op->body); }
    void visit_For(const ForNode*, const Stmt& s) override {
      if (!is_deferred_pipeline(s)) leaf(s);
    }
    void visit_If(const IfNode*, const Stmt& s) override { leaf(s); }
    void visit_Store(const StoreNode*, const Stmt& s) override { leaf(s); }
    void visit_IntrinsicCall(const IntrinsicCallNode*, const Stmt& s) override { leaf(s); }

   private:
    void leaf(const Stmt& s) {
      if (has_barrier(s)) blocker = "a statement outside the loop holds a block barrier";
      bool reads = false, writes = false;
      for (const BufferAccess& a : buffer_accesses(s)) {
        if (!is_shared(a.buffer)) continue;
        (a.write ? writes : reads) = true;
      }
      if (reads && writes && blocker.empty())
        blocker = "a statement outside the loop both writes and reads shared memory";
    }
  };
  Outside outside;
  outside.visit(kernel->body);
  if (!outside.blocker.empty()) return outside.blocker;
  if (kernel->thread_dims.size() > 1) return "a block of more than one thread dimension";
  return "";
}

/// One TMA box the producer issues for a stage: a column panel of a copy of the loop.
struct TmaBox {
  Buffer dst, src;
  std::vector<Expr> dst_origin, src_origin;
  std::vector<int64_t> box;  ///< per global dimension, outermost first
  SourceLoc loc;             ///< the T.copy's
};

/// The stage-0 copies of a loop as TMA boxes, or nullopt (with the reason in `why`) when one
/// is not a copy TMA can make: a whole shared tile from a box of a global tensor of constant
/// shape whose rows are 16-byte multiples, box extents 1 to 256, rows of the box 16-byte
/// multiples (split into 128-byte column panels when wider), and a shared layout some tensor-map
/// swizzle mode (none, 32B, 64B, 128B) writes exactly, at a 128-byte aligned address in every
/// stage.
std::optional<std::vector<TmaBox>> tma_boxes(const std::vector<PipelineGroup>& groups,
                                             const LayoutMap& layouts, int stages,
                                             std::string& why) {
  std::vector<TmaBox> out;
  for (const PipelineGroup& g : groups) {
    if (g.stage != 0) continue;
    const auto* call = g.source.defined() ? g.source.as<TileOpCallNode>() : nullptr;
    const auto* copy = call ? dynamic_cast<const CopyOp*>(call->op.get()) : nullptr;
    if (!copy) return why = "a stage-0 statement is not a T.copy", std::nullopt;
    BufferRegion dst = copy->dst(), src = copy->src();
    if (src.point_form) src = resolve_point_region(src, dst, "T.copy");
    if (dst.point_form) dst = resolve_point_region(dst, src, "T.copy");
    const Buffer& d = dst.buffer;
    const Buffer& g_t = src.buffer;
    if (!dst.is_full()) return why = "'" + d->name + "' is copied in part", std::nullopt;
    if (g_t->dtype != d->dtype)
      return why = "the copy into '" + d->name + "' converts", std::nullopt;
    const int rank = static_cast<int>(g_t->shape.size());
    const int64_t esize = d->dtype.storage_bytes(1);
    if (rank < 1 || rank > 5) return why = "a tensor of rank above 5", std::nullopt;
    for (const Expr& e : g_t->shape) {
      if (!as_const_int(e)) {
        return why = "'" + g_t->name + "' has a symbolic shape (its tensor map's strides are " +
                     "checked when the kernel is lowered)",
               std::nullopt;
      }
    }
    const int64_t row = *as_const_int(g_t->shape.back()) * esize;
    if (row % 16 != 0) {
      return why = "the rows of '" + g_t->name + "' are " + std::to_string(row) +
                   " bytes, not a multiple of 16 (a tensor map's strides)",
             std::nullopt;
    }
    std::vector<int64_t> box;
    for (const Range& r : src.ranges) {
      std::optional<int64_t> n = as_const_int(r.extent);
      if (!n || *n < 1 || *n > 256) return why = "a box extent outside 1-256", std::nullopt;
      box.push_back(*n);
    }
    const int64_t inner = box.back() * esize;
    if (inner % 16 != 0) return why = "box rows not a multiple of 16 bytes", std::nullopt;
    const int64_t panel = inner > 128 ? 128 / esize : box.back();
    if (inner > 128 && inner % 128 != 0) return why = "wide box rows", std::nullopt;
    // The shared tile: the box's dimensions past the tile's rank are 1.
    const int drank = static_cast<int>(d->shape.size());
    if (drank > rank) return why = "a tile of more dimensions than its tensor", std::nullopt;
    for (int k = 0; k < rank - drank; ++k) {
      if (box[k] != 1) return why = "a box that does not squeeze to the tile", std::nullopt;
    }
    const Layout* layout = layouts.shared_layout(d);
    std::vector<Expr> vshape{make_int(stages)};
    for (const Expr& e : d->shape) {
      if (!as_const_int(e)) return why = "'" + d->name + "' has a symbolic shape", std::nullopt;
      vshape.push_back(e);
    }
    // The box must land right in every stage (the swizzle pattern follows the address).
    Buffer versioned = BufferNode::make(d->name, vshape, d->dtype, d->scope, d->loc);
    std::optional<Layout> vlayout;
    if (layout) vlayout = versioned_layout(*layout, stages);
    for (int64_t c = 0; c < box.back(); c += panel) {
      std::vector<int64_t> sub(box.end() - drank, box.end());
      sub.back() = panel;
      std::vector<int64_t> at(drank, 0);
      at.back() = c;
      bool placed = false;
      for (int sw : {0, 32, 64, 128}) {
        if (placed || (sw != 0 && panel * esize > sw)) continue;
        bool all = true;
        for (int st = 0; st < stages && all; ++st) {
          std::vector<int64_t> vat{st};
          vat.insert(vat.end(), at.begin(), at.end());
          all = !tma_box_mismatch(*versioned, vlayout ? &*vlayout : nullptr, vat, sub, sw);
        }
        placed = all;
      }
      if (!placed) {
        return why = "no tensor-map swizzle writes '" + d->name + "' as it is laid out",
               std::nullopt;
      }
      TmaBox b{d, g_t, {}, {}, box, g.source->loc};
      b.box.back() = panel;
      for (int k = 0; k < drank; ++k) b.dst_origin.push_back(make_int(at[k]));
      for (int k = 0; k < rank; ++k) {
        b.src_origin.push_back(k + 1 == rank ? src.ranges[k].min + make_int(c) : src.ranges[k].min);
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

/// Builds the split of each top-level pipeline and guards everything else to the consumers.
class Specializer : public StmtMutator {
 public:
  Specializer(const Kernel& kernel, const LowerOptions& options, const Deferred& deferred,
              const LayoutMap& layouts, PipelineVersions& versions)
      : kernel_(kernel),
        options_(options),
        deferred_(deferred),
        layouts_(layouts),
        versions_(versions),
        consumers_(kernel->threads) {}

  /// Why the producer copies with cp.async rather than TMA (the last loop's reason).
  std::string tma_blocker;

  /// The allocations and initialisation of the stage barriers, for the top of the body.
  std::vector<Stmt> barrier_setup;

  /// The body with its top-level pipelines split and its other statements guarded.
  Stmt top_level(const Stmt& s) {
    if (s.as<SeqNode>() || s.as<LetNode>()) return mutate(s);
    if (s.as<AllocNode>() || s.as<BarrierNode>()) return s;
    if (is_deferred_pipeline(s)) return split(*s.as<ForNode>());
    // A shared tile written here may be read by a consumer's wgmma (the async proxy) after the
    // block barrier before the loop: the writing threads fence before that barrier.
    bool writes_shared = false;
    for (const BufferAccess& a : buffer_accesses(s))
      writes_shared |= a.write && is_shared(a.buffer);
    Stmt body = writes_shared
                    ? SeqNode::make({s, intrinsic(IntrinsicId::kFenceProxyAsync, {}, s->loc)})
                    : s;
    return IfNode::make(Expr(kernel_->thread_var) < make_int(consumers_), body, Stmt(), s->loc);
  }

 protected:
  Stmt visit_Seq(const SeqNode* op, const Stmt&) override {
    std::vector<Stmt> out;
    for (const Stmt& c : op->stmts) out.push_back(top_level(c));
    return SeqNode::make(std::move(out));
  }
  Stmt visit_Let(const LetNode* op, const Stmt&) override {
    return LetNode::make(op->var, op->value, top_level(op->body), op->loc);
  }

 private:
  Buffer barriers(const std::string& base, int stages, const SourceLoc& loc) {
    std::string name = base;
    for (int i = 1; used_name(name); ++i) name = base + "_" + std::to_string(i);
    names_.push_back(name);
    return BufferNode::make(name, {make_int(stages)}, DataType::i64(), Scope::kShared, loc);
  }
  bool used_name(const std::string& name) const {
    if (std::find(names_.begin(), names_.end(), name) != names_.end()) return true;
    bool used = false;
    for (const BufferAccess& a : buffer_accesses(kernel_->body)) used |= a.buffer->name == name;
    for (const Buffer& p : kernel_->params) used |= p->name == name;
    return used;
  }

  Stmt split(const ForNode& loop) {
    const SourceLoc& loc = loop.loc;
    const int stages = std::max(2, loop.pipeline.num_stages);
    std::vector<PipelineGroup> groups = groups_of(deferred_, loop);
    // Stage 0 (the copies) is the producer's; every later stage is the consumers'.
    for (PipelineGroup& g : groups) g.stage = g.stage == 0 ? 0 : 1;
    version_buffers(loop, groups, stages, versions_);
    std::stable_sort(
        groups.begin(), groups.end(),
        [](const PipelineGroup& a, const PipelineGroup& b) { return a.order < b.order; });
    groups_ = groups;

    Buffer full = barriers("ws_full", stages, loc), empty = barriers("ws_empty", stages, loc);
    full_ = full;
    // TMA where every copy allows it: the producer's first thread issues the boxes and the
    // phase completes on its one arrival plus the boxes' bytes.
    std::optional<std::vector<TmaBox>> tma;
    if (options_.warp_specialize_tma) tma = tma_boxes(groups, layouts_, stages, tma_blocker);
    const int full_count = tma ? 1 : kWarpGroup;
    const int empty_count = consumers_ + (options_.ws_wrong_arrival_count ? 1 : 0);
    barrier_setup.push_back(AllocNode::make(full, Expr(), false, loc));
    barrier_setup.push_back(AllocNode::make(empty, Expr(), false, loc));
    std::vector<Stmt> init;
    for (int s = 0; s < stages; ++s) {
      init.push_back(intrinsic(IntrinsicId::kMbarrierInit,
                               {element(full, make_int(s)), value(make_int(full_count))}, loc));
      init.push_back(intrinsic(IntrinsicId::kMbarrierInit,
                               {element(empty, make_int(s)), value(make_int(empty_count))}, loc));
    }
    barrier_setup.push_back(IfNode::make(Expr(kernel_->thread_var) == make_int(0),
                                         SeqNode::make(std::move(init)), Stmt(), loc));
    barrier_setup.push_back(BarrierNode::make(loc));

    const Expr iter = Expr(loop.var) - loop.min;
    const Expr stage = floormod(iter, make_int(stages));
    const Expr round = floordiv(iter, make_int(stages));
    const Expr tx = Expr(kernel_->thread_var);
    const bool whole_groups = consumers_ % kWarpGroup == 0;

    if (tma) {
      const int64_t bytes = [&] {
        int64_t n = 0;
        for (const TmaBox& b : *tma) {
          int64_t e = 1;
          for (int64_t x : b.box) e *= x;
          n += b.dst->dtype.storage_bytes(e);
        }
        return n;
      }();
      std::vector<Stmt> issue;
      issue.push_back(intrinsic(IntrinsicId::kMbarrierWaitParity,
                                {element(empty, stage), value(floormod(round + 1, make_int(2)))},
                                loc));
      issue.push_back(intrinsic(IntrinsicId::kMbarrierArriveExpectTx,
                                {element(full, stage), value(make_int(bytes))}, loc));
      static constexpr IntrinsicId kLoads[] = {IntrinsicId::kTmaLoad1D, IntrinsicId::kTmaLoad2D,
                                               IntrinsicId::kTmaLoad3D, IntrinsicId::kTmaLoad4D,
                                               IntrinsicId::kTmaLoad5D};
      for (const TmaBox& b : *tma) {
        std::vector<IntrinsicArg> args = {IntrinsicArg{b.dst, b.dst_origin, Expr()},
                                          IntrinsicArg{b.src, b.src_origin, Expr()},
                                          element(full, stage)};
        for (int64_t x : b.box) args.push_back(value(make_int(x)));
        args.push_back(value(make_int(0)));  // the swizzle mode: flatten_buffers picks it
        issue.push_back(version_accesses(
            intrinsic(kLoads[b.box.size() - 1], std::move(args), b.loc), versions_, stage));
      }
      // (the barrier operand is not versioned: ws_full is not a stage buffer)
      return finish(
          loop, tx, empty, stage, round,
          {IfNode::make(tx == make_int(consumers_), loop_of(loop, std::move(issue)), Stmt(), loc)},
          kTmaProducerRegisters);
    }
    // The producer: each copy was lowered for T threads; producer thread p runs the parts of
    // threads p, p + 128, ... below T.
    std::vector<Stmt> produce;
    produce.push_back(intrinsic(IntrinsicId::kMbarrierWaitParity,
                                {element(empty, stage), value(floormod(round + 1, make_int(2)))},
                                loc));
    const int parts = (consumers_ + kWarpGroup - 1) / kWarpGroup;
    for (const PipelineGroup& g : groups) {
      if (g.stage != 0) continue;
      Stmt copy = version_accesses(g.stmt, versions_, stage);
      for (int part = 0; part < parts; ++part) {
        Expr as = tx - make_int(consumers_ - part * kWarpGroup);
        Stmt mine = substitute(copy, {kernel_->thread_var}, {as});
        if (!whole_groups && (part + 1) * kWarpGroup > consumers_) {
          mine = IfNode::make(as < make_int(consumers_), mine, Stmt(), loc);
        }
        produce.push_back(mine);
      }
    }
    // Up to `lag` iterations' copies stay in flight: after committing iteration i's group, the
    // wait for all but `lag` groups lands iteration i - lag's, whose stage is then full.
    const int lag = stages - 1;
    auto arrive_full = [&](const Expr& i) {  // i: iteration counted from 0
      return intrinsic(IntrinsicId::kMbarrierArrive, {element(full, floormod(i, make_int(stages)))},
                       loc);
    };
    produce.push_back(intrinsic(IntrinsicId::kCpAsyncCommitGroup, {}, loc));
    produce.push_back(intrinsic(IntrinsicId::kCpAsyncWaitGroup, {value(make_int(lag))}, loc));
    // The landed copies are generic-proxy writes and a consumer's wgmma reads through the
    // async proxy: the writing thread fences before it signals.
    produce.push_back(intrinsic(IntrinsicId::kFenceProxyAsync, {}, loc));
    produce.push_back(
        IfNode::make(iter >= make_int(lag), arrive_full(iter - make_int(lag)), Stmt(), loc));
    // After the loop, the last `lag` iterations (those of them that ran) land and arrive.
    Var d(loop.var.name() + "_drain", loop.var.dtype());
    Expr last = loop.extent - make_int(lag) + d;
    std::vector<Stmt> drain{
        intrinsic(IntrinsicId::kCpAsyncWaitGroup, {value(make_int(0))}, loc),
        intrinsic(IntrinsicId::kFenceProxyAsync, {}, loc),
        ForNode::make(d, make_int(0), make_int(lag), ForKind::kSerial,
                      IfNode::make(last >= make_int(0), arrive_full(last), Stmt(), loc), loc)};

    std::vector<Stmt> producer{loop_of(loop, std::move(produce))};
    producer.insert(producer.end(), drain.begin(), drain.end());
    return finish(loop, tx, empty, stage, round, std::move(producer), kProducerRegisters);
  }

  static Stmt loop_of(const ForNode& loop, std::vector<Stmt> body) {
    return ForNode::make(loop.var, loop.min, loop.extent, ForKind::kSerial,
                         SeqNode::make(std::move(body)), loop.loc);
  }

  /// The consumers' loop, setmaxnreg on both sides, and the branch on the thread index.
  Stmt finish(const ForNode& loop, const Expr& tx, const Buffer& empty, const Expr& stage,
              const Expr& round, std::vector<Stmt> produce, int producer_registers) {
    const SourceLoc& loc = loop.loc;
    const Buffer& full = full_;
    std::vector<Stmt> consume;
    Expr parity = floormod(round + (options_.ws_wrong_parity ? 1 : 0), make_int(2));
    consume.push_back(
        intrinsic(IntrinsicId::kMbarrierWaitParity, {element(full, stage), value(parity)}, loc));
    for (const PipelineGroup& g : groups_) {
      if (g.stage == 0) continue;
      Stmt mine = without_proxy_fences(without_wgmma_publish_barriers(g.stmt));
      consume.push_back(version_accesses(mine, versions_, stage));
    }
    consume.push_back(intrinsic(IntrinsicId::kMbarrierArrive, {element(empty, stage)}, loc));
    std::vector<Stmt> producer, consumer;
    if (consumers_ % kWarpGroup == 0 && options_.set_max_nreg) {
      const int groups_of_consumers = consumers_ / kWarpGroup;
      int per_thread = (kBlockRegisters / kWarpGroup - producer_registers) / groups_of_consumers;
      per_thread = std::min(kConsumerRegistersMax, per_thread / 8 * 8);
      producer.push_back(intrinsic(IntrinsicId::kSetMaxNreg,
                                   {value(make_int(producer_registers)), value(make_int(0))}, loc));
      consumer.push_back(intrinsic(IntrinsicId::kSetMaxNreg,
                                   {value(make_int(per_thread)), value(make_int(1))}, loc));
    }
    producer.insert(producer.end(), produce.begin(), produce.end());
    consumer.push_back(loop_of(loop, std::move(consume)));
    return IfNode::make(tx >= make_int(consumers_), SeqNode::make(std::move(producer)),
                        SeqNode::make(std::move(consumer)), loc);
  }

  const Kernel& kernel_;
  const LowerOptions& options_;
  const Deferred& deferred_;
  const LayoutMap& layouts_;
  PipelineVersions& versions_;
  int consumers_;
  std::vector<PipelineGroup> groups_;  ///< the loop being split, in order
  Buffer full_;                        ///< its full barriers
  std::vector<std::string> names_;
};

/// The sm80 schedule for every deferred pipeline (where the split does not apply).
class Injector : public StmtMutator {
 public:
  Injector(const LowerOptions& options, const Deferred& deferred, PipelineVersions& versions)
      : options_(options), deferred_(deferred), versions_(versions) {}

 protected:
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    if (!is_deferred_pipeline(s)) return StmtMutator::visit_For(op, s);
    std::vector<PipelineGroup> groups = groups_of(deferred_, *op);
    // Peeled as lower_tile_ops peels (core/pipeline_inject.h) when the trip count is a constant
    // above num_stages - 1.
    int last_stage = 0;
    for (const PipelineGroup& g : groups) last_stage = std::max(last_stage, g.stage);
    auto n = as_const_int(op->extent);
    bool peel = options_.peel_pipelines && n && *n > last_stage;
    return inject_pipeline(*op, std::move(groups), versions_, options_.drop_pipeline_wait, peel);
  }

 private:
  const LowerOptions& options_;
  const Deferred& deferred_;
  PipelineVersions& versions_;
};

/// The shared buffers that statements outside every deferred pipeline access.
std::set<const BufferNode*> used_outside(const Stmt& body) {
  class Drop : public StmtMutator {
   protected:
    Stmt visit_For(const ForNode* op, const Stmt& s) override {
      if (is_deferred_pipeline(s)) return SeqNode::make({});
      return StmtMutator::visit_For(op, s);
    }
  };
  ReadsWrites rw = reads_writes(Drop().mutate(body), is_shared);
  std::set<const BufferNode*> out = rw.reads;
  out.insert(rw.writes.begin(), rw.writes.end());
  return out;
}

}  // namespace

bool defers_pipelines(const Kernel& kernel, const Target& target, const LowerOptions& options) {
  if (!options.warp_specialize || !target.has(mbarrier_family()) ||
      !target.has(cp_async_family()) || kernel->threads + kWarpGroup > target.max_threads) {
    return false;
  }
  // A kernel that already synchronises through mbarriers (written with T.ws) is left as written.
  bool mbarriers = false;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    if (const auto* c = s.as<IntrinsicCallNode>()) {
      IntrinsicFamily f = intrinsic_info(c->intrinsic).family;
      mbarriers |= f == IntrinsicFamily::kMbarrier || f == IntrinsicFamily::kMbarrierWait;
    }
  });
  return !mbarriers;
}

LoweringState warp_specialize(LoweringState state, const LowerOptions& options) {
  PipelineCensus c;
  census(state.kernel->body, true, c);
  if (c.top.empty() && c.nested == 0) return state;
  PipelineVersions versions;
  versions.used_outside = used_outside(state.kernel->body);
  const Deferred& deferred = state.deferred_pipelines;
  std::string blocker = split_blocker(state.kernel, c, deferred);
  for (const ForNode* loop : c.top) {
    for (const PipelineGroup& g : groups_of(deferred, *loop)) {
      if (g.stage != 0) continue;
      for (const BufferAccess& a : buffer_accesses(g.stmt)) {
        if (blocker.empty() && a.write && versions.used_outside.count(a.buffer.get()))
          blocker = "the stage buffer '" + a.buffer->name + "' is also used outside the loop";
      }
    }
  }
  Stmt body;
  KernelNode node = *state.kernel;
  if (blocker.empty()) {
    Specializer split(state.kernel, options, deferred, state.layouts, versions);
    Stmt s = split.top_level(state.kernel->body);
    std::vector<Stmt> top = split.barrier_setup;
    top.push_back(s);
    body = SeqNode::make(std::move(top));
    node.threads = state.kernel->threads + kWarpGroup;
    node.thread_dims = {node.threads};
    state.warp_specialize_cp_async_reason = split.tma_blocker;
  } else {
    body = Injector(options, deferred, versions).mutate(state.kernel->body);
  }
  node.body = apply_versions(body, versions);
  add_versioned_layouts(state.layouts, versions);
  state.kernel = Kernel(std::make_shared<const KernelNode>(std::move(node)));
  state.warp_specialize_blocker = blocker;
  state.deferred_pipelines.clear();
  return state;
}

}  // namespace tessel
