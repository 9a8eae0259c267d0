// Pass flatten_buffers: buffers take their storage form. A fragment becomes the per-thread
// register array of its layout: `C_local[i, j]` -> `C_local[local(i, j)]` (the calling thread holds
// the element — lowering made sure of that). A shared buffer with an inferred layout (a swizzle,
// padding) becomes one dimension: `A_shared[i, j]` -> `A_shared[layout(i, j)]`, the layout's
// outputs linearised row-major. Row-major shared buffers keep their shape, so the simulator
// still checks their accesses against the logical bounds.
#include "core/expr_functor.h"
#include "core/passes.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

class Flattener : public StmtMutator {
 public:
  explicit Flattener(const LoweringState& state) : state_(state), loads_(*this) {}

  /// The storage buffer and index for an access, or nullopt when the buffer keeps its form.
  std::optional<std::pair<Buffer, std::vector<Expr>>> map(const Buffer& b,
                                                          const std::vector<Expr>& idx) {
    if (b->scope == Scope::kFragment) {
      const Fragment* f = state_.layouts.fragment(b);
      if (!f) return std::nullopt;
      return std::pair{registers(b, *f), std::vector<Expr>{f->forward(idx).second}};
    }
    if (b->scope == Scope::kShared || b->scope == Scope::kSharedDyn) {
      const Layout* l = state_.layouts.shared_layout(b);
      if (!l) return std::nullopt;
      std::vector<Expr> out = l->forward(idx);
      Expr flat = out[0];
      for (size_t d = 1; d < out.size(); ++d) flat = flat * l->output_shape()[d] + out[d];
      return std::pair{flat_buffer(b, *l), std::vector<Expr>{flat}};
    }
    return std::nullopt;
  }

 protected:
  Expr mutate_expr(const Expr& e) override { return loads_.mutate(e); }

  Stmt visit_Store(const StoreNode* op, const Stmt& s) override {
    Stmt m = StmtMutator::visit_Store(op, s);
    const auto* st = m.as<StoreNode>();
    auto mapped = map(st->buffer, st->indices);
    if (!mapped) return m;
    return StoreNode::make(mapped->first, mapped->second, st->value, st->loc);
  }
  Stmt visit_Alloc(const AllocNode* op, const Stmt& s) override {
    std::vector<Expr> zero(op->buffer->ndim(), make_int(0));
    auto mapped = map(op->buffer, zero);
    if (!mapped) return StmtMutator::visit_Alloc(op, s);
    return AllocNode::make(mapped->first, op->init, op->is_var, op->loc);
  }
  Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
    std::vector<IntrinsicArg> args = op->args;
    for (IntrinsicArg& a : args) {
      for (Expr& i : a.indices) i = mutate_expr(i);
      if (a.value.defined()) a.value = mutate_expr(a.value);
      if (!a.buffer.defined()) continue;
      if (auto mapped = map(a.buffer, a.indices)) {
        a.buffer = mapped->first;
        a.indices = mapped->second;
      }
    }
    return IntrinsicCallNode::make(op->intrinsic, std::move(args), op->loc);
  }

 private:
  class Loads : public ExprMutator {
   public:
    explicit Loads(Flattener& f) : f_(f) {}

   protected:
    Expr visit_BufferLoad(const BufferLoadNode* op, const Expr& e) override {
      Expr m = ExprMutator::visit_BufferLoad(op, e);
      const auto* ld = m.as<BufferLoadNode>();
      auto mapped = f_.map(ld->buffer, ld->indices);
      return mapped ? BufferLoadNode::make(mapped->first, mapped->second) : m;
    }

   private:
    Flattener& f_;
  };

  Buffer registers(const Buffer& b, const Fragment& f) {
    auto it = state_.registers.find(b.get());
    if (it != state_.registers.end()) return it->second;
    auto& made = made_[b.get()];
    if (!made.defined()) {
      made = BufferNode::make(b->name, {make_int(f.local_extent())}, b->dtype, Scope::kLocal, b->loc);
    }
    return made;
  }
  Buffer flat_buffer(const Buffer& b, const Layout& l) {
    auto& made = made_[b.get()];
    if (!made.defined()) {
      made = BufferNode::make(b->name, {make_int(l.output_size())}, b->dtype, b->scope, b->loc);
    }
    return made;
  }

  const LoweringState& state_;
  Loads loads_;
  std::map<const BufferNode*, Buffer> made_;
};

}  // namespace

Kernel flatten_buffers(const LoweringState& state) {
  return with_body(state.kernel, Flattener(state).mutate(state.kernel->body));
}

}  // namespace tessel
