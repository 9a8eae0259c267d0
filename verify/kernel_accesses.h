// The accesses of a thread-level kernel that the proofs about its registers and alignment reason
// about, each with the loops and conditions around it and its place in program order:
//   - reads and writes of per-thread registers — local buffers, which are T.alloc_local /
//     T.alloc_var and the register arrays fragments become (verify/definition_proofs.h asks of
//     every read whether an earlier write of the same thread covers it);
//   - memory operands whose address must be a multiple of their size: cp.async sources and
//     destinations, ldmatrix rows, and the vector copies codegen issues (core/vector_copy.h)
//     (verify/alignment_proofs.h).
//
// Lets are substituted into every expression. What depends on loaded data cannot be reasoned
// about: such a condition is kept as undefined (a read under it may happen, a write under it may
// not), such an index or loop bound marks the access `opaque`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/stmt_functor.h"

namespace tessel {

/// One loop or condition around an access, outermost first.
struct Enclosing {
  const StmtNode* node = nullptr;  ///< the For or If statement
  bool negated = false;            ///< an If's else branch
  Var var;                         ///< a loop's variable (undefined for a condition)
  Expr min, extent;                ///< a loop's range (undefined when it depends on loaded data)
  Expr cond;         ///< a condition as it holds inside (undefined when it depends on loaded data)
  std::string text;  ///< the condition as the IR writes it (`tx == 0`, `not (i < n)`)

  bool is_loop() const { return var.defined(); }
  /// The same statement and branch.
  bool same(const Enclosing& o) const { return node == o.node && negated == o.negated; }
};

/// Walks a statement tree keeping `frames()`: the loops, if-branches and lets around the statement
/// being visited, outermost first. Subclasses override the leaves they collect (visit_Store,
/// visit_IntrinsicCall, ...; by default leaves are skipped) and, to put other facts in a frame
/// or to do work when one opens, the frame hooks.
class EnclosingWalker : public StmtFunctor<void> {
 protected:
  const std::vector<Enclosing>& frames() const { return frames_; }

  /// The frame of a loop, made before its body is visited. Default: its variable and its range
  /// as written.
  virtual Enclosing loop_frame(const ForNode& op, const Stmt& s);
  /// Called once for an if, before its branches are visited. Default: nothing.
  virtual void enter_if(const IfNode& op, const Stmt& s);
  /// The frame of one branch of an if (`negated`: the else branch). Default: the condition as
  /// written (negated for the else branch), its text as the IR prints it.
  virtual Enclosing branch_frame(const IfNode& op, bool negated);
  /// The frame of a let, or nullopt for none. Default: `var == value`, its text `var = value`.
  virtual std::optional<Enclosing> let_frame(const LetNode& op, const Stmt& s);

  void visit_Seq(const SeqNode* op, const Stmt& s) override;
  void visit_For(const ForNode* op, const Stmt& s) override;
  /// Makes both branches' frames, then visits the then branch and, when there is one, the else
  /// branch, each under its frame.
  void visit_If(const IfNode* op, const Stmt& s) override;
  void visit_Let(const LetNode* op, const Stmt& s) override;
  void visit_Store(const StoreNode*, const Stmt&) override {}
  void visit_Alloc(const AllocNode*, const Stmt&) override {}
  void visit_Barrier(const BarrierNode*, const Stmt&) override {}
  void visit_TileOpCall(const TileOpCallNode*, const Stmt&) override {}
  void visit_UseSwizzle(const UseSwizzleNode*, const Stmt&) override {}
  void visit_IntrinsicCall(const IntrinsicCallNode*, const Stmt&) override {}
  void visit_Print(const PrintNode*, const Stmt&) override {}

 private:
  void visit_under(Enclosing frame, const Stmt& body);

  std::vector<Enclosing> frames_;
};

/// One read or write of consecutive registers of a local buffer by one statement.
struct RegisterAccess {
  Buffer buffer;
  Expr index;         ///< the first register (row-major over the buffer's shape)
  int64_t count = 1;  ///< consecutive registers (an instruction's register operand: several)
  bool write = false;
  /// Inside its statement, when the read happens only under a condition (a T.if_then_else arm);
  /// undefined: always.
  Expr guard;
  bool opaque = false;  ///< the index, a loop bound or a let depends on loaded data
  std::vector<Enclosing> enclosing;
  int64_t order = 0;  ///< position of its statement in program order (pre-order)
  Stmt stmt;
};

/// A memory operand whose byte address must be a multiple of `bytes`.
struct AlignedAccess {
  Buffer buffer;
  std::vector<Expr> indices;  ///< the first element (lets substituted)
  int64_t bytes = 0;
  std::string what;  ///< "cp_async_16 source", "ldmatrix_x4 row", "vector copy destination"
  bool opaque = false;
  std::vector<Enclosing> enclosing;
  Stmt stmt;
};

/// A load or store of one element of a global buffer (a tensor or T.alloc_global scratch).
struct GlobalAccess {
  Buffer buffer;
  std::vector<Expr> indices;  ///< lets substituted
  bool write = false;
  /// Inside its statement, when it happens only under a condition (a T.if_then_else arm);
  /// undefined: always.
  Expr guard;
  bool opaque = false;  ///< an index, a loop bound or a let depends on loaded data
  std::vector<Enclosing> enclosing;
  Stmt stmt;
};

struct KernelAccesses {
  /// Every register read and write, in program order (a statement's reads before its writes).
  /// T.alloc_var with an initial value counts as a write at its allocation.
  std::vector<RegisterAccess> registers;
  /// Every memory operand that must be aligned, in program order.
  std::vector<AlignedAccess> aligned;
  /// Every element load and store of a global buffer, in program order (not the operands of
  /// instructions such as cp.async, whose sources `aligned` has).
  std::vector<GlobalAccess> global;
};

KernelAccesses collect_accesses(const Kernel& kernel);

/// The row-major offset of `indices` in `b`'s shape.
Expr row_major_offset(const Buffer& b, const std::vector<Expr>& indices);

/// The statement on one line, as the IR prints it (a loop or if: its header).
std::string statement_text(const Stmt& s);

}  // namespace tessel
