// Pass lower_tile_ops: every tile operator becomes its `lower()` and every T.Parallel nest the
// calling thread's iterations (ParallelLoop::lower). A T.Pipelined loop with a plan
// (plan_pipelines) has its statements lowered one by one and scheduled by inject_pipeline; with
// num_stages <= 1 it is a serial loop. On sm90 (defers_pipelines) the lowered statements stay in
// a planned T.Pipelined loop for warp_specialize. Buffers the lowering needs (workspaces, register
// temporaries) are allocated at the top of the body. Fragment accesses stay logical; the
// flattening pass maps them to registers. A tile operator (or T.Parallel) on block buffers
// inside a branch on the thread index (`with T.ws(g)`) is refused: its work is partitioned
// over the whole block.
#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/parallel_loop.h"
#include "core/passes.h"
#include "core/pipeline_inject.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

/// True when a statement touches a buffer shared by threads (shared, global, fragment).
bool touches_block_buffers(const Stmt& s) {
  for (const BufferAccess& a : buffer_accesses(s)) {
    if (a.buffer->scope != Scope::kLocal) return true;
  }
  return false;
}

class TileLowerer : public StmtMutator {
 public:
  TileLowerer(const Kernel& kernel, LowerContext& ctx, Analyzer& analyzer,
              const LowerOptions& options, bool defer)
      : kernel_(kernel), ctx_(ctx), analyzer_(analyzer), options_(options), defer_(defer) {}
  PipelineVersions versions;
  std::map<const ExprNode*, std::vector<PipelineGroup>> deferred;  ///< see LoweringState

 protected:
  Stmt visit_If(const IfNode* op, const Stmt& s) override {
    if (!uses_var(op->cond, kernel_->thread_var)) return StmtMutator::visit_If(op, s);
    branches_.push_back(op->cond);
    Stmt out = StmtMutator::visit_If(op, s);
    branches_.pop_back();
    return out;
  }
  Stmt visit_TileOpCall(const TileOpCallNode* op, const Stmt& s) override {
    if (!branches_.empty() && touches_block_buffers(s)) refuse_in_branch(op->op->describe());
    return op->op->lower(ctx_);
  }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    if (op->for_kind == ForKind::kParallel) {
      if (!branches_.empty() && touches_block_buffers(s)) {
        refuse_in_branch("T.Parallel" + (op->loc.file.empty() ? "" : " at " + op->loc.str()));
      }
      return ParallelLoop::from_for(*op).lower(ctx_);
    }
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    if (min && extent && *extent > 0) {
      analyzer_.bind(op->var, *min, *extent);
    } else if (min && !extent) {
      // An extent that depends on block indices (a causal loop's `ceildiv((by + 1) * bM, bK)`):
      // the variable stays below min + the extent's largest value.
      IntBound e = analyzer_.const_int_bound(op->extent);
      if (e.bounded() && e.max > 0 && e.max <= IntBound::kPosInf - *min) {
        analyzer_.bind(op->var, IntBound{*min, *min + e.max - 1});
      }
    }
    if (op->for_kind == ForKind::kPipelined && !op->pipeline.stage.empty()) return pipeline(*op);
    Stmt body = mutate(op->body);
    ForKind kind = op->for_kind == ForKind::kPipelined ? ForKind::kSerial : op->for_kind;
    if (body.same_as(op->body) && kind == op->for_kind) return s;
    return ForNode::make(op->var, op->min, op->extent, kind, body, op->loc);
  }

 private:
  /// Each statement of the body lowered on its own (stage-0 copies asynchronous), then
  /// scheduled by inject_pipeline.
  Stmt pipeline(const ForNode& loop) {
    const auto* seq = loop.body.as<SeqNode>();
    std::vector<Stmt> body = seq ? seq->stmts : std::vector<Stmt>{loop.body};
    std::vector<PipelineGroup> groups;
    for (size_t i = 0; i < body.size(); ++i) {
      ctx_.set_async_copies(loop.pipeline.stage[i] == 0);
      groups.push_back({mutate(body[i]), loop.pipeline.stage[i], loop.pipeline.order[i], body[i]});
      ctx_.set_async_copies(false);
    }
    if (defer_) {  // warp_specialize schedules it
      std::vector<Stmt> lowered;
      for (const PipelineGroup& g : groups) lowered.push_back(g.stmt);
      deferred[loop.var.get()] = std::move(groups);
      return ForNode::make(loop.var, loop.min, loop.extent, ForKind::kPipelined,
                           SeqNode::make(std::move(lowered)), loop.loc,
                           PipelineInfo{loop.pipeline.num_stages, {}, {}});
    }
    // Peeling needs extent > S: every prologue iteration has a source iteration and the main
    // loop runs at least once.
    int last_stage = 0;
    for (const PipelineGroup& g : groups) last_stage = std::max(last_stage, g.stage);
    bool peel = options_.peel_pipelines && analyzer_.can_prove(loop.extent > last_stage);
    return inject_pipeline(loop, std::move(groups), versions, options_.drop_pipeline_wait, peel);
  }

  /// A tile operator's work is partitioned over every thread of the block; inside a branch
  /// only some of them run, and the others' share of the work would be lost.
  [[noreturn]] void refuse_in_branch(const std::string& what) const {
    user_error("kernel '" + kernel_->name + "': " + what + " is inside `if " +
               to_string(branches_.back()) +
               "` (a T.ws branch or another condition on the thread index), but a tile operator "
               "is lowered for all " +
               std::to_string(kernel_->threads) +
               " threads of the block, so the work of the threads outside the branch would be "
               "lost. Tile operators inside T.ws are not supported yet: write the branch's work "
               "as thread-level code (loops over the thread index; T.tma_copy for copies), as "
               "examples/kernels/ws_gemm.py does, or move the operator out of the branch");
  }

  const Kernel& kernel_;
  LowerContext& ctx_;
  Analyzer& analyzer_;
  const LowerOptions& options_;
  bool defer_;                  ///< pipelines left planned for warp_specialize
  std::vector<Expr> branches_;  ///< enclosing conditions on the thread index, outermost first
};

/// The shared buffers that statements outside every planned T.Pipelined loop access.
std::set<const BufferNode*> used_outside_pipelines(const Stmt& body) {
  class DropPipelines : public StmtMutator {
   protected:
    Stmt visit_For(const ForNode* op, const Stmt& s) override {
      if (op->for_kind == ForKind::kPipelined && !op->pipeline.stage.empty())
        return SeqNode::make({});
      return StmtMutator::visit_For(op, s);
    }
  };
  ReadsWrites rw = reads_writes(DropPipelines().mutate(body), [](const Buffer& b) {
    return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
  });
  std::set<const BufferNode*> out = rw.reads;
  out.insert(rw.writes.begin(), rw.writes.end());
  return out;
}

}  // namespace

LoweringState lower_tile_ops(const Kernel& kernel, const Target& target, LayoutMap layouts,
                             const LowerOptions& options) {
  LoweringState state;
  state.layouts = std::move(layouts);
  Analyzer analyzer;
  analyzer.bind(kernel->thread_var, 0, kernel->threads);
  for (size_t d = 0; d < kernel->grid.size(); ++d) {
    if (auto g = as_const_int(kernel->grid[d])) {
      analyzer.bind(kernel->block_vars[d], 0, *g);
    } else {
      analyzer.bind(kernel->block_vars[d], IntBound{0, IntBound::kPosInf});
    }
  }
  for (const Var& v : kernel->dynamic_vars) analyzer.bind(v, IntBound{0, IntBound::kPosInf});
  LowerContext ctx(kernel, target, state.layouts, analyzer);
  TileLowerer lowerer(kernel, ctx, analyzer, options, defers_pipelines(kernel, target, options));
  lowerer.versions.used_outside = used_outside_pipelines(kernel->body);
  Stmt body = apply_versions(lowerer.mutate(kernel->body), lowerer.versions);
  add_versioned_layouts(state.layouts, lowerer.versions);
  std::vector<Stmt> top;
  for (const Buffer& b : ctx.temporaries()) top.push_back(AllocNode::make(b, Expr(), false, {}));
  top.push_back(body);
  state.kernel = with_body(kernel, SeqNode::make(std::move(top)));
  state.registers = ctx.register_buffers();
  state.deferred_pipelines = std::move(lowerer.deferred);
  return state;
}

}  // namespace tessel
