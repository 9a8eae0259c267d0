// Pass lower_tile_ops: every tile operator becomes its `lower()` and every T.Parallel nest the
// calling thread's iterations (ParallelLoop::lower). T.Pipelined loops run as serial loops here
// (software pipelining is its own pass). Buffers the lowering needs (workspaces, register
// temporaries) are allocated at the top of the body. Fragment accesses stay logical; the
// flattening pass maps them to registers.
#include "core/parallel_loop.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

class TileLowerer : public StmtMutator {
 public:
  explicit TileLowerer(LowerContext& ctx, Analyzer& analyzer) : ctx_(ctx), analyzer_(analyzer) {}

 protected:
  Stmt visit_TileOpCall(const TileOpCallNode* op, const Stmt&) override {
    return op->op->lower(ctx_);
  }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    if (op->for_kind == ForKind::kParallel) return ParallelLoop::from_for(*op).lower(ctx_);
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    if (min && extent && *extent > 0) analyzer_.bind(op->var, *min, *extent);
    Stmt body = mutate(op->body);
    ForKind kind = op->for_kind == ForKind::kPipelined ? ForKind::kSerial : op->for_kind;
    if (body.same_as(op->body) && kind == op->for_kind) return s;
    return ForNode::make(op->var, op->min, op->extent, kind, body, op->loc);
  }

 private:
  LowerContext& ctx_;
  Analyzer& analyzer_;
};

}  // namespace

LoweringState lower_tile_ops(const Kernel& kernel, const Target& target, LayoutMap layouts) {
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
  Stmt body = TileLowerer(ctx, analyzer).mutate(kernel->body);
  std::vector<Stmt> top;
  for (const Buffer& b : ctx.temporaries()) top.push_back(AllocNode::make(b, Expr(), false, {}));
  top.push_back(body);
  state.kernel = with_body(kernel, SeqNode::make(std::move(top)));
  state.registers = ctx.register_buffers();
  return state;
}

}  // namespace tessel
