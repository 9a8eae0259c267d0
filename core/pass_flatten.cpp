// Pass flatten_buffers: buffers take their storage form. A fragment becomes the per-thread
// register array of its layout: `C_local[i, j]` -> `C_local[local(i, j)]` (the calling thread holds
// the element — lowering made sure of that). A shared buffer with an inferred layout (a swizzle,
// padding) becomes one dimension: `A_shared[i, j]` -> `A_shared[layout(i, j)]`, the layout's
// outputs linearised row-major. Row-major shared buffers keep their shape, so the simulator
// still checks their accesses against the logical bounds. A TMA copy gets the tensor map's
// swizzle mode that places its box as the tile is laid out (core/tma_placement.h).
#include "core/access_rewriter.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/tma_placement.h"

namespace tessel {

namespace {

class Flattener : public AccessRewriter {
 public:
  explicit Flattener(const LoweringState& state) : state_(state) {}

  /// The storage buffer and index of an access, or nullopt when the buffer keeps its form.
  std::optional<Access> rewrite(const Buffer& b, const std::vector<Expr>& idx) override {
    if (b->scope == Scope::kFragment) {
      const Fragment* f = state_.layouts.fragment(b);
      if (!f) return std::nullopt;
      return Access{registers(b, *f), {f->forward(idx).second}};
    }
    if (b->scope == Scope::kShared || b->scope == Scope::kSharedDyn) {
      const Layout* l = state_.layouts.shared_layout(b);
      if (!l) return std::nullopt;
      std::vector<Expr> out = l->forward(idx);
      Expr flat = out[0];
      for (size_t d = 1; d < out.size(); ++d) flat = flat * l->output_shape()[d] + out[d];
      return Access{flat_buffer(b, *l), {flat}};
    }
    return std::nullopt;
  }

 protected:
  /// A TMA copy first gets the swizzle mode that places its box as the tile is laid out (its
  /// logical origin is still there to check it against), then its operands' storage form.
  Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
    const IntrinsicInfo& info = intrinsic_info(op->intrinsic);
    if (info.box_rank == 0) return AccessRewriter::visit_IntrinsicCall(op, s);
    const Buffer& tile = op->args[info.tma_shared].buffer;
    Stmt placed = with_tma_swizzle(*op, state_.layouts.shared_layout(tile), state_.kernel->name);
    if (!placed.as<IntrinsicCallNode>()) return mutate(placed);  // one copy per column panel
    return AccessRewriter::visit_IntrinsicCall(placed.as<IntrinsicCallNode>(), placed);
  }

  Stmt visit_Alloc(const AllocNode* op, const Stmt& s) override {
    std::vector<Expr> zero(op->buffer->ndim(), make_int(0));
    auto mapped = rewrite(op->buffer, zero);
    if (!mapped) return StmtMutator::visit_Alloc(op, s);
    return AllocNode::make(mapped->first, op->init, op->is_var, op->loc);
  }

 private:
  Buffer registers(const Buffer& b, const Fragment& f) {
    auto it = state_.registers.find(b.get());
    if (it != state_.registers.end()) return it->second;
    auto& made = made_[b.get()];
    if (!made.defined()) {
      made =
          BufferNode::make(b->name, {make_int(f.local_extent())}, b->dtype, Scope::kLocal, b->loc);
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
  std::map<const BufferNode*, Buffer> made_;
};

}  // namespace

Kernel flatten_buffers(const LoweringState& state) {
  return with_body(state.kernel, Flattener(state).mutate(state.kernel->body));
}

}  // namespace tessel
