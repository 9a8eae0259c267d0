// Structural kernel equality: a lock-step walk of two kernels that maps the variables and
// buffers each one defines onto the other's, and reports the first place they differ.
#include "core/kernel_equal.h"

#include <typeinfo>
#include <unordered_map>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/op_gemm.h"
#include "core/op_reduce.h"
#include "core/printer.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

/// The first line a statement prints as, to say where a difference is.
std::string headline(const Stmt& s) {
  std::string text = print_stmt(s, 0);
  return "`" + text.substr(0, text.find('\n')) + "`";
}

std::string text(const Expr& e) { return e.defined() ? "`" + to_string(e) + "`" : "nothing"; }

class Comparer {
 public:
  std::optional<std::string> diff;

  bool kernel(const Kernel& a, const Kernel& b) {
    const KernelNode &x = *a, &y = *b;
    if (x.name != y.name) return fail("kernel name", "'" + x.name + "' vs '" + y.name + "'");
    if (x.threads != y.threads) {
      return fail("threads", std::to_string(x.threads) + " vs " + std::to_string(y.threads));
    }
    if (x.thread_dims != y.thread_dims) return fail("threads", "different block shapes (x, y, z)");
    if (x.dynamic_vars.size() != y.dynamic_vars.size()) {
      return fail("symbolic dimensions", std::to_string(x.dynamic_vars.size()) + " vs " +
                                             std::to_string(y.dynamic_vars.size()));
    }
    for (size_t i = 0; i < x.dynamic_vars.size(); ++i) {
      if (!define_var(x.dynamic_vars[i], y.dynamic_vars[i], "symbolic dimension")) return false;
    }
    if (x.params.size() != y.params.size()) {
      return fail("parameters",
                  std::to_string(x.params.size()) + " vs " + std::to_string(y.params.size()));
    }
    for (size_t i = 0; i < x.params.size(); ++i) {
      if (!define_buffer(x.params[i], y.params[i], "parameter " + std::to_string(i))) return false;
    }
    if (x.grid.size() != y.grid.size()) return fail("grid", "different number of extents");
    for (size_t i = 0; i < x.grid.size(); ++i) {
      if (!check(x.grid[i], y.grid[i], "grid extent " + std::to_string(i))) return false;
    }
    if (x.block_vars.size() != y.block_vars.size()) return fail("block indices", "count");
    for (size_t i = 0; i < x.block_vars.size(); ++i) {
      if (!define_var(x.block_vars[i], y.block_vars[i], "block index")) return false;
    }
    if (x.thread_var.defined() != y.thread_var.defined()) return fail("thread index", "defined");
    if (x.thread_var.defined() && !define_var(x.thread_var, y.thread_var, "thread index")) {
      return false;
    }
    if (x.scratch.size() != y.scratch.size()) return fail("T.alloc_global scratch", "count");
    for (size_t i = 0; i < x.scratch.size(); ++i) {
      if (!define_buffer(x.scratch[i], y.scratch[i], "scratch " + std::to_string(i))) return false;
    }
    if (x.launches.size() != y.launches.size()) {
      return fail("launches",
                  std::to_string(x.launches.size()) + " vs " + std::to_string(y.launches.size()));
    }
    for (size_t i = 0; i < x.launches.size(); ++i) {
      if (!kernel(x.launches[i], y.launches[i])) return false;
    }
    return stmt(x.body, y.body, "body");
  }

 private:
  bool fail(const std::string& where, const std::string& what) {
    if (!diff) diff = where + ": " + what;
    return false;
  }

  bool define_var(const Var& a, const Var& b, const std::string& what) {
    if (a.name() != b.name() || a.dtype() != b.dtype()) {
      return fail(what, "'" + a.name() + "' (" + a.dtype().name() + ") vs '" + b.name() + "' (" +
                            b.dtype().name() + ")");
    }
    vars_[a.get()] = b.get();
    return true;
  }

  bool define_buffer(const Buffer& a, const Buffer& b, const std::string& where) {
    if (a->name != b->name || a->dtype != b->dtype || a->scope != b->scope ||
        a->ndim() != b->ndim()) {
      return fail(where, "buffer '" + a->name + "' " + a->dtype.name() + " " +
                             scope_name(a->scope) + " vs '" + b->name + "' " + b->dtype.name() +
                             " " + scope_name(b->scope));
    }
    for (size_t d = 0; d < a->ndim(); ++d) {
      if (!check(a->shape[d], b->shape[d], where + ", shape of '" + a->name + "'")) return false;
    }
    buffers_[a.get()] = b.get();
    return true;
  }

  bool same_buffer(const Buffer& a, const Buffer& b) const {
    auto it = buffers_.find(a.get());
    return it != buffers_.end() ? it->second == b.get() : a.same_as(b);
  }

  bool same(const Expr& a, const Expr& b) const {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    switch (a.kind()) {
      case ExprKind::kIntImm:
        return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case ExprKind::kFloatImm: {
        double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
        return x == y || (x != x && y != y);
      }
      case ExprKind::kVar: {
        auto it = vars_.find(a.get());
        return it != vars_.end() ? it->second == b.get() : a.same_as(b);
      }
      case ExprKind::kBufferLoad:
        if (!same_buffer(a.as<BufferLoadNode>()->buffer, b.as<BufferLoadNode>()->buffer)) {
          return false;
        }
        break;
      case ExprKind::kCall:
        if (a.as<CallNode>()->op != b.as<CallNode>()->op) return false;
        break;
      default:
        break;
    }
    std::vector<Expr> x = expr_children(a), y = expr_children(b);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!same(x[i], y[i])) return false;
    }
    return true;
  }

  bool check(const Expr& a, const Expr& b, const std::string& where) {
    return same(a, b) || fail(where, text(a) + " vs " + text(b));
  }

  bool check_all(const std::vector<Expr>& a, const std::vector<Expr>& b, const std::string& where) {
    if (a.size() != b.size()) return fail(where, "different number of indices");
    for (size_t i = 0; i < a.size(); ++i) {
      if (!check(a[i], b[i], where)) return false;
    }
    return true;
  }

  bool region(const BufferRegion& a, const BufferRegion& b, const std::string& where) {
    if (!same_buffer(a.buffer, b.buffer)) {
      return fail(where, "region of '" + a.buffer->name + "' vs '" + b.buffer->name + "'");
    }
    if (a.point_form != b.point_form || a.ranges.size() != b.ranges.size()) {
      return fail(where, region_to_string(a) + " vs " + region_to_string(b));
    }
    for (size_t d = 0; d < a.ranges.size(); ++d) {
      if (!check(a.ranges[d].min, b.ranges[d].min, where) ||
          !check(a.ranges[d].extent, b.ranges[d].extent,
                 where + ", extent of dimension " + std::to_string(d))) {
        return false;
      }
    }
    return true;
  }

  bool op(const TileOp& a, const TileOp& b, const std::string& where) {
    if (typeid(a) != typeid(b) || a.name() != b.name()) {
      return fail(where, "T." + a.name() + " vs T." + b.name());
    }
    auto ra = a.reads(), rb = b.reads(), wa = a.writes(), wb = b.writes();
    if (ra.size() != rb.size() || wa.size() != wb.size()) return fail(where, "operands differ");
    for (size_t i = 0; i < ra.size(); ++i) {
      if (!region(ra[i], rb[i], where)) return false;
    }
    for (size_t i = 0; i < wa.size(); ++i) {
      if (!region(wa[i], wb[i], where)) return false;
    }
    std::vector<Expr> ea, eb;
    (void)a.map_exprs([&](const Expr& e) {
      ea.push_back(e);
      return e;
    });
    (void)b.map_exprs([&](const Expr& e) {
      eb.push_back(e);
      return e;
    });
    if (!check_all(ea, eb, where)) return false;
    if (const auto* ga = dynamic_cast<const GemmOp*>(&a)) {
      const auto* gb = dynamic_cast<const GemmOp*>(&b);
      const GemmOptions &x = ga->options(), &y = gb->options();
      if (x.transpose_A != y.transpose_A || x.transpose_B != y.transpose_B ||
          x.clear_accum != y.clear_accum || x.policy != y.policy) {
        return fail(where, "gemm options differ");
      }
    }
    if (const auto* pa = dynamic_cast<const ReduceOp*>(&a)) {
      const auto* pb = dynamic_cast<const ReduceOp*>(&b);
      if (pa->dim() != pb->dim() || pa->clear() != pb->clear()) {
        return fail(where, "dim or clear differ");
      }
    }
    // Everything else the operator prints (keywords, which operand is which) must agree too.
    return a.to_string() == b.to_string() || fail(where, a.to_string() + " vs " + b.to_string());
  }

  bool stmt(const Stmt& a, const Stmt& b, const std::string& where) {
    if (!a.defined() || !b.defined()) {
      return a.defined() == b.defined() || fail(where, "a statement is missing on one side");
    }
    if (a.kind() != b.kind()) return fail(where, headline(a) + " vs " + headline(b));
    std::string here = where + ", " + headline(a);
    switch (a.kind()) {
      case StmtKind::kSeq: {
        const auto &x = a.as<SeqNode>()->stmts, &y = b.as<SeqNode>()->stmts;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
          if (!stmt(x[i], y[i], where + ", statement " + std::to_string(i + 1))) return false;
        }
        if (x.size() != y.size()) {
          return fail(where,
                      std::to_string(x.size()) + " statements vs " + std::to_string(y.size()));
        }
        return true;
      }
      case StmtKind::kFor: {
        const auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
        if (x->for_kind != y->for_kind || x->pipeline.num_stages != y->pipeline.num_stages ||
            x->pipeline.order != y->pipeline.order || x->pipeline.stage != y->pipeline.stage) {
          return fail(here, headline(b));
        }
        return check(x->min, y->min, here) && check(x->extent, y->extent, here) &&
               define_var(x->var, y->var, here) && stmt(x->body, y->body, here);
      }
      case StmtKind::kIf: {
        const auto *x = a.as<IfNode>(), *y = b.as<IfNode>();
        return check(x->cond, y->cond, here) && stmt(x->then_case, y->then_case, here) &&
               stmt(x->else_case, y->else_case, here + " (else)");
      }
      case StmtKind::kStore: {
        const auto *x = a.as<StoreNode>(), *y = b.as<StoreNode>();
        if (!same_buffer(x->buffer, y->buffer)) return fail(here, headline(b));
        return check_all(x->indices, y->indices, here) && check(x->value, y->value, here);
      }
      case StmtKind::kAlloc: {
        const auto *x = a.as<AllocNode>(), *y = b.as<AllocNode>();
        if (x->is_var != y->is_var) return fail(here, headline(b));
        return check(x->init, y->init, here) && define_buffer(x->buffer, y->buffer, here);
      }
      case StmtKind::kLet: {
        const auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
        return check(x->value, y->value, here) && define_var(x->var, y->var, here) &&
               stmt(x->body, y->body, where);
      }
      case StmtKind::kBarrier:
        return true;
      case StmtKind::kTileOpCall:
        return op(*a.as<TileOpCallNode>()->op, *b.as<TileOpCallNode>()->op, here);
      case StmtKind::kPrint: {
        const auto *x = a.as<PrintNode>(), *y = b.as<PrintNode>();
        return (x->msg == y->msg || fail(here, headline(b))) && check(x->value, y->value, here);
      }
      case StmtKind::kUseSwizzle: {
        const auto *x = a.as<UseSwizzleNode>(), *y = b.as<UseSwizzleNode>();
        return (x->panel_size == y->panel_size && x->column_major == y->column_major) ||
               fail(here, headline(b));
      }
      case StmtKind::kIntrinsicCall: {
        const auto *x = a.as<IntrinsicCallNode>(), *y = b.as<IntrinsicCallNode>();
        if (x->intrinsic != y->intrinsic || x->args.size() != y->args.size()) {
          return fail(here, headline(b));
        }
        for (size_t i = 0; i < x->args.size(); ++i) {
          const IntrinsicArg &p = x->args[i], &q = y->args[i];
          if (p.buffer.defined() != q.buffer.defined() ||
              (p.buffer.defined() && !same_buffer(p.buffer, q.buffer))) {
            return fail(here, "operand " + std::to_string(i));
          }
          if (!check_all(p.indices, q.indices, here) || !check(p.value, q.value, here)) {
            return false;
          }
        }
        return true;
      }
    }
    return fail(here, "unknown statement kind");
  }

  std::unordered_map<const ExprNode*, const ExprNode*> vars_;
  std::unordered_map<const BufferNode*, const BufferNode*> buffers_;
};

}  // namespace

std::optional<std::string> kernel_difference(const Kernel& a, const Kernel& b) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return std::nullopt;
    return std::string("one kernel is undefined");
  }
  Comparer c;
  c.kernel(a, b);
  return c.diff;
}

bool kernel_equal(const Kernel& a, const Kernel& b) { return !kernel_difference(a, b); }

}  // namespace tessel
