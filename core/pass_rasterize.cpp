// Pass rasterize_blocks: T.use_swizzle(panel) remaps the block indices so that consecutive blocks
// walk a panel of `panel` columns top to bottom before moving right (better L2 reuse of the
// shared operand tiles). With grid (gx, gy), linear = by * gx + bx:
//   panel = linear // (P * gy)              which panel of P columns
//   w     = min(P, gx - panel * P)          its width (the last one may be narrower)
//   off   = linear - panel * P * gy         position inside the panel
//   bx'   = panel * P + off % w,  by' = off // w
// Every earlier panel is full, so panel p starts at linear p * P * gy and holds w * gy blocks:
// the map is a bijection of the grid. column_major=True swaps the roles of x and y. A 3-d grid's
// z index (the batch: heads, split-K slices) is left as it is, so each z plane is rasterised alone.
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/passes.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

class SwizzleRemover : public StmtMutator {
 public:
  const UseSwizzleNode* found = nullptr;

 protected:
  Stmt visit_UseSwizzle(const UseSwizzleNode* op, const Stmt&) override {
    if (found) user_error("T.use_swizzle at " + op->loc.str() + " appears twice; keep one");
    found = op;
    return SeqNode::make({});
  }
};

class BlockSubstituter : public StmtMutator {
 public:
  BlockSubstituter(Var from_x, Var to_x, Var from_y, Var to_y)
      : fx_(std::move(from_x)),
        tx_(std::move(to_x)),
        fy_(std::move(from_y)),
        ty_(std::move(to_y)) {}

 protected:
  Expr mutate_expr(const Expr& e) override {
    return substitute(e, [&](const Var& v) -> Expr {
      if (v.same_as(fx_)) return tx_;
      if (v.same_as(fy_)) return ty_;
      return Expr();
    });
  }

 private:
  Var fx_, tx_, fy_, ty_;
};

}  // namespace

Kernel rasterize_blocks(const Kernel& kernel) {
  SwizzleRemover remover;
  Stmt body = remover.mutate(kernel->body);
  if (!remover.found) return kernel;
  const UseSwizzleNode& sw = *remover.found;
  if (kernel->grid.size() < 2) {
    user_error("kernel '" + kernel->name + "': T.use_swizzle at " + sw.loc.str() +
               " needs a 2-d or 3-d grid (bx, by[, bz]); this kernel's grid has " +
               std::to_string(kernel->grid.size()) + " dimension; remove it");
  }
  const bool col = sw.column_major;
  Var bx = kernel->block_vars[col ? 1 : 0], by = kernel->block_vars[col ? 0 : 1];
  Expr gx = kernel->grid[col ? 1 : 0], gy = kernel->grid[col ? 0 : 1];
  Expr p = make_int(sw.panel_size);
  Expr linear = by * gx + bx;
  Expr panel = floordiv(linear, p * gy);
  Expr width = min(p, gx - panel * p);
  Expr off = linear - panel * p * gy;
  Var new_x(bx.name() + "_r"), new_y(by.name() + "_r");
  body = BlockSubstituter(bx, new_x, by, new_y).mutate(body);
  body = LetNode::make(new_y, floordiv(off, width), body, sw.loc);
  body = LetNode::make(new_x, panel * p + floormod(off, width), body, sw.loc);
  return with_body(kernel, body);
}

}  // namespace tessel
