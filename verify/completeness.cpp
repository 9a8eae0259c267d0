// The completeness check of a lowered kernel (see completeness.h).
#include "verify/completeness.h"

#include "core/expr_functor.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"
#include "verify/proof_parts.h"
#include "verify/kernel_accesses.h"

namespace tessel {

namespace {

std::string at(const SourceLoc& loc) { return loc.known() ? " at " + loc.str() : ""; }

/// What is left of the tile level, one description per leftover.
class Leftovers : public StmtVisitor {
 public:
  std::vector<std::string> found;

 protected:
  void visit_TileOpCall(const TileOpCallNode* op, const Stmt& s) override {
    found.push_back(op->op->describe() + " (`" + statement_text(s) + "`) is still a tile operator");
    StmtVisitor::visit_TileOpCall(op, s);
  }
  void visit_UseSwizzle(const UseSwizzleNode* op, const Stmt& s) override {
    found.push_back("T.use_swizzle" + at(op->loc) + " is still there");
    StmtVisitor::visit_UseSwizzle(op, s);
  }
  void visit_For(const ForNode* op, const Stmt& s) override {
    if (op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kPipelined) {
      found.push_back(std::string("the T.") + for_kind_name(op->for_kind) + " loop over " +
                      op->var.name() + at(op->loc) + " is still a tile-level loop");
    }
    StmtVisitor::visit_For(op, s);
  }
  void visit_Alloc(const AllocNode* op, const Stmt& s) override {
    if (op->buffer->scope == Scope::kFragment) {
      found.push_back("fragment '" + op->buffer->name + "'" + at(op->loc) +
                      " was not turned into registers");
    }
    StmtVisitor::visit_Alloc(op, s);
  }
};

}  // namespace

KernelCheck check_complete(const Kernel& lowered) {
  proof_detail::Stopwatch clock;
  Leftovers l;
  l.visit(lowered->body);
  KernelCheck c{
      "complete: no tile operator, T.Parallel/T.Pipelined loop, T.use_swizzle or "
      "fragment buffer is left after lowering",
      "proved", std::nullopt, 0};
  if (!l.found.empty()) {
    c.result = "failed";
    std::string text;
    for (size_t k = 0; k < l.found.size() && k < 5; ++k) text += (k ? "; " : "") + l.found[k];
    if (l.found.size() > 5) text += "; and " + std::to_string(l.found.size() - 5) + " more";
    c.counterexample = text +
                       " — the thread level and codegen cannot run it: the lowering missed it "
                       "(a bug in Tessel: report the kernel)";
  }
  c.ms = clock.ms();
  return c;
}

}  // namespace tessel
