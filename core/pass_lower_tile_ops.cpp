// Pass lower_tile_ops: every tile operator becomes its `lower()` and every T.Parallel nest the
// calling thread's iterations (ParallelLoop::lower). A T.Pipelined loop with a plan
// (plan_pipelines) has its statements lowered one by one and scheduled by inject_pipeline; with
// num_stages <= 1 it is a serial loop. On sm90 (defers_pipelines) the lowered statements stay in
// a planned T.Pipelined loop for warp_specialize. Buffers the lowering needs (workspaces, register
// temporaries) are allocated at the top of the body. Fragment accesses stay logical; the
// flattening pass maps them to registers. A tile operator (or T.Parallel) on block buffers
// inside a branch on the thread index (`with T.ws(g)`) is lowered for the branch's threads: its
// work is partitioned over their count, with the thread index relative to the first of them;
// its copies are synchronous (complete when the operator ends, before the user's
// T.barrier_arrive), and on targets with wgmma its generic shared writes end with a
// fence.proxy.async (the async proxy of another group's wgmma or TMA store reads them).
#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/parallel_loop.h"
#include "core/passes.h"
#include "core/pipeline_inject.h"
#include "core/stmt_functor.h"
#include "core/thread_group.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

/// True when a statement writes shared memory.
bool writes_shared(const Stmt& s) {
  for (const BufferAccess& a : buffer_accesses(s)) {
    if (a.write && (a.buffer->scope == Scope::kShared || a.buffer->scope == Scope::kSharedDyn))
      return true;
  }
  return false;
}

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
    Stmt then_case = in_branch(op->cond, false, op->then_case);
    Stmt else_case =
        op->else_case.defined() ? in_branch(op->cond, true, op->else_case) : op->else_case;
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return s;
    return IfNode::make(op->cond, then_case, else_case, op->loc);
  }
  Stmt visit_TileOpCall(const TileOpCallNode* op, const Stmt& s) override {
    if (branches_.empty() || !touches_block_buffers(s)) return op->op->lower(ctx_);
    return lower_in_group(op->op->describe(), s, [&] { return op->op->lower(ctx_); });
  }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    if (op->for_kind == ForKind::kParallel) {
      if (branches_.empty() || !touches_block_buffers(s))
        return ParallelLoop::from_for(*op).lower(ctx_);
      return lower_in_group("T.Parallel" + (op->loc.file.empty() ? "" : " at " + op->loc.str()), s,
                            [&] { return ParallelLoop::from_for(*op).lower(ctx_); });
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
    if (op->for_kind == ForKind::kPipelined && !op->pipeline.stage.empty()) {
      if (!branches_.empty()) refuse_pipeline_in_branch(*op);
      return pipeline(*op);
    }
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

  /// The branch body `body` of condition `cond` (`negate`: its else case), with the thread set
  /// of the branch known while its operators are lowered.
  Stmt in_branch(const Expr& cond, bool negate, const Stmt& body) {
    std::optional<ThreadSet> set;
    if (sets_.empty() || sets_.back()) {
      ThreadSet outer = sets_.empty() ? ThreadSet::all(kernel_->threads) : *sets_.back();
      set = outer.narrowed(cond, kernel_->thread_var, negate);
    }
    branches_.push_back(negate ? !cond : cond);
    sets_.push_back(set);
    const int lowered_before = lowered_in_groups_;
    Stmt out = mutate(body);
    if (lowered_in_groups_ > lowered_before) refuse_group_barrier(out);
    sets_.pop_back();
    branches_.pop_back();
    return out;
  }

  /// The lowered branch `body` (with tile operators lowered for its threads) must need no
  /// barrier among its threads: insert_barriers puts none inside a branch on the thread index,
  /// and a block-wide one there would deadlock.
  void refuse_group_barrier(const Stmt& body) const {
    std::optional<BarrierNeed> need = barrier_needed_within(body, kernel_->thread_var);
    if (!need) return;
    const std::string at = need->before->loc.file.empty() ? "" : " at " + need->before->loc.str();
    const std::string threads =
        sets_.back() ? sets_.back()->to_string() : std::string("a thread branch");
    if (!need->previous.file.empty() && need->previous.str() == need->before->loc.str()) {
      // One operator's own lowering exchanges data between its threads (a reduction across
      // warps through a workspace).
      user_error("kernel '" + kernel_->name + "': inside `if " + to_string(branches_.back()) +
                 "` (" + threads + "), the operator" + at +
                 " exchanges data between its threads through shared '" + need->buffer +
                 "' (a reduction across warps, or a copy between two fragment layouts), which "
                 "needs a barrier among the branch's threads; a block-wide T.sync_threads() there "
                 "would deadlock and Tessel does "
                 "not emit a barrier over part of the block (bar.sync id, count) yet. fix: move "
                 "the operator out of the T.ws branch, or give it layouts that keep the data in "
                 "each thread's registers (a reduction whose rows stay in one warp: "
                 "T.GemmWarpPolicy.FullRow, or one warpgroup's wgmma accumulator on sm90)");
    }
    const std::string previous = need->previous.file.empty()
                                     ? "an earlier statement of the branch"
                                     : "the statement at " + need->previous.str();
    user_error("kernel '" + kernel_->name + "': inside `if " + to_string(branches_.back()) + "` (" +
               (sets_.back() ? sets_.back()->to_string() : std::string("a thread branch")) +
               "), the statement" + at + " accesses shared '" + need->buffer + "' after " +
               previous +
               " accessed it, so the branch's threads must synchronise between the two; a "
               "block-wide T.sync_threads() there would deadlock (the threads outside the "
               "branch never arrive) and Tessel does not emit a barrier over part of the block "
               "(bar.sync id, count) yet. fix: move one of the two out of the T.ws branch, to "
               "where the whole block runs it, or keep the data in a fragment of the branch");
  }

  /// `lower()` of the operator or T.Parallel `what` (the tile-level statement `s`) for the
  /// threads of the enclosing branches: partitioned over their count, with the thread index
  /// relative to their first thread; copies synchronous; on targets with wgmma, generic shared
  /// writes followed by this thread's fence.proxy.async.
  Stmt lower_in_group(const std::string& what, const Stmt& s, const std::function<Stmt()>& lower) {
    ThreadGroup group = group_for(what);
    ++lowered_in_groups_;
    const bool async = ctx_.async_copies();
    ctx_.set_async_copies(false);
    Var rel = ctx_.enter_group(group);
    Stmt lowered;
    try {
      lowered = lower();
    } catch (...) {
      ctx_.leave_group();
      ctx_.set_async_copies(async);
      throw;
    }
    ctx_.leave_group();
    ctx_.set_async_copies(async);
    Expr tx = Expr(kernel_->thread_var);
    lowered = substitute(lowered, {rel}, {group.first == 0 ? tx : tx - make_int(group.first)});
    if (ctx_.target().has(wgmma_family()) && writes_shared(s)) {
      lowered = SeqNode::make(
          {lowered, IntrinsicCallNode::make(IntrinsicId::kFenceProxyAsync, {}, s->loc)});
    }
    return lowered;
  }

  /// The threads of the enclosing branches as a group of whole warps; a user error otherwise.
  ThreadGroup group_for(const std::string& what) const {
    const std::optional<ThreadSet>& set = sets_.back();
    const std::string where = "kernel '" + kernel_->name + "': " + what + " is inside `if " +
                              to_string(branches_.back()) + "`";
    if (!set) {
      user_error(where +
                 ", a condition on the thread index that also depends on other values, so the "
                 "threads that run the operator are not known when it is lowered. fix: branch "
                 "on the thread index alone (`with T.ws(g)`, `if tx < 128`) around tile "
                 "operators, or write the work as thread-level code");
    }
    std::optional<ThreadGroup> group = thread_group_of(*set);
    const int64_t warp = ctx_.target().warp_size;
    if (!group || group->first % warp != 0 || group->count % warp != 0) {
      user_error(where + ", which runs on " + set->to_string() +
                 ", but a tile operator inside a branch is lowered for one range of whole "
                 "warps (of " +
                 std::to_string(warp) +
                 " threads): its work is partitioned over the range. fix: branch on whole "
                 "warps or warpgroups (`with T.ws(g)` is threads 128 g to 128 g + 127), or "
                 "write the work as thread-level code");
    }
    return *group;
  }

  /// A T.Pipelined loop inside a branch would get the pipeline's block-wide schedule.
  [[noreturn]] void refuse_pipeline_in_branch(const ForNode& loop) const {
    user_error("kernel '" + kernel_->name + "': the T.Pipelined loop over '" + loop.var.name() +
               "'" + (loop.loc.file.empty() ? "" : " at " + loop.loc.str()) + " is inside `if " +
               to_string(branches_.back()) +
               "` (a T.ws branch or another condition on the thread index); a software pipeline "
               "is scheduled for the whole block. fix: inside T.ws, loop with T.serial (or "
               "range) and order the stages with T.barrier_wait / T.barrier_arrive, or put the "
               "T.ws branches inside the T.Pipelined loop");
  }

  const Kernel& kernel_;
  LowerContext& ctx_;
  Analyzer& analyzer_;
  const LowerOptions& options_;
  bool defer_;                  ///< pipelines left planned for warp_specialize
  std::vector<Expr> branches_;  ///< enclosing conditions on the thread index, outermost first
  /// The threads that take each of them (nullopt: a condition not on the thread index alone).
  std::vector<std::optional<ThreadSet>> sets_;
  int lowered_in_groups_ = 0;  ///< operators lowered for a thread group so far
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
