// Statement node construction and validation.
#include "core/stmt.h"

#include "core/expr_printer.h"
#include "core/pipeline_schedule.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "Parallel";
    case ForKind::kUnrolled:
      return "unroll";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kPipelined:
      return "Pipelined";
  }
  return "?";
}

namespace {
std::string at(const SourceLoc& loc) { return loc.known() ? " at " + loc.str() : ""; }
}  // namespace

Stmt SeqNode::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const auto* seq = s.as<SeqNode>()) {
      flat.insert(flat.end(), seq->stmts.begin(), seq->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<const SeqNode>(std::move(flat)));
}

Stmt ForNode::make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc,
                   PipelineInfo pipeline) {
  std::string where =
      std::string("T.") + for_kind_name(kind) + " loop over '" + var.name() + "'" + at(loc);
  if (!min.dtype().is_integral() || !extent.dtype().is_integral()) {
    user_error(where + ": loop bounds must be integers, got " + to_string(extent));
  }
  if (var.dtype().is_integral() && var.dtype().bits < loop_var_type(min, extent).bits) {
    user_error(where + ": the loop variable is " + var.dtype().name() + " but the loop runs to " +
               to_string(min + extent) + "; make it an int64 variable (loop_var_type)");
  }
  if (auto c = as_const_int(extent); c && *c < 0) {
    user_error(where + ": extent is " + std::to_string(*c) + "; a loop extent must be >= 0");
  }
  if (kind == ForKind::kPipelined && pipeline.num_stages < 0) {
    user_error(where + ": num_stages=" + std::to_string(pipeline.num_stages) +
               " is negative; use 0 (no pipelining) or more");
  }
  if (!pipeline.order.empty() && !pipeline.stage.empty() &&
      pipeline.order.size() != pipeline.stage.size()) {
    user_error(where + ": order has " + std::to_string(pipeline.order.size()) +
               " entries but stage has " + std::to_string(pipeline.stage.size()) +
               "; give one entry per statement of the loop body in both");
  }
  if (!body.defined()) body = SeqNode::make({});
  if (kind == ForKind::kPipelined && (!pipeline.order.empty() || !pipeline.stage.empty())) {
    // The one validation of a user's schedule, for both levels (plan_pipelines repeats it on
    // the completed schedule).
    std::vector<Stmt> stmts = pipeline_statements(body);
    check_pipeline_schedule(where, stmts, complete_pipeline_schedule(stmts, pipeline));
  }
  if (kind == ForKind::kParallel) {
    for_each_stmt(body, [&](const Stmt& s) {
      const auto* call = s.as<TileOpCallNode>();
      if (!call || call->op->is_element()) return;
      user_error(call->op->describe() + " sits inside the " + where + ": a tile operator " +
                 "works on whole tiles for the whole block, once, so it cannot run per " +
                 "element; move it out of the loop (or write the element operation as an "
                 "assignment)");
    });
  }
  return Stmt(std::make_shared<const ForNode>(std::move(var), std::move(min), std::move(extent),
                                              kind, std::move(pipeline), std::move(body),
                                              std::move(loc)));
}

Stmt IfNode::make(Expr cond, Stmt then_case, Stmt else_case, SourceLoc loc) {
  if (!then_case.defined()) then_case = SeqNode::make({});
  return Stmt(std::make_shared<const IfNode>(cast(DataType::boolean(), std::move(cond)),
                                             std::move(then_case), std::move(else_case),
                                             std::move(loc)));
}

Stmt StoreNode::make(Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc) {
  check_indices(buffer, indices, ("store" + at(loc)).c_str());
  internal_check(value.defined(), "store of an undefined value");
  value = cast(buffer->dtype, std::move(value));
  return Stmt(std::make_shared<const StoreNode>(std::move(buffer), std::move(indices),
                                                std::move(value), std::move(loc)));
}

Stmt AllocNode::make(Buffer buffer, Expr init, bool is_var, SourceLoc loc) {
  if (buffer->scope == Scope::kGlobal) {
    user_error("'" + buffer->name + "'" + at(loc) +
               " is a global buffer; kernels allocate shared, fragment or local buffers only — "
               "pass global tensors as parameters");
  }
  if (init.defined()) init = cast(buffer->dtype, std::move(init));
  return Stmt(std::make_shared<const AllocNode>(std::move(buffer), std::move(init), is_var,
                                                std::move(loc)));
}

Stmt LetNode::make(Var var, Expr value, Stmt body, SourceLoc loc) {
  if (!body.defined()) body = SeqNode::make({});
  return Stmt(std::make_shared<const LetNode>(std::move(var), std::move(value), std::move(body),
                                              std::move(loc)));
}

Stmt BarrierNode::make(SourceLoc loc) {
  return Stmt(std::make_shared<const BarrierNode>(std::move(loc)));
}

TileOpCallNode::TileOpCallNode(std::shared_ptr<const TileOp> o)
    : StmtNode(kKind, o->loc()), op(std::move(o)) {}

Stmt TileOpCallNode::make(std::shared_ptr<const TileOp> op) {
  internal_check(op != nullptr, "null tile operator");
  return Stmt(std::make_shared<const TileOpCallNode>(std::move(op)));
}

Stmt PrintNode::make(Expr value, std::string msg, SourceLoc loc) {
  internal_check(value.defined(), "T.print of an undefined value");
  for (char c : msg) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '%') {
      user_error("T.print" + at(loc) +
                 ": msg may hold printable characters other than '\"', '\\' and '%'");
    }
  }
  return Stmt(std::make_shared<const PrintNode>(std::move(value), std::move(msg), std::move(loc)));
}

Stmt UseSwizzleNode::make(int panel_size, bool column_major, SourceLoc loc) {
  if (panel_size <= 0) {
    user_error("T.use_swizzle" + at(loc) + ": panel_size=" + std::to_string(panel_size) +
               "; it must be a positive number of blocks");
  }
  return Stmt(std::make_shared<const UseSwizzleNode>(panel_size, column_major, std::move(loc)));
}

}  // namespace tessel
