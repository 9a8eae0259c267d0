// Expressions of the tile IR: immutable nodes behind ref-counted handles, one X-macro list of kinds.
//
// An Expr is a `std::shared_ptr<const ExprNode>` with value semantics. Every node kind is a small
// struct with a static `make` that validates its operands. The list TESSEL_EXPR_NODES drives the
// kind enum, the functor, the visitor, the mutator and the printer: adding a node kind is one line
// there plus what the compiler then asks for.
//
// Integer semantics follow Python, like the kernel files Tessel reads: FloorDiv and FloorMod round
// towards negative infinity. In the C++ builder `/` and `%` on integer expressions mean `//` and
// `%`; `/` on floating-point expressions is true division (Div).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace tessel {

#define TESSEL_BINARY_NODES(X) \
  X(Add, "+")                  \
  X(Sub, "-")                  \
  X(Mul, "*")                  \
  X(Div, "/")                  \
  X(FloorDiv, "//")            \
  X(FloorMod, "%")             \
  X(Min, "min")                \
  X(Max, "max")                \
  X(BitAnd, "&")               \
  X(BitOr, "|")                \
  X(BitXor, "^")               \
  X(Shl, "<<")                 \
  X(Shr, ">>")

#define TESSEL_COMPARE_NODES(X) \
  X(EQ, "==")                   \
  X(NE, "!=")                   \
  X(LT, "<")                    \
  X(LE, "<=")                   \
  X(GT, ">")                    \
  X(GE, ">=")                   \
  X(And, "and")                 \
  X(Or, "or")

#define TESSEL_OTHER_EXPR_NODES(X) \
  X(IntImm, "")                    \
  X(FloatImm, "")                  \
  X(Var, "")                       \
  X(Not, "not")                    \
  X(Select, "")                    \
  X(Cast, "")                      \
  X(BufferLoad, "")                \
  X(Call, "")

/// Every expression node kind, as X(Name, symbol).
#define TESSEL_EXPR_NODES(X) \
  TESSEL_OTHER_EXPR_NODES(X) \
  TESSEL_BINARY_NODES(X)     \
  TESSEL_COMPARE_NODES(X)

enum class ExprKind : uint8_t {
#define TESSEL_ENUM_(name, ...) k##name,
  TESSEL_OTHER_EXPR_NODES(TESSEL_ENUM_) TESSEL_BINARY_NODES(TESSEL_ENUM_)
      TESSEL_COMPARE_NODES(TESSEL_ENUM_)
#undef TESSEL_ENUM_
};

/// The node kind's name ("Add", "BufferLoad").
const char* kind_name(ExprKind kind);

/// Hard limits every expression obeys, whoever builds it: making a node past them is a user
/// error. They bound the recursion of every walker over expressions (printer, analyzer, Z3
/// translation, interpreters, codegen, destructors) and the work of a walk that visits a shared
/// sub-expression once per use. The front ends accept much less (core/input_limits.h).
inline constexpr uint32_t kMaxExprHeight = 1024;
inline constexpr uint64_t kMaxExprTreeSize = uint64_t{1} << 20;

struct ExprNode {
  ExprKind kind;
  DataType dtype;
  /// 1 for a leaf, else 1 + the greatest height of the operands: the recursion depth of a walk.
  uint32_t height = 1;
  /// The number of nodes of the expression read as a tree (a shared operand counts once per use):
  /// the work of a walk that does not memoise. Saturates at 2^63.
  uint64_t tree_size = 1;

 protected:
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
  /// Accounts for one operand in `height` and `tree_size` (constructors call it per operand).
  void count_operand(const ExprNode* operand) {
    if (!operand) return;
    if (operand->height + 1 > height) height = operand->height + 1;
    uint64_t cap = uint64_t{1} << 63;
    tree_size = operand->tree_size >= cap - tree_size ? cap : tree_size + operand->tree_size;
  }

 public:
  virtual ~ExprNode() = default;
};

class BufferNode;
/// A handle to a buffer (defined in core/buffer.h); declared here because loads name buffers.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> node) : node_(std::move(node)) {}
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  const BufferNode& operator*() const { return *node_; }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};

/// A handle to an immutable expression node. Default-constructed handles are "undefined".
class Expr {
 public:
  Expr() = default;
  /// Takes a node; a user error when it is past kMaxExprHeight or kMaxExprTreeSize.
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {
    if (node_ && (node_->height > kMaxExprHeight || node_->tree_size > kMaxExprTreeSize)) {
      reject_oversized();
    }
  }
  /// Integer and floating-point literals convert implicitly (int32 and float32).
  Expr(int value);      // NOLINT(google-explicit-constructor)
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)
  Expr(double value);   // NOLINT(google-explicit-constructor)

  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  DataType dtype() const { return node_->dtype; }
  ExprKind kind() const { return node_->kind; }
  /// See ExprNode::height and ExprNode::tree_size (0 for an undefined handle).
  uint32_t height() const { return node_ ? node_->height : 0; }
  uint64_t tree_size() const { return node_ ? node_->tree_size : 0; }

  /// The node as `T` when its kind is T::kKind, else nullptr.
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }

 private:
  [[noreturn]] void reject_oversized() const;
  std::shared_ptr<const ExprNode> node_;
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  int64_t value;
  /// Requires: dtype is integral; `value` is wrapped into its range.
  static Expr make(DataType dtype, int64_t value);
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  double value;
  /// Requires: dtype is a float type; `value` is rounded to it.
  static Expr make(DataType dtype, double value);
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
};

/// A variable. Identity is the node itself: two Vars with one name are different variables.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  std::string name;
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
};

/// A handle known to hold a VarNode.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType dtype = DataType::i32());
  const VarNode* operator->() const { return static_cast<const VarNode*>(get()); }
  const std::string& name() const { return (*this)->name; }
};

/// Binary arithmetic, bitwise, min/max. Both operands have the same dtype, which is the result's.
struct BinaryNode : ExprNode {
  Expr a, b;
  BinaryNode(ExprKind k, DataType t, Expr x, Expr y)
      : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {
    count_operand(a.get());
    count_operand(b.get());
  }
};

/// Comparisons and logical and/or: operands of one dtype, a bool result.
struct CompareNode : ExprNode {
  Expr a, b;
  CompareNode(ExprKind k, Expr x, Expr y)
      : ExprNode(k, DataType::boolean()), a(std::move(x)), b(std::move(y)) {
    count_operand(a.get());
    count_operand(b.get());
  }
};

#define TESSEL_DECLARE_BINARY_(name, sym)                                  \
  struct name##Node : BinaryNode {                                        \
    static constexpr ExprKind kKind = ExprKind::k##name;                  \
    static constexpr const char* kSymbol = sym;                           \
    static Expr make(Expr a, Expr b);                                     \
    name##Node(DataType t, Expr x, Expr y)                                \
        : BinaryNode(kKind, t, std::move(x), std::move(y)) {}             \
  };
TESSEL_BINARY_NODES(TESSEL_DECLARE_BINARY_)
#undef TESSEL_DECLARE_BINARY_

#define TESSEL_DECLARE_COMPARE_(name, sym)                                          \
  struct name##Node : CompareNode {                                                \
    static constexpr ExprKind kKind = ExprKind::k##name;                           \
    static constexpr const char* kSymbol = sym;                                    \
    static Expr make(Expr a, Expr b);                                              \
    name##Node(Expr x, Expr y) : CompareNode(kKind, std::move(x), std::move(y)) {} \
  };
TESSEL_COMPARE_NODES(TESSEL_DECLARE_COMPARE_)
#undef TESSEL_DECLARE_COMPARE_

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kNot;
  Expr a;
  static Expr make(Expr a);
  explicit NotNode(Expr x) : ExprNode(kKind, DataType::boolean()), a(std::move(x)) {
    count_operand(a.get());
  }
};

/// `cond ? t : f` (TileLang's T.if_then_else); both arms have one dtype.
struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  Expr cond, t, f;
  static Expr make(Expr cond, Expr t, Expr f);
  SelectNode(Expr c, Expr x, Expr y)
      : ExprNode(kKind, x.dtype()), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {
    count_operand(cond.get());
    count_operand(t.get());
    count_operand(f.get());
  }
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  Expr value;
  static Expr make(DataType dtype, Expr value);
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {
    count_operand(value.get());
  }
};

/// A scalar read of one element of a buffer.
struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBufferLoad;
  Buffer buffer;
  std::vector<Expr> indices;
  /// Requires: one integral index per dimension of `buffer` (checked: user error otherwise).
  static Expr make(Buffer buffer, std::vector<Expr> indices);
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> i)
      : ExprNode(kKind, t), buffer(std::move(b)), indices(std::move(i)) {
    for (const Expr& index : indices) count_operand(index.get());
  }
};

/// Built-in functions a kernel may call. Name, arity and result type rule live in builtins.cpp.
#define TESSEL_BUILTINS(X)                                                  \
  X(kExp, "exp") X(kExp2, "exp2") X(kLog, "log") X(kLog2, "log2")           \
  X(kAbs, "abs") X(kSqrt, "sqrt") X(kRsqrt, "rsqrt") X(kTanh, "tanh")       \
  X(kSin, "sin") X(kCos, "cos") X(kFloor, "floor") X(kCeil, "ceil")         \
  X(kPow, "pow") X(kShflXor, "shfl_xor") X(kShflDown, "shfl_down")          \
  X(kShflUp, "shfl_up")

enum class Builtin : uint8_t {
#define TESSEL_ENUM_(id, name) id,
  TESSEL_BUILTINS(TESSEL_ENUM_)
#undef TESSEL_ENUM_
};

/// The builtin's Python name ("exp2", "shfl_xor").
const char* builtin_name(Builtin op);
/// True for the warp shuffles (their value depends on another lane).
bool is_shuffle(Builtin op);

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  Builtin op;
  std::vector<Expr> args;
  /// Validates arity and operand types (user error naming the builtin otherwise).
  static Expr make(Builtin op, std::vector<Expr> args);
  CallNode(DataType t, Builtin o, std::vector<Expr> a)
      : ExprNode(kKind, t), op(o), args(std::move(a)) {
    for (const Expr& arg : args) count_operand(arg.get());
  }
};

// ---- Construction helpers that read like the kernel language -------------------------------

/// An int32 literal (int64 when it does not fit).
Expr make_int(int64_t value);
Expr make_const(DataType dtype, double value);
Expr cast(DataType dtype, Expr value);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr ceildiv(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr if_then_else(Expr cond, Expr t, Expr f);
Expr call(Builtin op, std::vector<Expr> args);
Expr exp(Expr x);
Expr exp2(Expr x);
Expr log(Expr x);
Expr abs(Expr x);
Expr rsqrt(Expr x);
Expr sqrt(Expr x);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator*(Expr a, Expr b);
/// Floor division for integers (Python `//`), true division for floats.
Expr operator/(Expr a, Expr b);
/// Python `%` for integers.
Expr operator%(Expr a, Expr b);
Expr operator&(Expr a, Expr b);
Expr operator|(Expr a, Expr b);
Expr operator^(Expr a, Expr b);
Expr operator<<(Expr a, Expr b);
Expr operator>>(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

/// The dtype of a loop variable counting from `min` over `extent`: int64 when either bound is a
/// 64-bit integer (a loop past 2^31 iterations), int32 otherwise.
DataType loop_var_type(const Expr& min, const Expr& extent);

/// The constant value of an integer immediate, if `e` is one.
std::optional<int64_t> as_const_int(const Expr& e);
/// Structural equality (Vars and Buffers compare by identity).
bool structural_equal(const Expr& a, const Expr& b);
/// A hash consistent with structural_equal.
size_t structural_hash(const Expr& e);

}  // namespace tessel
