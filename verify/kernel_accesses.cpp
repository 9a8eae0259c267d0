// Collects the register reads and writes of a thread-level kernel with their loops, conditions
// and program order (see kernel_accesses.h).
#include "verify/kernel_accesses.h"

#include <map>
#include <set>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/vector_copy.h"

namespace tessel {

namespace {

bool reads_data(const Expr& e) {
  bool found = false;
  pre_order_visit(e, [&](const Expr& x) {
    found |=
        x.as<BufferLoadNode>() != nullptr || x.kind() == ExprKind::kCall || x.dtype().is_float();
  });
  return found;
}

class Collector : public EnclosingWalker {
 public:
  KernelAccesses run(const Kernel& kernel) {
    bind_kernel_vars(analyzer_, kernel);
    visit(kernel->body);
    return std::move(found_);
  }

 private:
  /// `e` with every let whose value is known substituted.
  Expr rewrite(const Expr& e) const {
    if (lets_.empty()) return e;
    return substitute(e, [&](const Var& v) -> Expr {
      auto it = lets_.find(v.get());
      return it == lets_.end() ? Expr() : it->second;
    });
  }

  /// True when `e` (rewritten) mentions a let whose value depends on loaded data.
  bool mentions_opaque(const Expr& e) const {
    bool found = false;
    pre_order_visit(e, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>()) found |= opaque_vars_.count(v) > 0;
    });
    return found;
  }

  /// Records the register accesses `e` makes (its loads of local buffers), under `guard`.
  void scan(const Expr& e, const Stmt& s, const Expr& guard = Expr()) {
    if (!e.defined()) return;
    if (const auto* sel = e.as<SelectNode>()) {
      scan(sel->cond, s, guard);
      Expr c = rewrite(sel->cond);
      if (reads_data(c) || mentions_opaque(c)) {  // either arm may be read
        scan(sel->t, s, guard);
        scan(sel->f, s, guard);
        return;
      }
      scan(sel->t, s, guard.defined() ? (guard && c) : c);
      scan(sel->f, s, guard.defined() ? (guard && !c) : !c);
      return;
    }
    if (const auto* load = e.as<BufferLoadNode>()) {
      for (const Expr& i : load->indices) scan(i, s, guard);
      if (is_per_thread(load->buffer->scope)) add(load->buffer, load->indices, 1, false, s, guard);
      if (load->buffer->scope == Scope::kGlobal)
        add_global(load->buffer, load->indices, false, s, guard);
      return;
    }
    for (const Expr& c : expr_children(e)) scan(c, s, guard);
  }

  void add(const Buffer& b, const std::vector<Expr>& indices, int64_t count, bool write,
           const Stmt& s, const Expr& guard = Expr()) {
    RegisterAccess a;
    a.buffer = b;
    Expr index = rewrite(row_major_offset(b, indices));
    a.opaque = reads_data(index) || mentions_opaque(index);
    a.index = index;
    a.count = count;
    a.write = write;
    a.guard = guard;
    a.enclosing = frames();
    a.order = order_;
    a.stmt = s;
    found_.registers.push_back(std::move(a));
  }

  void add_global(const Buffer& b, const std::vector<Expr>& indices, bool write, const Stmt& s,
                  const Expr& guard = Expr()) {
    GlobalAccess a;
    a.buffer = b;
    for (const Expr& i : indices) {
      Expr r = rewrite(i);
      a.opaque = a.opaque || reads_data(r) || mentions_opaque(r);
      a.indices.push_back(r);
    }
    a.write = write;
    a.guard = guard;
    a.enclosing = frames();
    a.stmt = s;
    found_.global.push_back(std::move(a));
  }

  void add_aligned(const Buffer& b, const std::vector<Expr>& indices, int64_t bytes,
                   std::string what, const Stmt& s) {
    AlignedAccess a;
    a.buffer = b;
    for (const Expr& i : indices) {
      Expr r = rewrite(i);
      a.opaque = a.opaque || reads_data(r) || mentions_opaque(r);
      a.indices.push_back(r);
    }
    a.bytes = bytes;
    a.what = std::move(what);
    a.enclosing = frames();
    a.stmt = s;
    found_.aligned.push_back(std::move(a));
  }

  Enclosing loop_frame(const ForNode& loop, const Stmt& s) override {
    const ForNode* op = &loop;
    ++order_;
    scan(op->min, s);
    scan(op->extent, s);
    bind_loop(analyzer_, *op);
    if (std::optional<VectorCopy> c = match_vector_copy(*op, analyzer_)) {
      // Codegen moves the run as one access: its first element, for v = 0.
      auto first = [&](const std::vector<Expr>& idx) {
        std::vector<Expr> out;
        for (const Expr& i : idx) {
          out.push_back(substitute(
              i, [&](const Var& v) -> Expr { return v.same_as(op->var) ? make_int(0) : Expr(); }));
        }
        return out;
      };
      const std::string bytes = std::to_string(c->bytes) + "-byte vector copy ";
      add_aligned(c->store->buffer, first(c->store->indices), c->bytes, bytes + "destination", s);
      add_aligned(c->load->buffer, first(c->load->indices), c->bytes, bytes + "source", s);
    }
    Enclosing e;
    e.node = op;
    e.var = op->var;
    Expr min = rewrite(op->min), extent = rewrite(op->extent);
    bool data =
        reads_data(min) || reads_data(extent) || mentions_opaque(min) || mentions_opaque(extent);
    if (!data) {
      e.min = min;
      e.extent = extent;
    }
    e.text = "for " + op->var.name() + " in range(" + to_string(op->min) + ", " +
             to_string(op->min + op->extent) + ")";
    if (data) opaque_vars_.insert(op->var.get());
    return e;
  }

  void enter_if(const IfNode& op, const Stmt& s) override {
    ++order_;
    scan(op.cond, s);
  }

  Enclosing branch_frame(const IfNode& op, bool negated) override {
    Expr c = rewrite(op.cond);
    bool data = reads_data(c) || mentions_opaque(c);
    Enclosing e;
    e.node = &op;
    e.negated = negated;
    if (!data) e.cond = negated ? !c : c;
    e.text = negated ? "if not (" + to_string(op.cond) + ")" : "if " + to_string(op.cond);
    return e;
  }

  void visit_Store(const StoreNode* op, const Stmt& s) override {
    ++order_;
    for (const Expr& i : op->indices) scan(i, s);
    scan(op->value, s);
    if (is_per_thread(op->buffer->scope)) add(op->buffer, op->indices, 1, true, s);
    if (op->buffer->scope == Scope::kGlobal) add_global(op->buffer, op->indices, true, s);
  }

  void visit_Alloc(const AllocNode* op, const Stmt& s) override {
    ++order_;
    if (!op->init.defined()) return;
    scan(op->init, s);
    if (is_per_thread(op->buffer->scope)) {
      std::vector<Expr> zero(op->buffer->ndim(), make_int(0));
      add(op->buffer, zero, 1, true, s);
    }
  }

  /// Lets are substituted, not frames: a let whose value depends on loaded data makes what
  /// mentions it opaque.
  std::optional<Enclosing> let_frame(const LetNode& op, const Stmt& s) override {
    ++order_;
    scan(op.value, s);
    Expr v = rewrite(op.value);
    if (reads_data(v) || mentions_opaque(v)) {
      opaque_vars_.insert(op.var.get());
    } else {
      lets_[op.var.get()] = v;
    }
    return std::nullopt;
  }

  void visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
    ++order_;
    const IntrinsicInfo& info = intrinsic_info(op->intrinsic);
    // Reads first (an mma reads C before it writes D), then writes.
    for (bool writes : {false, true}) {
      for (size_t k = 0; k < op->args.size() && k < info.operands.size(); ++k) {
        const IntrinsicArg& arg = op->args[k];
        const IntrinsicOperand& operand = info.operands[k];
        if (!writes) {
          for (const Expr& i : arg.indices) scan(i, s);
          if (arg.value.defined()) scan(arg.value, s);
        }
        if (!writes && arg.buffer.defined() && !is_per_thread(arg.buffer->scope)) {
          std::optional<OperandMemoryAccess> a = info.home->memory_access(info, k);
          if (a && a->align > 1) add_aligned(arg.buffer, arg.indices, a->align, a->what, s);
        }
        if (!arg.buffer.defined() || !is_per_thread(arg.buffer->scope)) continue;
        if (operand.written != writes) continue;
        int64_t count = operand.kind == OperandKind::kRegisters ? std::max(1, operand.elements) : 1;
        if (operand.kind == OperandKind::kRegisters && operand.elements == 0) {
          // A run whose length the call gives: wgmma's accumulator, n / 2 registers.
          for (size_t j = 0; j < info.operands.size(); ++j) {
            if (info.operands[j].name != "n" || j >= op->args.size()) continue;
            if (auto n = as_const_int(op->args[j].value)) count = std::max<int64_t>(1, *n / 2);
          }
        }
        add(arg.buffer, arg.indices, count, writes, s);
      }
    }
  }

  void visit_Barrier(const BarrierNode*, const Stmt&) override { ++order_; }
  void visit_TileOpCall(const TileOpCallNode*, const Stmt&) override { ++order_; }
  void visit_UseSwizzle(const UseSwizzleNode*, const Stmt&) override { ++order_; }
  void visit_Print(const PrintNode* op, const Stmt& s) override {
    ++order_;
    scan(op->value, s);
  }

  std::map<const ExprNode*, Expr> lets_;
  std::set<const ExprNode*> opaque_vars_;  ///< lets and loop variables that depend on data
  int64_t order_ = 0;
  Analyzer analyzer_;  ///< bound as codegen binds, to recognise its vector copies
  KernelAccesses found_;
};

}  // namespace

Expr row_major_offset(const Buffer& b, const std::vector<Expr>& indices) {
  Expr off = indices[0];
  for (size_t d = 1; d < indices.size(); ++d) off = off * b->shape[d] + indices[d];
  return off;
}

Enclosing EnclosingWalker::loop_frame(const ForNode& op, const Stmt&) {
  Enclosing e;
  e.node = &op;
  e.var = op.var;
  e.min = op.min;
  e.extent = op.extent;
  return e;
}

void EnclosingWalker::enter_if(const IfNode&, const Stmt&) {}

Enclosing EnclosingWalker::branch_frame(const IfNode& op, bool negated) {
  Enclosing e;
  e.node = &op;
  e.negated = negated;
  e.cond = negated ? !op.cond : op.cond;
  e.text = to_string(e.cond);
  return e;
}

std::optional<Enclosing> EnclosingWalker::let_frame(const LetNode& op, const Stmt&) {
  Enclosing e;
  e.node = &op;
  e.cond = Expr(op.var) == op.value;
  e.text = op.var.name() + " = " + to_string(op.value);
  return e;
}

void EnclosingWalker::visit_Seq(const SeqNode* op, const Stmt&) {
  for (const Stmt& c : op->stmts) visit(c);
}

void EnclosingWalker::visit_For(const ForNode* op, const Stmt& s) {
  visit_under(loop_frame(*op, s), op->body);
}

void EnclosingWalker::visit_If(const IfNode* op, const Stmt& s) {
  enter_if(*op, s);
  // Both frames before either branch: what a branch's statements change must not reach them.
  Enclosing then_frame = branch_frame(*op, false);
  std::optional<Enclosing> else_frame;
  if (op->else_case.defined()) else_frame = branch_frame(*op, true);
  visit_under(std::move(then_frame), op->then_case);
  if (else_frame) visit_under(std::move(*else_frame), op->else_case);
}

void EnclosingWalker::visit_Let(const LetNode* op, const Stmt& s) {
  if (std::optional<Enclosing> frame = let_frame(*op, s)) {
    visit_under(std::move(*frame), op->body);
  } else {
    visit(op->body);
  }
}

void EnclosingWalker::visit_under(Enclosing frame, const Stmt& body) {
  if (!body.defined()) return;
  frames_.push_back(std::move(frame));
  visit(body);
  frames_.pop_back();
}

KernelAccesses collect_accesses(const Kernel& kernel) { return Collector().run(kernel); }

std::string statement_text(const Stmt& s) {
  std::string text = print_stmt(s);
  size_t end = text.find('\n');
  if (end != std::string::npos) text.resize(end);
  size_t start = text.find_first_not_of(' ');
  return start == std::string::npos ? text : text.substr(start);
}

}  // namespace tessel
