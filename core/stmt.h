// Statements of the tile IR: immutable nodes behind handles, one X-macro list of kinds.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "core/expr.h"

namespace tessel {

class TileOp;
enum class IntrinsicId : uint8_t;

/// Every statement kind.
#define TESSEL_STMT_NODES(X) \
  X(Seq)                     \
  X(For)                     \
  X(If)                      \
  X(Store)                   \
  X(Alloc)                   \
  X(Let)                     \
  X(Barrier)                 \
  X(TileOpCall)              \
  X(UseSwizzle)              \
  X(IntrinsicCall)           \
  X(Print)

enum class StmtKind : uint8_t {
#define TESSEL_ENUM_(name) k##name,
  TESSEL_STMT_NODES(TESSEL_ENUM_)
#undef TESSEL_ENUM_
};

struct StmtNode {
  StmtKind kind;
  SourceLoc loc;

 protected:
  StmtNode(StmtKind k, SourceLoc l) : kind(k), loc(std::move(l)) {}

 public:
  virtual ~StmtNode() = default;
};

/// A handle to an immutable statement node.
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }
  StmtKind kind() const { return node_->kind; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

/// Statements executed in order.
struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeq;
  std::vector<Stmt> stmts;
  /// Flattens nested sequences; a single statement is returned as is.
  static Stmt make(std::vector<Stmt> stmts);
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind, {}), stmts(std::move(s)) {}
};

/// How a loop's iterations are carried out.
enum class ForKind : uint8_t {
  kSerial,      ///< T.serial / range: one after another, by every thread
  kParallel,    ///< T.Parallel: element-wise, spread over the block's threads by layout inference
  kUnrolled,    ///< T.unroll
  kVectorized,  ///< T.vectorized
  kPipelined,   ///< T.Pipelined: copies overlap compute across iterations
};
const char* for_kind_name(ForKind kind);

/// Software-pipelining annotations of a T.Pipelined loop (empty order/stage: automatic).
struct PipelineInfo {
  int num_stages = 0;
  std::vector<int> order;
  std::vector<int> stage;
};

/// `for var in <kind>(min, min + extent): body`.
struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  Var var;
  Expr min;
  Expr extent;
  ForKind for_kind;
  PipelineInfo pipeline;
  Stmt body;
  /// Requires: integral min/extent; a constant extent must be >= 0.
  static Stmt make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc,
                   PipelineInfo pipeline = {});
  ForNode(Var v, Expr m, Expr e, ForKind k, PipelineInfo p, Stmt b, SourceLoc l)
      : StmtNode(kKind, std::move(l)), var(std::move(v)), min(std::move(m)), extent(std::move(e)),
        for_kind(k), pipeline(std::move(p)), body(std::move(b)) {}
};

/// `if cond: then_case else: else_case` (else_case may be undefined).
struct IfNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIf;
  Expr cond;
  Stmt then_case;
  Stmt else_case;
  static Stmt make(Expr cond, Stmt then_case, Stmt else_case, SourceLoc loc);
  IfNode(Expr c, Stmt t, Stmt e, SourceLoc l)
      : StmtNode(kKind, std::move(l)), cond(std::move(c)), then_case(std::move(t)),
        else_case(std::move(e)) {}
};

/// `buffer[indices] = value` (value cast to the buffer's dtype).
struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kStore;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  static Stmt make(Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc);
  StoreNode(Buffer b, std::vector<Expr> i, Expr v, SourceLoc l)
      : StmtNode(kKind, std::move(l)), buffer(std::move(b)), indices(std::move(i)),
        value(std::move(v)) {}
};

/// Declares storage for a shared, fragment or local buffer (T.alloc_*); it lives until the end
/// of the kernel. `init` is the initial value of a T.alloc_var, if given.
struct AllocNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAlloc;
  Buffer buffer;
  Expr init;
  bool is_var = false;  ///< written as T.alloc_var (a one-element local)
  static Stmt make(Buffer buffer, Expr init, bool is_var, SourceLoc loc);
  AllocNode(Buffer b, Expr i, bool v, SourceLoc l)
      : StmtNode(kKind, std::move(l)), buffer(std::move(b)), init(std::move(i)), is_var(v) {}
};

/// `var = value` followed by `body`, where `var` is immutable.
struct LetNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kLet;
  Var var;
  Expr value;
  Stmt body;
  static Stmt make(Var var, Expr value, Stmt body, SourceLoc loc);
  LetNode(Var v, Expr x, Stmt b, SourceLoc l)
      : StmtNode(kKind, std::move(l)), var(std::move(v)), value(std::move(x)), body(std::move(b)) {}
};

/// T.sync_threads(): every thread of the block waits here for all the others.
struct BarrierNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBarrier;
  static Stmt make(SourceLoc loc);
  explicit BarrierNode(SourceLoc l) : StmtNode(kKind, std::move(l)) {}
};

/// A tile operator (copy, gemm, reduce, ...) executed collectively by the block.
struct TileOpCallNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kTileOpCall;
  std::shared_ptr<const TileOp> op;
  static Stmt make(std::shared_ptr<const TileOp> op);
  explicit TileOpCallNode(std::shared_ptr<const TileOp> o);
};

/// T.use_swizzle(panel_size, order): block rasterisation in panels for L2 reuse. It changes only
/// the order in which blocks are scheduled, never results.
struct UseSwizzleNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kUseSwizzle;
  int panel_size;
  bool column_major;
  static Stmt make(int panel_size, bool column_major, SourceLoc loc);
  UseSwizzleNode(int p, bool c, SourceLoc l)
      : StmtNode(kKind, std::move(l)), panel_size(p), column_major(c) {}
};

/// One argument of an intrinsic call: an element of a buffer (the first of a lane's register
/// array, or a shared/global address) when `buffer` is defined, else the scalar `value`.
struct IntrinsicArg {
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
};

/// A call of one instruction of the intrinsic table (core/intrinsics.h): mma.sync, ldmatrix,
/// cp.async, MFMA... executed by the active lanes of a warp. Thread-level IR only.
struct IntrinsicCallNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIntrinsicCall;
  IntrinsicId intrinsic;
  std::vector<IntrinsicArg> args;
  /// Validates the arguments against the table entry: count, operand kind, scope, dtype,
  /// constant immediates (user error naming the instruction and operand otherwise). Defined in
  /// core/intrinsics.cpp.
  static Stmt make(IntrinsicId intrinsic, std::vector<IntrinsicArg> args, SourceLoc loc);
  IntrinsicCallNode(IntrinsicId i, std::vector<IntrinsicArg> a, SourceLoc l)
      : StmtNode(kKind, std::move(l)), intrinsic(i), args(std::move(a)) {}
};

/// T.print(value, msg="..."): every thread that runs it writes `msg` and the value, with its
/// block and thread, to the interpreters' output (stderr); generated code calls printf.
struct PrintNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kPrint;
  Expr value;
  std::string msg;
  /// Requires: a defined value; msg of printable characters other than `"`, `\` and `%`
  /// (user error otherwise).
  static Stmt make(Expr value, std::string msg, SourceLoc loc);
  PrintNode(Expr v, std::string m, SourceLoc l)
      : StmtNode(kKind, std::move(l)), value(std::move(v)), msg(std::move(m)) {}
};

}  // namespace tessel
