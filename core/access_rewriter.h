// A statement mutator that rewrites every buffer access — loads, stores and the buffer operands
// of intrinsic calls — through one function: the base of the passes that change where elements
// live (flattening through layouts, multi-buffering, register addressing in lowered loops).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/expr_functor.h"
#include "core/stmt_functor.h"

namespace tessel {

class AccessRewriter : public StmtMutator {
 public:
  using Access = std::pair<Buffer, std::vector<Expr>>;
  AccessRewriter() : loads_(*this) {}

  /// The new buffer and indices of an access (indices already rewritten), or nullopt to keep it.
  virtual std::optional<Access> rewrite(const Buffer& buffer, const std::vector<Expr>& indices) = 0;

 protected:
  /// Rewrites the loads inside an expression; subclasses that also rewrite other expression
  /// nodes (variables) override it and call this.
  Expr mutate_expr(const Expr& e) override { return loads_.mutate(e); }
  Stmt visit_Store(const StoreNode* op, const Stmt& s) override;
  Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override;

 private:
  class Loads : public ExprMutator {
   public:
    explicit Loads(AccessRewriter& r) : r_(r) {}

   protected:
    Expr visit_BufferLoad(const BufferLoadNode* op, const Expr& e) override;

   private:
    AccessRewriter& r_;
  };
  Loads loads_;
};

}  // namespace tessel
