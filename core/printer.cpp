// The kernel and statement printer.
#include "core/printer.h"

#include <sstream>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

std::string tuple(const std::vector<Expr>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + to_string(items[i]);
  return s + (items.size() == 1 ? ",)" : ")");
}

std::string int_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

class StmtPrinter {
 public:
  explicit StmtPrinter(std::ostringstream& os) : os_(os) {}

  void print(const Stmt& s, int indent) {
    switch (s.kind()) {
      case StmtKind::kSeq: {
        const auto& stmts = s.as<SeqNode>()->stmts;
        if (stmts.empty()) line(indent, "pass");
        for (const Stmt& c : stmts) print(c, indent);
        break;
      }
      case StmtKind::kFor:
        print_for(s.as<ForNode>(), indent);
        break;
      case StmtKind::kIf: {
        const auto* op = s.as<IfNode>();
        line(indent, "if " + to_string(op->cond) + ":");
        print(op->then_case, indent + 1);
        if (op->else_case.defined()) {
          line(indent, "else:");
          print(op->else_case, indent + 1);
        }
        break;
      }
      case StmtKind::kStore: {
        const auto* op = s.as<StoreNode>();
        line(indent, to_string(BufferLoadNode::make(op->buffer, op->indices)) + " = " +
                         to_string(op->value));
        break;
      }
      case StmtKind::kAlloc:
        print_alloc(s.as<AllocNode>(), indent);
        break;
      case StmtKind::kLet: {
        const auto* op = s.as<LetNode>();
        line(indent, op->var.name() + " = " + to_string(op->value));
        print(op->body, indent);
        break;
      }
      case StmtKind::kBarrier:
        line(indent, "T.sync_threads()");
        break;
      case StmtKind::kTileOpCall:
        line(indent, s.as<TileOpCallNode>()->op->to_string());
        break;
      case StmtKind::kUseSwizzle: {
        const auto* op = s.as<UseSwizzleNode>();
        line(indent, "T.use_swizzle(panel_size=" + std::to_string(op->panel_size) +
                         (op->column_major ? ", order=\"column\")" : ")"));
        break;
      }
      case StmtKind::kIntrinsicCall:
        line(indent, intrinsic_call_to_string(*s.as<IntrinsicCallNode>()));
        break;
      case StmtKind::kPrint: {
        const auto* op = s.as<PrintNode>();
        line(indent, "T.print(" + to_string(op->value) +
                         (op->msg.empty() ? ")" : ", msg=\"" + op->msg + "\")"));
        break;
      }
    }
  }

 private:
  void print_for(const ForNode* op, int indent) {
    // Nested T.Parallel loops print as one `for i, j in T.Parallel(a, b):`.
    std::vector<const ForNode*> nest{op};
    while (op->for_kind == ForKind::kParallel) {
      const auto* inner = nest.back()->body.as<ForNode>();
      if (!inner || inner->for_kind != ForKind::kParallel || as_const_int(inner->min) != 0) break;
      nest.push_back(inner);
    }
    std::string vars, extents;
    for (size_t i = 0; i < nest.size(); ++i) {
      vars += (i ? ", " : "") + nest[i]->var.name();
      extents += (i ? ", " : "") + range_args(nest[i]);
    }
    std::string head = "for " + vars + " in T." + for_kind_name(op->for_kind) + "(" + extents;
    if (op->for_kind == ForKind::kPipelined) {
      head += ", num_stages=" + std::to_string(op->pipeline.num_stages);
      if (!op->pipeline.order.empty()) head += ", order=" + int_list(op->pipeline.order);
      if (!op->pipeline.stage.empty()) head += ", stage=" + int_list(op->pipeline.stage);
    }
    line(indent, head + "):");
    print(nest.back()->body, indent + 1);
  }

  static std::string range_args(const ForNode* op) {
    if (as_const_int(op->min) == 0) return to_string(op->extent);
    return to_string(op->min) + ", " + to_string(op->min + op->extent);
  }

  void print_alloc(const AllocNode* op, int indent) {
    const Buffer& b = op->buffer;
    std::string dtype = "\"" + b->dtype.name() + "\"";
    std::string rhs;
    if (op->is_var) {
      rhs = "T.alloc_var(" + dtype + (op->init.defined() ? ", init=" + to_string(op->init) : "") +
            ")";
    } else {
      const char* fn = b->scope == Scope::kFragment ? "T.alloc_fragment"
                       : b->scope == Scope::kLocal  ? "T.alloc_local"
                                                    : "T.alloc_shared";
      rhs = std::string(fn) + "(" + tuple(b->shape) + ", " + dtype +
            (b->scope == Scope::kSharedDyn ? ", scope=\"shared.dyn\"" : "") + ")";
    }
    line(indent, b->name + " = " + rhs);
  }

  void line(int indent, const std::string& text) {
    os_ << std::string(4 * indent, ' ') << text << "\n";
  }

  std::ostringstream& os_;
};

bool uses_thread_var(const Stmt& body, const Var& tx) {
  bool used = false;
  for_each_expr(body, [&](const Expr& e) { used = used || uses_var(e, tx); });
  return used;
}

/// `with T.Kernel(...) as (...):` and the body of one launch, at indent 1.
void print_launch(std::ostringstream& os, const KernelNode& k) {
  os << "    with T.Kernel(";
  for (const Expr& g : k.grid) os << to_string(g) << ", ";
  os << "threads=";
  if (k.thread_dims.size() > 1) {
    os << "(";
    for (size_t d = 0; d < k.thread_dims.size(); ++d) os << (d ? ", " : "") << k.thread_dims[d];
    os << ")";
  } else {
    os << k.threads;
  }
  os << ") as (";
  for (size_t i = 0; i < k.block_vars.size(); ++i) {
    os << (i ? ", " : "") << k.block_vars[i].name();
  }
  os << (k.block_vars.size() == 1 ? ",):\n" : "):\n");
  if (k.thread_var.defined() && uses_thread_var(k.body, k.thread_var)) {
    os << "        " << k.thread_var.name()
       << (k.thread_dims.size() > 1 ? " = T.linear_thread_index()\n"
                                    : " = T.get_thread_binding()\n");
  }
  StmtPrinter(os).print(k.body, 2);
}

}  // namespace

std::string print_stmt(const Stmt& stmt, int indent) {
  std::ostringstream os;
  StmtPrinter(os).print(stmt, indent);
  return os.str();
}

std::string print_kernel(const Kernel& kernel) {
  const KernelNode& k = *kernel;
  std::ostringstream os;
  for (const Var& v : k.dynamic_vars) os << v.name() << " = T.dynamic(\"" << v.name() << "\")\n";
  os << "@T.prim_func\ndef " << k.name << "(";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Buffer& b = k.params[i];
    os << (i ? ", " : "") << b->name << ": T.Tensor(" << tuple(b->shape) << ", \""
       << b->dtype.name() << "\")";
  }
  os << "):\n";
  // A kernel of several launches: its global scratch first, then each launch in order.
  for (const Buffer& b : k.scratch) {
    os << "    " << b->name << " = T.alloc_global(" << tuple(b->shape) << ", \"" << b->dtype.name()
       << "\")\n";
  }
  for (const Kernel& launch : launches_of(kernel)) print_launch(os, *launch);
  return os.str();
}

}  // namespace tessel
