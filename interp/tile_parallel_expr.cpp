// Compiles an expression of a T.Parallel nest into nodes that read variables from slots and
// buffers from a table resolved once per run of the nest. Each node computes exactly what the
// generic evaluator (scalar_eval.cpp) computes, in the same order, with the same errors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "interp/division_error.h"
#include "interp/float_builtin.h"
#include "interp/scalar_eval.h"
#include "interp/tile_parallel_nodes.h"

namespace tessel::tile_parallel {

int Tables::slot(const VarNode* v) {
  auto [it, inserted] = slot_of_.emplace(v, static_cast<int>(vars_.size()));
  if (inserted) vars_.push_back(v);
  return it->second;
}

int Tables::buffer(const Buffer& b) {
  auto [it, inserted] = buffer_of_.emplace(b.get(), static_cast<int>(buffers_.size()));
  if (inserted) buffers_.push_back(b);
  return it->second;
}

std::string thread_where(const BlockState& block, int thread) {
  const SourceLoc& loc = block.current_loc();
  return "kernel '" + block.kernel()->name + "', " + block.block_name() + ", thread " +
         std::to_string(thread) + (loc.known() ? " (at " + loc.str() + ")" : "");
}

void Node::eval_row(Frame& f, const Row& row, Value* out) const {
  const int64_t inner = row.inner();
  for (int64_t o = 0, k = 0; o < row.outer_count(); ++o) {
    if (row.outer_slot >= 0) bind_iteration(f, row.outer_slot, row.outer_lo + o);
    for (int64_t i = 0; i < inner; ++i, ++k) {
      bind_iteration(f, row.slot, row.lo + i);
      out[k] = eval(f);
    }
  }
}

void Node::eval_row_f(Frame& f, const Row& row, double* out) const {
  Value* v = row_buffer(values_, row.n);
  eval_row(f, row, v);
  for (int64_t k = 0; k < row.n; ++k) out[k] = v[k].f;
}

void Node::eval_row_i(Frame& f, const Row& row, int64_t* out) const {
  Value* v = row_buffer(values_, row.n);
  eval_row(f, row, v);
  // The bound in a local: a store through an int64_t pointer may alias row.n, which would keep
  // the compiler from counting (and vectorising) the loop.
  const int64_t n = row.n;
  for (int64_t k = 0; k < n; ++k) out[k] = v[k].i;
}

namespace {

/// A node whose every value is a float (T = double: Value::of_float, whose integer field is 0)
/// or an integer (T = int64_t: Value::of_int, whose float field is the integer converted): it
/// computes its row as T in row(), and the three row forms follow from that.
template <typename T>
class TypedNode : public Node {
 public:
  void eval_row(Frame& f, const Row& row, Value* out) const final {
    T* x = row_buffer(scratch_, row.n);
    this->row(f, row, x);
    const int64_t n = row.n;
    for (int64_t k = 0; k < n; ++k)
      out[k] = std::is_same_v<T, double> ? Value::of_float(x[k]) : Value::of_int(x[k]);
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const final {
    if constexpr (std::is_same_v<T, double>) {
      this->row(f, row, out);
    } else {
      T* x = row_buffer(scratch_, row.n);
      this->row(f, row, x);
      for (int64_t k = 0; k < row.n; ++k) out[k] = static_cast<double>(x[k]);
    }
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const final {
    if constexpr (std::is_same_v<T, int64_t>) {
      this->row(f, row, out);
    } else {
      this->row(f, row, row_buffer(scratch_, row.n));
      std::fill(out, out + row.n, 0);
    }
  }

 protected:
  /// out[k] = the value with the row's variable bound to row.lo + k.
  virtual void row(Frame& f, const Row& row, T* out) const = 0;

 private:
  mutable std::vector<T> scratch_;
};

/// round_to with the f32 (accumulators) and f16 cases inline.
inline double round_fast(DataType t, double x) {
  if (t == DataType::f32()) return static_cast<double>(static_cast<float>(x));
  if (t == DataType::f16()) return round_f16(x);
  return round_to(t, x);
}

/// out[k] = round_to(t, value(k)) for k < n, the dtype tested once for the row (value(k) may
/// read out[k]).
template <typename F>
inline void round_row(DataType t, int64_t n, double* out, F&& value) {
  if (t == DataType::f32()) {
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<double>(static_cast<float>(value(k)));
  } else if (t == DataType::f16()) {
    for (int64_t k = 0; k < n; ++k) out[k] = value(k);
    element_access::round_f16_row(out, n);
  } else {
    for (int64_t k = 0; k < n; ++k) out[k] = round_to(t, value(k));
  }
}

/// wrap_int, inline for the integer types narrower than 64 bits.
inline int64_t wrap_fast(DataType t, int64_t v) {
  if (t == DataType::i32()) return static_cast<int64_t>(static_cast<int32_t>(v));
  if ((t.is_int() || t.is_uint()) && t.bits < 64 && t.bits > 0) {
    const uint64_t mask = (uint64_t{1} << t.bits) - 1;
    uint64_t low = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (low >> (t.bits - 1)) != 0) low |= ~mask;  // sign-extend
    return static_cast<int64_t>(low);
  }
  return wrap_int(t, v);
}

/// Calls body(wrap) with wrap(v) = wrap_fast(t, v), specialised for the common dtypes so that a
/// row's loop tests the dtype once.
template <typename Body>
inline void with_wrap(DataType t, Body&& body) {
  if (t == DataType::i32()) {
    body([](int64_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); });
  } else if (t == DataType::i8()) {
    body([](int64_t v) { return static_cast<int64_t>(static_cast<int8_t>(v)); });
  } else if (t == DataType::u8()) {
    body([](int64_t v) { return static_cast<int64_t>(static_cast<uint8_t>(v)); });
  } else {
    body([t](int64_t v) { return wrap_fast(t, v); });
  }
}

/// floor_div and floor_mod (core/int_eval.cpp), inline.
inline int64_t floor_div_fast(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));  // INT64_MIN / -1
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t floor_mod_fast(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

class IntImm final : public Node {
 public:
  explicit IntImm(int64_t v) : v_(Value::of_int(v)) {}
  Value eval(Frame&) const override { return v_; }
  void eval_row(Frame&, const Row& row, Value* out) const override {
    std::fill(out, out + row.n, v_);
  }
  void eval_row_f(Frame&, const Row& row, double* out) const override {
    std::fill(out, out + row.n, v_.f);
  }
  void eval_row_i(Frame&, const Row& row, int64_t* out) const override {
    std::fill(out, out + row.n, v_.i);
  }

 private:
  Value v_;
};

class FloatImm final : public Node {
 public:
  explicit FloatImm(double v) : v_(Value::of_float(v)) {}
  Value eval(Frame&) const override { return v_; }
  void eval_row(Frame&, const Row& row, Value* out) const override {
    std::fill(out, out + row.n, v_);
  }
  void eval_row_f(Frame&, const Row& row, double* out) const override {
    std::fill(out, out + row.n, v_.f);
  }
  void eval_row_i(Frame&, const Row& row, int64_t* out) const override {
    std::fill(out, out + row.n, v_.i);
  }

 private:
  Value v_;
};

class VarRead final : public Node {
 public:
  VarRead(int slot, const VarNode* var) : slot_(slot), var_(var) {}
  Value eval(Frame& f) const override { return read_slot(f, slot_, var_); }
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    if (!row_variable(row, slot_, out, [](int64_t v) { return Value::of_int(v); }))
      std::fill(out, out + row.n, read_slot(f, slot_, var_));
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    if (!row_variable(row, slot_, out, [](int64_t v) { return static_cast<double>(v); }))
      std::fill(out, out + row.n, read_slot(f, slot_, var_).f);
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    if (!row_variable(row, slot_, out, [](int64_t v) { return v; }))
      std::fill(out, out + row.n, read_slot(f, slot_, var_).i);
  }

 private:
  int slot_;
  const VarNode* var_;
};

/// A division or modulo node's divisor check: the generic evaluator's message, word for word.
struct DivisionSite {
  Expr division;
  IndexContext ctx;
  int64_t nonzero(Frame& f, int64_t y) const {
    if (y == 0) {
      std::string access =
          ctx.access ? access_words(ctx.access, ctx.buffer->name, *ctx.indices) : "";
      user_error(division_by_zero_message(thread_where(f.block, f.thread), division, access));
    }
    return y;
  }
};

// Binary arithmetic: Op::f on doubles for float dtypes, Op::i on integers (which may check the
// divisor through the site). kDivides: the integer form is floor division (kModulo: its
// remainder), which checks its divisor.
#define TESSEL_BINOP_(Name, int_expr, float_expr, has_float, divides, modulo)     \
  struct Name##Op {                                                               \
    static constexpr bool kFloat = has_float;                                     \
    static constexpr bool kDivides = divides, kModulo = modulo;                   \
    static double f(double x, double y) { return float_expr; }                    \
    static int64_t i(int64_t x, int64_t y, Frame& fr, const DivisionSite& site) { \
      (void)fr;                                                                   \
      (void)site;                                                                 \
      return int_expr;                                                            \
    }                                                                             \
  };
using U = uint64_t;
TESSEL_BINOP_(Add, static_cast<int64_t>(static_cast<U>(x) + static_cast<U>(y)), x + y, true, false,
              false)
TESSEL_BINOP_(Sub, static_cast<int64_t>(static_cast<U>(x) - static_cast<U>(y)), x - y, true, false,
              false)
TESSEL_BINOP_(Mul, static_cast<int64_t>(static_cast<U>(x) * static_cast<U>(y)), x* y, true, false,
              false)
TESSEL_BINOP_(Div, floor_div_fast(x, site.nonzero(fr, y)), x / y, true, true, false)
TESSEL_BINOP_(FloorDiv, floor_div_fast(x, site.nonzero(fr, y)), std::floor(x / y), true, true,
              false)
TESSEL_BINOP_(FloorMod, floor_mod_fast(x, site.nonzero(fr, y)), x - std::floor(x / y) * y, true,
              true, true)
TESSEL_BINOP_(Min, std::min(x, y), std::fmin(x, y), true, false, false)
TESSEL_BINOP_(Max, std::max(x, y), std::fmax(x, y), true, false, false)
TESSEL_BINOP_(BitAnd, x& y, 0.0, false, false, false)
TESSEL_BINOP_(BitOr, x | y, 0.0, false, false, false)
TESSEL_BINOP_(BitXor, x ^ y, 0.0, false, false, false)
TESSEL_BINOP_(Shl, (y < 0 || y >= 64) ? 0 : static_cast<int64_t>(static_cast<U>(x) << y), 0.0,
              false, false, false)
TESSEL_BINOP_(Shr, x >> std::clamp<int64_t>(y, 0, 63), 0.0, false, false, false)
#undef TESSEL_BINOP_

template <typename Op>
class FloatBinary final : public TypedNode<double> {
 public:
  FloatBinary(DataType t, NodePtr a, NodePtr b) : t_(t), a_(std::move(a)), b_(std::move(b)) {}
  Value eval(Frame& f) const override {
    double x = a_->eval(f).f;
    double y = b_->eval(f).f;
    return Value::of_float(round_fast(t_, Op::f(x, y)));
  }

 protected:
  void row(Frame& f, const Row& row, double* out) const override {
    double* y = row_buffer(y_, row.n);
    a_->eval_row_f(f, row, out);  // in place: out[k] is read before it is written
    b_->eval_row_f(f, row, y);
    round_row(t_, row.n, out, [&](int64_t k) { return Op::f(out[k], y[k]); });
  }

 private:
  DataType t_;
  NodePtr a_, b_;
  mutable std::vector<double> y_;  ///< the right operand's row
};

template <typename Op>
class IntBinary final : public TypedNode<int64_t> {
 public:
  IntBinary(DataType t, NodePtr a, NodePtr b, DivisionSite site)
      : t_(t), a_(std::move(a)), b_(std::move(b)), site_(std::move(site)) {}
  Value eval(Frame& f) const override {
    int64_t x = a_->eval(f).i;
    int64_t y = b_->eval(f).i;
    return Value::of_int(wrap_fast(t_, Op::i(x, y, f, site_)));
  }

 protected:
  void row(Frame& f, const Row& row, int64_t* out) const override {
    int64_t* y = row_buffer(y_, row.n);
    a_->eval_row_i(f, row, out);
    b_->eval_row_i(f, row, y);
    const int64_t n = row.n;
    with_wrap(t_, [&](auto wrap) {
      for (int64_t k = 0; k < n; ++k) out[k] = wrap(Op::i(out[k], y[k], f, site_));
    });
  }

 private:
  DataType t_;
  NodePtr a_, b_;
  DivisionSite site_;
  mutable std::vector<int64_t> y_;
};

/// An operation whose right operand is a literal (`j % 2`, `x * 0.5`): one call fewer.
template <typename Op>
class FloatBinaryImm final : public TypedNode<double> {
 public:
  FloatBinaryImm(DataType t, NodePtr a, double y) : t_(t), a_(std::move(a)), y_(y) {}
  Value eval(Frame& f) const override {
    double x = a_->eval(f).f;
    return Value::of_float(round_fast(t_, Op::f(x, y_)));
  }

 protected:
  void row(Frame& f, const Row& row, double* out) const override {
    a_->eval_row_f(f, row, out);
    const double y = y_;
    round_row(t_, row.n, out, [&](int64_t k) { return Op::f(out[k], y); });
  }

 private:
  DataType t_;
  NodePtr a_;
  double y_;
};

template <typename Op>
class IntBinaryImm final : public TypedNode<int64_t> {
 public:
  IntBinaryImm(DataType t, NodePtr a, int64_t y, DivisionSite site)
      : t_(t), a_(std::move(a)), y_(y), site_(std::move(site)) {}
  Value eval(Frame& f) const override {
    int64_t x = a_->eval(f).i;
    return Value::of_int(wrap_fast(t_, Op::i(x, y_, f, site_)));
  }

 protected:
  void row(Frame& f, const Row& row, int64_t* out) const override {
    a_->eval_row_i(f, row, out);
    const int64_t n = row.n, y = y_;
    if constexpr (Op::kDivides) {
      site_.nonzero(f, y);  // a literal divisor: zero fails every iteration, nonzero none
      // A power of two: floor division and modulo are a shift and a mask (two's complement).
      if (y > 0 && (y & (y - 1)) == 0) {
        const int shift = std::countr_zero(static_cast<uint64_t>(y));
        with_wrap(t_, [&](auto wrap) {
          for (int64_t k = 0; k < n; ++k)
            out[k] = wrap(Op::kModulo ? out[k] & (y - 1) : out[k] >> shift);
        });
        return;
      }
    }
    with_wrap(t_, [&](auto wrap) {
      for (int64_t k = 0; k < n; ++k) out[k] = wrap(Op::i(out[k], y, f, site_));
    });
  }

 private:
  DataType t_;
  NodePtr a_;
  int64_t y_;
  DivisionSite site_;
};

#define TESSEL_CMPOP_(Name, cmp)                            \
  struct Name##Cmp {                                        \
    static bool f(double x, double y) { return x cmp y; }   \
    static bool i(int64_t x, int64_t y) { return x cmp y; } \
  };
TESSEL_CMPOP_(EQ, ==)
TESSEL_CMPOP_(NE, !=)
TESSEL_CMPOP_(LT, <)
TESSEL_CMPOP_(LE, <=)
TESSEL_CMPOP_(GT, >)
TESSEL_CMPOP_(GE, >=)
#undef TESSEL_CMPOP_

template <typename Op, bool kFloat>
class Compare final : public TypedNode<int64_t> {
 public:
  Compare(NodePtr a, NodePtr b) : a_(std::move(a)), b_(std::move(b)) {}
  Value eval(Frame& f) const override {
    Value a = a_->eval(f);
    Value b = b_->eval(f);
    if constexpr (kFloat) return Value::of_int(Op::f(a.f, b.f));
    return Value::of_int(Op::i(a.i, b.i));
  }

 protected:
  void row(Frame& f, const Row& row, int64_t* out) const override {
    using Operand = std::conditional_t<kFloat, double, int64_t>;
    const int64_t n = row.n;  // out may alias row.n (see Node::eval_row_i)
    Operand *x = row_buffer(x_, n), *y = row_buffer(y_, n);
    if constexpr (kFloat) {
      a_->eval_row_f(f, row, x);
      b_->eval_row_f(f, row, y);
      for (int64_t k = 0; k < n; ++k) out[k] = Op::f(x[k], y[k]);
    } else {
      a_->eval_row_i(f, row, x);
      b_->eval_row_i(f, row, y);
      for (int64_t k = 0; k < n; ++k) out[k] = Op::i(x[k], y[k]);
    }
  }

 private:
  NodePtr a_, b_;
  mutable std::vector<std::conditional_t<kFloat, double, int64_t>> x_, y_;
};

class Logic final : public Node {
 public:
  Logic(bool is_and, NodePtr a, NodePtr b) : and_(is_and), a_(std::move(a)), b_(std::move(b)) {}
  Value eval(Frame& f) const override {
    if (and_) return Value::of_int(a_->eval(f).i && b_->eval(f).i);
    return Value::of_int(a_->eval(f).i || b_->eval(f).i);
  }

 private:
  bool and_;
  NodePtr a_, b_;
};

class Not final : public Node {
 public:
  explicit Not(NodePtr a) : a_(std::move(a)) {}
  Value eval(Frame& f) const override { return Value::of_int(!a_->eval(f).i); }

 private:
  NodePtr a_;
};

class Select final : public Node {
 public:
  Select(NodePtr c, NodePtr t, NodePtr e) : c_(std::move(c)), t_(std::move(t)), e_(std::move(e)) {}
  Value eval(Frame& f) const override { return c_->eval(f).i ? t_->eval(f) : e_->eval(f); }
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    select_row(f, row, out, t_values_,
               [&](const NodePtr& branch, Value* to) { branch->eval_row(f, row, to); });
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    select_row(f, row, out, t_doubles_,
               [&](const NodePtr& branch, double* to) { branch->eval_row_f(f, row, to); });
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    select_row(f, row, out, t_ints_,
               [&](const NodePtr& branch, int64_t* to) { branch->eval_row_i(f, row, to); });
  }

 private:
  /// The branch every iteration takes when they all take one; otherwise both branches over the
  /// whole row: an error in the branch an iteration does not take sends the row back to
  /// one-by-one evaluation, which takes only the chosen one.
  template <typename T, typename EvalBranch>
  void select_row(Frame& f, const Row& row, T* out, std::vector<T>& then_row,
                  EvalBranch&& eval_branch) const {
    int64_t* c = row_buffer(c_row_, row.n);
    c_->eval_row_i(f, row, c);
    const int64_t n = row.n;  // out may alias row.n (see Node::eval_row_i)
    int64_t taken = 0;
    for (int64_t k = 0; k < n; ++k) taken += c[k] != 0;
    if (taken == n) return eval_branch(t_, out);
    if (taken == 0) return eval_branch(e_, out);
    T* t = row_buffer(then_row, n);
    eval_branch(t_, t);
    eval_branch(e_, out);
    for (int64_t k = 0; k < n; ++k) out[k] = c[k] ? t[k] : out[k];
  }

  NodePtr c_, t_, e_;
  mutable std::vector<int64_t> c_row_;
  mutable std::vector<Value> t_values_;
  mutable std::vector<double> t_doubles_;
  mutable std::vector<int64_t> t_ints_;
};

/// A cast to a float (T = double) or to an integer (T = int64_t) dtype.
template <typename T>
class Cast final : public TypedNode<T> {
 public:
  Cast(DataType from, DataType to, NodePtr v) : from_(from), to_(to), v_(std::move(v)) {}
  Value eval(Frame& f) const override {
    const Value v = v_->eval(f);
    if (to_.is_float()) return Value::of_float(round_fast(to_, v.as_double(from_)));
    if (from_.is_float())
      return Value::of_int(static_cast<int64_t>(round_to(to_, std::trunc(v.f))));
    return Value::of_int(wrap_fast(to_, v.i));
  }

 protected:
  void row(Frame& f, const Row& row, T* out) const override {
    const int64_t n = row.n;
    if constexpr (std::is_same_v<T, double>) {
      if (from_.is_float()) {
        v_->eval_row_f(f, row, out);
        round_row(to_, n, out, [&](int64_t k) { return out[k]; });
        return;
      }
      int64_t* x = row_buffer(operand_, n);
      v_->eval_row_i(f, row, x);
      // Integers of magnitude at most 2^11 are halves, at most 2^24 floats: when the whole row
      // is, converting it rounds nothing (dequantised weights are a few bits wide).
      const int64_t exact = to_ == DataType::f16() ? 2048 : to_ == DataType::f32() ? 1 << 24 : 0;
      int64_t inexact = exact == 0;
      for (int64_t k = 0; k < n; ++k) inexact |= x[k] < -exact || x[k] > exact;
      if (!inexact) {
        for (int64_t k = 0; k < n; ++k) out[k] = static_cast<double>(x[k]);
      } else {
        round_row(to_, n, out, [&](int64_t k) { return static_cast<double>(x[k]); });
      }
    } else if (from_.is_float()) {
      double* x = row_buffer(operand_double_, n);
      v_->eval_row_f(f, row, x);
      for (int64_t k = 0; k < n; ++k)
        out[k] = static_cast<int64_t>(round_to(to_, std::trunc(x[k])));
    } else {
      v_->eval_row_i(f, row, out);
      with_wrap(to_, [&](auto wrap) {
        for (int64_t k = 0; k < n; ++k) out[k] = wrap(out[k]);
      });
    }
  }

 private:
  DataType from_, to_;
  NodePtr v_;
  mutable std::vector<int64_t> operand_;
  mutable std::vector<double> operand_double_;
};

/// Whether `op` is a one-argument float builtin (float_builtin computes it from x alone).
bool has_f16_table(Builtin op) {
  switch (op) {
    case Builtin::kExp:
    case Builtin::kExp2:
    case Builtin::kLog:
    case Builtin::kLog2:
    case Builtin::kAbs:
    case Builtin::kSqrt:
    case Builtin::kRsqrt:
    case Builtin::kTanh:
    case Builtin::kSin:
    case Builtin::kCos:
    case Builtin::kFloor:
    case Builtin::kCeil:
      return true;
    default:
      return false;
  }
}

/// Every f16 bit pattern's round_to(f16, op(x)) for a one-argument builtin `op` (T.exp2,
/// T.exp, ...), as a float (a half is exactly a float), built the first time it is asked for:
/// on halves the builtin is a lookup.
const float* f16_builtin_table(Builtin op) {
  static std::mutex lock;
  static std::unordered_map<Builtin, std::vector<float>> tables;
  const std::lock_guard<std::mutex> hold(lock);
  std::vector<float>& table = tables[op];
  if (table.empty()) {
    const float* halves = element_access::f16_floats();
    table.resize(1 << 16);
    for (size_t b = 0; b < table.size(); ++b)
      table[b] = static_cast<float>(round_f16(float_builtin(op, halves[b], 0.0)));
  }
  return table.data();
}

/// A float builtin (T.exp2, T.sqrt, T.pow, ...; T.abs of a float).
class Call final : public TypedNode<double> {
 public:
  Call(DataType t, Builtin op, NodePtr a, NodePtr b, const float* f16_table)
      : t_(t), op_(op), a_(std::move(a)), b_(std::move(b)), table_(f16_table) {}
  Value eval(Frame& f) const override {
    const double x = a_->eval(f).f;
    const double y = op_ == Builtin::kPow ? b_->eval(f).f : 0.0;
    return Value::of_float(round_fast(t_, float_builtin(op_, x, y)));
  }

 protected:
  void row(Frame& f, const Row& row, double* out) const override {
    a_->eval_row_f(f, row, out);
    const int64_t n = row.n;
    if (table_) {  // a half's result is the table's entry for its bits
      uint16_t* bits = row_buffer(bits_, n);
      double* halves = row_buffer(halves_, n);
      element_access::f16_round_row(out, n, halves, bits);
      int64_t inexact = 0;  // an argument that is not a half (never, for an f16 expression)
      for (int64_t k = 0; k < n; ++k) inexact |= halves[k] != out[k];
      if (!inexact) {
        for (int64_t k = 0; k < n; ++k) out[k] = table_[bits[k]];
        return;
      }
    }
    const double* y = nullptr;
    if (op_ == Builtin::kPow) {
      double* b = row_buffer(y_, n);
      b_->eval_row_f(f, row, b);
      y = b;
    }
    round_row(t_, n, out, [&](int64_t k) { return float_builtin(op_, out[k], y ? y[k] : 0.0); });
  }

 private:
  DataType t_;
  Builtin op_;
  NodePtr a_, b_;
  const float* table_;  ///< f16_builtin_table(op) when the argument and the result are f16
  mutable std::vector<double> y_, halves_;
  mutable std::vector<uint16_t> bits_;
};

/// T.abs of an integer.
class IntAbs final : public TypedNode<int64_t> {
 public:
  IntAbs(DataType t, NodePtr a) : t_(t), a_(std::move(a)) {}
  Value eval(Frame& f) const override {
    return Value::of_int(wrap_int(t_, std::llabs(a_->eval(f).i)));
  }

 protected:
  void row(Frame& f, const Row& row, int64_t* out) const override {
    a_->eval_row_i(f, row, out);
    const int64_t n = row.n;  // out may alias row.n and t_ (see Node::eval_row_i)
    const DataType t = t_;
    for (int64_t k = 0; k < n; ++k) out[k] = wrap_int(t, std::llabs(out[k]));
  }

 private:
  DataType t_;
  NodePtr a_;
};

/// A load of a float (T = double) or an integer (T = int64_t) element.
template <typename T>
class Load final : public TypedNode<T> {
 public:
  static constexpr size_t kMaxRank = 8;
  static constexpr bool kFloat = std::is_same_v<T, double>;
  /// `reads`: the slots each index reads.
  Load(const BufferLoadNode* op, int buffer, std::vector<NodePtr> indices,
       std::vector<std::pair<int, const VarNode*>> var_indices, std::vector<std::vector<int>> reads)
      : op_(op),
        buffer_(buffer),
        kind_(elem_kind(op->buffer->dtype)),
        indices_(std::move(indices)),
        var_indices_(std::move(var_indices)),
        reads_(std::move(reads)) {}
  Value eval(Frame& f) const override {
    int64_t idx[kMaxRank];
    eval_indices(f, indices_, var_indices_, idx);
    return at(f, idx);
  }

 protected:
  void row(Frame& f, const Row& row, T* out) const override {
    const size_t rank = indices_.size();
    const HostTensor& t = *f.tensors[buffer_];
    const int64_t n = row.n;
    if (!var_indices_.empty()) {  // acc[i, j]: one stride along the row when all of it is inside
      if (auto a = row_access(f, row, var_indices_, t.shape())) {
        const int64_t first = a->first, step = a->step;
        if constexpr (kFloat) {
          if (kind_ == ElemKind::kF16 && step == 1) {  // consecutive halves
            const auto* bits = reinterpret_cast<const uint16_t*>(t.data()) + first;
            element_access::f16_values_row(bits, n, out, floats_);
            return;
          }
        }
        with_loader(t, [&](auto load) {
          if (step == 1) {  // vectorises
            for (int64_t k = 0; k < n; ++k) out[k] = load(first + k);
          } else {
            for (int64_t k = 0; k < n; ++k) out[k] = load(first + k * step);
          }
        });
        return;
      }
    }
    if (row.outer_slot >= 0 && separable(f, row, t, out)) return;
    int64_t* rows = row_buffer(rows_, static_cast<int64_t>(rank) * n);
    eval_index_rows(f, row, indices_, var_indices_, rows);
    const std::vector<int64_t>& shape = t.shape();
    if (rank != shape.size()) {
      for (int64_t k = 0; k < n; ++k) out[k] = at_row(f, rows, n, k);  // raises the error
      return;
    }
    // The flat positions a dimension at a time (unsigned: an index out of bounds may overflow
    // them, and is then not loaded), and whether every index lies inside its dimension.
    uint64_t* flat = row_buffer(flat_, n);
    std::fill(flat, flat + n, 0);
    uint64_t outside = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t* r = rows + d * n;
      const uint64_t extent = static_cast<uint64_t>(shape[d]);
      for (int64_t k = 0; k < n; ++k) {
        outside |= static_cast<uint64_t>(static_cast<uint64_t>(r[k]) >= extent);
        flat[k] = flat[k] * extent + static_cast<uint64_t>(r[k]);
      }
    }
    if (outside) {  // the first iteration out of bounds raises the generic path's error
      for (int64_t k = 0; k < n; ++k) out[k] = at_row(f, rows, n, k);
      return;
    }
    with_loader(t, [&](auto load) {
      for (int64_t k = 0; k < n; ++k) out[k] = load(static_cast<int64_t>(flat[k]));
    });
  }

 private:
  /// A 2-d row whose every index reads the innermost variable or the outer one but not both
  /// (`B_local[i, j // 2]`): the flat position is a part from the pass plus a part from the
  /// iteration within it, each computed once (an index over one pass, or over the passes with
  /// the outer variable as the row's), then one load an iteration. False, having loaded
  /// nothing, where that does not hold or an index lies outside its dimension (the checked
  /// path raises the error at its iteration).
  bool separable(Frame& f, const Row& row, const HostTensor& t, T* out) const {
    const std::vector<int64_t>& shape = t.shape();
    const size_t rank = indices_.size();
    if (rank != shape.size()) return false;
    auto reads = [&](size_t d, int slot) {
      return std::find(reads_[d].begin(), reads_[d].end(), slot) != reads_[d].end();
    };
    for (size_t d = 0; d < rank; ++d) {
      if (reads(d, row.slot) && reads(d, row.outer_slot)) return false;
    }
    const int64_t inner = row.inner(), passes = row.outer_count();
    const Row one_pass{row.slot, row.lo, inner}, along_passes{row.outer_slot, row.outer_lo, passes};
    uint64_t* within = row_buffer(within_, inner);  // unsigned: no overflow before the check
    uint64_t* base = row_buffer(base_, passes);
    int64_t* index = row_buffer(rows_, std::max(inner, passes));
    std::fill(within, within + inner, 0);
    std::fill(base, base + passes, 0);
    uint64_t outside = 0;
    uint64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const bool per_pass = !reads(d, row.slot);
      const Row& r = per_pass ? along_passes : one_pass;
      uint64_t* part = per_pass ? base : within;
      indices_[d]->eval_row_i(f, r, index);
      const uint64_t extent = static_cast<uint64_t>(shape[d]);
      const int64_t n = r.n;  // part may alias r.n (see Node::eval_row_i)
      for (int64_t k = 0; k < n; ++k) {
        outside |= static_cast<uint64_t>(static_cast<uint64_t>(index[k]) >= extent);
        part[k] += static_cast<uint64_t>(index[k]) * stride;
      }
      stride *= extent;
    }
    if (outside) return false;
    // dt[j] is one pass repeated, dA[i] one value a pass: each loaded once.
    const bool same_passes =
        std::all_of(base, base + passes, [&](uint64_t b) { return b == base[0]; });
    const bool same_within =
        std::all_of(within, within + inner, [&](uint64_t w) { return w == within[0]; });
    with_loader(t, [&](auto load) {
      if (same_passes) {
        for (int64_t i = 0; i < inner; ++i)
          out[i] = load(static_cast<int64_t>(base[0] + within[i]));
        for (int64_t o = 1; o < passes; ++o)
          std::memcpy(out + o * inner, out, static_cast<size_t>(inner) * sizeof(T));
      } else if (same_within) {
        for (int64_t o = 0; o < passes; ++o)
          std::fill(out + o * inner, out + (o + 1) * inner,
                    load(static_cast<int64_t>(base[o] + within[0])));
      } else if (const int64_t r = repeat_of(within, inner)) {
        // B_local[i, j // 2]: a pass's inner / r consecutive elements, each loaded once (the
        // packed formats' r of 2, 4 and 8 unrolled).
        auto expand = [&](auto times) {
          const int64_t reps = times == 0 ? r : times;
          for (int64_t o = 0; o < passes; ++o) {
            T* to = out + o * inner;
            const int64_t first = static_cast<int64_t>(base[o] + within[0]);
            for (int64_t v = 0; v < inner / reps; ++v) {
              const T x = load(first + v);
              for (int64_t k = 0; k < reps; ++k) to[v * reps + k] = x;
            }
          }
        };
        if (r == 2) {
          expand(std::integral_constant<int64_t, 2>{});
        } else if (r == 4) {
          expand(std::integral_constant<int64_t, 4>{});
        } else if (r == 8) {
          expand(std::integral_constant<int64_t, 8>{});
        } else {
          expand(std::integral_constant<int64_t, 0>{});  // r at run time
        }
      } else {
        for (int64_t o = 0; o < passes; ++o) {
          T* to = out + o * inner;
          for (int64_t i = 0; i < inner; ++i)
            to[i] = load(static_cast<int64_t>(base[o] + within[i]));
        }
      }
    });
    return true;
  }

  /// r when within[i] = within[0] + i / r for every i < n (the positions of x[j // r] along
  /// j), else 0.
  static int64_t repeat_of(const uint64_t* within, int64_t n) {
    int64_t r = 1;
    while (r < n && within[r] == within[0]) ++r;
    if (n % r != 0) return 0;
    for (int64_t i = r; i < n; ++i) {
      if (within[i] != within[0] + static_cast<uint64_t>(i / r)) return 0;
    }
    return r;
  }

  /// Calls body(load) with load(flat) the value of element `flat` of `t`, specialised for the
  /// element kind so that a row's loop tests it once.
  template <typename Body>
  void with_loader(const HostTensor& t, Body&& body) const {
    const uint8_t* data = t.data();
    if (kind_ == ElemKind::kF16 && kFloat) {  // a lookup per element
      const float* values = element_access::f16_floats();
      body([data, values](int64_t flat) {
        uint16_t bits;
        std::memcpy(&bits, data + flat * 2, 2);
        return static_cast<T>(values[bits]);
      });
    } else if (kind_ == ElemKind::kF32 && kFloat) {
      body([data](int64_t flat) {
        float v;
        std::memcpy(&v, data + flat * 4, 4);
        return static_cast<T>(v);
      });
    } else if (kind_ == ElemKind::kI8 && !kFloat) {
      body([data](int64_t flat) { return static_cast<T>(static_cast<int8_t>(data[flat])); });
    } else if (kind_ == ElemKind::kU8 && !kFloat) {
      body([data](int64_t flat) { return static_cast<T>(data[flat]); });
    } else {
      const ElemKind kind = kind_;
      body([&t, kind](int64_t flat) { return static_cast<T>(load_elem(kind, t, flat)); });
    }
  }

  /// at() for iteration k of index rows `rows` (rows[d * n + k]), as T.
  T at_row(Frame& f, const int64_t* rows, int64_t n, int64_t k) const {
    int64_t idx[kMaxRank];
    for (size_t d = 0; d < indices_.size(); ++d) idx[d] = rows[d * n + k];
    const Value v = at(f, idx);
    if constexpr (kFloat) return v.f;
    return v.i;
  }

  /// The element at `idx` (rank indices_.size()), or the generic path's out-of-bounds error.
  Value at(Frame& f, const int64_t* idx) const {
    const size_t rank = indices_.size();
    const HostTensor& t = *f.tensors[buffer_];
    const std::vector<int64_t>& shape = t.shape();
    int64_t flat = 0;
    bool inside = rank == shape.size();
    for (size_t d = 0; inside && d < rank; ++d) {
      inside = idx[d] >= 0 && idx[d] < shape[d];
      flat = flat * shape[d] + idx[d];
    }
    if (!inside) {  // the checked path names the access
      flat = checked_flat_index(f.block, f.thread, op_->buffer, t,
                                std::vector<int64_t>(idx, idx + rank), "load of");
    }
    double v = load_elem(kind_, t, flat);
    return kFloat ? Value::of_float(v) : Value::of_int(static_cast<int64_t>(v));
  }

  const BufferLoadNode* op_;
  int buffer_;
  ElemKind kind_;
  std::vector<NodePtr> indices_;
  std::vector<std::pair<int, const VarNode*>> var_indices_;  ///< variable_indices
  mutable std::vector<int64_t> rows_;                        ///< the index rows, one per dim
  mutable std::vector<uint64_t> flat_;                       ///< their flat positions
  mutable std::vector<float> floats_;                        ///< a row of halves decoded
  std::vector<std::vector<int>> reads_;                      ///< the slots each index reads
  mutable std::vector<uint64_t> within_, base_;  ///< separable's parts of the flat positions
};

}  // namespace

/// The value of a repeated sub-expression (Tables::uses) for one (run, statement, tick).
struct ReuseCache {
  Value value;
  uint64_t run = 0, statement = 0, tick = 0;
  /// The last row: its values in the form it was asked for (Values, doubles or int64s: the
  /// occurrence that reuses it must ask for the same form), and its key.
  enum class Form { kValues, kFloats, kInts };
  Form form = Form::kValues;
  std::vector<Value> values;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  uint64_t row_run = 0, row_statement = 0, row_tick = 0;
  int row_slot = -1, row_outer_slot = -1;
  int64_t row_lo = 0, row_outer_lo = 0;

  std::vector<Value>& row(Value*) { return values; }
  std::vector<double>& row(double*) { return floats; }
  std::vector<int64_t>& row(int64_t*) { return ints; }
};

namespace {

/// An occurrence of a sub-expression that occurs more than once in the nest (structurally equal:
/// the same operations on the same variables and buffers, as fp4's decoded field in the
/// dequantising kernels). The first occurrence
/// evaluated in a statement computes it; the others in that statement reuse the value. An
/// expression has no side effects and nothing is bound or stored while one statement evaluates
/// its expressions (the key holds the run, the statement count and the binding tick), so the
/// reused value is the one the generic evaluator computes again; an error is raised by the first
/// evaluation, as generically (the run numbers start at 1: a fresh cache never matches).
class Reuse final : public Node {
 public:
  Reuse(NodePtr inner, std::shared_ptr<ReuseCache> cache)
      : inner_(std::move(inner)), cache_(std::move(cache)) {}
  Value eval(Frame& f) const override {
    ReuseCache& c = *cache_;
    if (c.run == f.run && c.statement == f.statement && c.tick == f.tick) return c.value;
    Value v = inner_->eval(f);
    c.value = v;
    c.run = f.run;
    c.statement = f.statement;
    c.tick = f.tick;
    return v;
  }
  /// The same for a row: an occurrence evaluated after another one of the same row, with nothing
  /// bound in between, copies its values (the row's variable keeps the binding it has; the store
  /// binds it after the row). Rows of doubles and int64s are kept as such (fp4's field is read as
  /// integers seven times a weight), not through Values.
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    cached(f, row, out, ReuseCache::Form::kValues,
           [&](Value* to) { inner_->eval_row(f, row, to); });
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    cached(f, row, out, ReuseCache::Form::kFloats,
           [&](double* to) { inner_->eval_row_f(f, row, to); });
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    cached(f, row, out, ReuseCache::Form::kInts,
           [&](int64_t* to) { inner_->eval_row_i(f, row, to); });
  }

 private:
  template <typename T, typename Compute>
  void cached(Frame& f, const Row& row, T* out, ReuseCache::Form form, Compute&& compute) const {
    ReuseCache& c = *cache_;
    std::vector<T>& kept = c.row(out);
    if (c.form == form && c.row_run == f.run && c.row_statement == f.statement &&
        c.row_tick == f.tick && c.row_slot == row.slot && c.row_lo == row.lo &&
        c.row_outer_slot == row.outer_slot && c.row_outer_lo == row.outer_lo &&
        static_cast<int64_t>(kept.size()) == row.n) {
      std::copy(kept.begin(), kept.end(), out);
      return;
    }
    compute(out);
    kept.assign(out, out + row.n);
    c.form = form;
    c.row_run = f.run;
    c.row_statement = f.statement;
    c.row_tick = f.tick;
    c.row_slot = row.slot;
    c.row_lo = row.lo;
    c.row_outer_slot = row.outer_slot;
    c.row_outer_lo = row.outer_lo;
  }

  NodePtr inner_;
  std::shared_ptr<ReuseCache> cache_;
};

/// The value of a sub-expression that does not change in the innermost loop around it, cached:
/// it is computed again only when one of the variables it reads was bound since (its version
/// moved past the tick of the cached value) or in another run of the nest. It reads no buffer the
/// nest stores to, and nothing else writes during a run, so the cached value is the value the
/// generic evaluator would compute; an error is raised by the first evaluation, as generically.
class Memo final : public Node {
 public:
  Memo(NodePtr inner, std::vector<int> deps) : inner_(std::move(inner)), deps_(std::move(deps)) {}
  Value eval(Frame& f) const override {
    if (run_ == f.run) {
      bool valid = true;
      for (int d : deps_) valid = valid && f.version[d] <= at_;
      if (valid) return cached_;
    }
    Value v = inner_->eval(f);
    cached_ = v;
    at_ = f.tick;
    run_ = f.run;
    return v;
  }
  /// Invariant in the innermost loop around it: one value for the whole row when it does not
  /// read the row's variables, one a pass of a 2-d row when it reads the outer loop's only (else
  /// the default, iteration by iteration).
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    if (reads(row.slot)) return Node::eval_row(f, row, out);
    per_pass(f, row, out, [](const Value& v) { return v; });
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    if (reads(row.slot)) return Node::eval_row_f(f, row, out);
    per_pass(f, row, out, [](const Value& v) { return v.f; });
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    if (reads(row.slot)) return Node::eval_row_i(f, row, out);
    per_pass(f, row, out, [](const Value& v) { return v.i; });
  }

 private:
  bool reads(int slot) const {
    return slot >= 0 && std::find(deps_.begin(), deps_.end(), slot) != deps_.end();
  }
  /// out[k] = as(eval) for a row whose innermost variable the value does not read: evaluated
  /// once a pass with the outer loop's variable bound where it reads that, else once.
  template <typename T, typename As>
  void per_pass(Frame& f, const Row& row, T* out, As&& as) const {
    if (!reads(row.outer_slot)) {
      std::fill(out, out + row.n, as(eval(f)));
      return;
    }
    const int64_t inner = row.inner();
    for (int64_t o = 0; o < row.outer_count(); ++o) {
      bind_iteration(f, row.outer_slot, row.outer_lo + o);
      std::fill(out + o * inner, out + (o + 1) * inner, as(eval(f)));
    }
  }

  NodePtr inner_;
  std::vector<int> deps_;
  mutable Value cached_;
  mutable uint64_t at_ = 0, run_ = 0;
};

/// A sub-expression that reads, of the variables the nest binds, only the innermost loop's (see
/// row_invariant): within one run of the nest its row is the same in every row of that loop
/// over the same iterations (`j % 2 * 4` in each row i of a 2-d nest), so the row is kept and
/// copied instead of computed again. eval computes, as the expression itself does.
class RowMemo final : public Node {
 public:
  explicit RowMemo(NodePtr inner) : inner_(std::move(inner)) {}
  Value eval(Frame& f) const override { return inner_->eval(f); }
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    cached(f, row, out, values_, [&](const Row& one, Value* to) { inner_->eval_row(f, one, to); });
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    cached(f, row, out, doubles_,
           [&](const Row& one, double* to) { inner_->eval_row_f(f, one, to); });
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    cached(f, row, out, ints_,
           [&](const Row& one, int64_t* to) { inner_->eval_row_i(f, one, to); });
  }

 private:
  /// A kept row and the run and iterations it is of (run numbers start at 1: none matches).
  template <typename T>
  struct Kept {
    std::vector<T> row;
    uint64_t run = 0;
    int slot = -1;
    int64_t lo = 0;
  };
  /// The innermost loop's pass (`one`: a 2-d row's passes are all the same) kept or computed,
  /// then copied into every pass of the row.
  template <typename T, typename Compute>
  void cached(Frame& f, const Row& row, T* out, Kept<T>& kept, Compute&& compute) const {
    const Row one{row.slot, row.lo, row.inner()};
    if (kept.run == f.run && kept.slot == one.slot && kept.lo == one.lo &&
        static_cast<int64_t>(kept.row.size()) == one.n) {
      std::copy(kept.row.begin(), kept.row.end(), out);
    } else {
      compute(one, out);  // an error keeps nothing
      kept.row.assign(out, out + one.n);
      kept.run = f.run;
      kept.slot = one.slot;
      kept.lo = one.lo;
    }
    for (int64_t o = 1; o < row.outer_count(); ++o) std::copy(out, out + one.n, out + o * one.n);
  }

  NodePtr inner_;
  mutable Kept<Value> values_;
  mutable Kept<double> doubles_;
  mutable Kept<int64_t> ints_;
};

/// Whether `e` is worth a RowMemo: more than a leaf (three nodes, or a load or a call), it reads,
/// of the variables the nest binds, some and only those bound at the depth of the statement
/// being compiled (in a row, the innermost loop's variable: the loop body is the store), and no
/// buffer the nest stores to; and the loop has a loop around it in the nest (else it has one
/// row a run).
bool row_invariant(const Expr& e, const Tables& tables) {
  if (!tables.memo || tables.depth < 2 || e.tree_size() < 3) return false;
  bool reads_row = false, only_row = true;
  pre_order_visit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) {
      auto d = tables.depth_of.find(v);
      if (d == tables.depth_of.end()) return;  // bound outside the nest: fixed in a run
      reads_row = reads_row || d->second == tables.depth;
      only_row = only_row && d->second == tables.depth;
    } else if (const auto* load = x.as<BufferLoadNode>()) {
      only_row = only_row && !tables.stored.count(load->buffer.get());
    }
  });
  return reads_row && only_row;
}

/// The slots `e` reads, when `e` is worth caching in the innermost loop: invariant in it, reading
/// no buffer the nest stores to, and more than a leaf (a load, a call or a few operations).
std::optional<std::vector<int>> memo_deps(const Expr& e, Tables& tables) {
  if (!tables.memo || tables.depth == 0 || e.kind() == ExprKind::kVar ||
      e.kind() == ExprKind::kIntImm || e.kind() == ExprKind::kFloatImm) {
    return std::nullopt;
  }
  bool invariant = true, costly = e.tree_size() >= 4;
  std::vector<const VarNode*> vars;
  pre_order_visit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) {
      auto d = tables.depth_of.find(v);
      if (d != tables.depth_of.end() && d->second >= tables.depth) invariant = false;
      vars.push_back(v);
    } else if (const auto* load = x.as<BufferLoadNode>()) {
      if (tables.stored.count(load->buffer.get())) invariant = false;
      costly = true;
    } else if (x.kind() == ExprKind::kCall) {
      costly = true;
    }
  });
  if (!invariant || !costly) return std::nullopt;
  std::vector<int> deps;
  for (const VarNode* v : vars) {
    int slot = tables.slot(v);
    if (std::find(deps.begin(), deps.end(), slot) == deps.end()) deps.push_back(slot);
  }
  return deps;
}

NodePtr compile_node(const Expr& e, Tables& tables, const IndexContext& ctx);

template <typename Op>
NodePtr binary(const Expr& e, const Expr& a, const Expr& b, Tables& tables,
               const IndexContext& ctx) {
  NodePtr x = compile_expr(a, tables, ctx), y = compile_expr(b, tables, ctx);
  if (!x || !y) return nullptr;
  const bool is_float = Op::kFloat && e.dtype().is_float();
  // A literal operand's Value is of_int(v) or of_float(v): its .f and .i are known here.
  if (const auto* imm = b.as<FloatImmNode>()) {
    if (is_float) return std::make_unique<FloatBinaryImm<Op>>(e.dtype(), std::move(x), imm->value);
  } else if (const auto* imm = b.as<IntImmNode>()) {
    if (is_float) {
      return std::make_unique<FloatBinaryImm<Op>>(e.dtype(), std::move(x),
                                                  Value::of_int(imm->value).f);
    }
    return std::make_unique<IntBinaryImm<Op>>(e.dtype(), std::move(x), imm->value,
                                              DivisionSite{e, ctx});
  }
  if (is_float) return std::make_unique<FloatBinary<Op>>(e.dtype(), std::move(x), std::move(y));
  return std::make_unique<IntBinary<Op>>(e.dtype(), std::move(x), std::move(y),
                                         DivisionSite{e, ctx});
}

template <typename Op>
NodePtr compare(const Expr& a, const Expr& b, Tables& tables, const IndexContext& ctx) {
  NodePtr x = compile_expr(a, tables, ctx), y = compile_expr(b, tables, ctx);
  if (!x || !y) return nullptr;
  if (a.dtype().is_float()) return std::make_unique<Compare<Op, true>>(std::move(x), std::move(y));
  return std::make_unique<Compare<Op, false>>(std::move(x), std::move(y));
}

}  // namespace

bool compile_indices(const std::vector<Expr>& indices, Tables& tables, const IndexContext& ctx,
                     std::vector<NodePtr>& out) {
  for (const Expr& i : indices) {
    out.push_back(compile_expr(i, tables, ctx));
    if (!out.back()) return false;
  }
  return true;
}

std::vector<std::pair<int, const VarNode*>> variable_indices(const std::vector<Expr>& indices,
                                                             Tables& tables) {
  std::vector<std::pair<int, const VarNode*>> vars;
  for (const Expr& i : indices) {
    const auto* v = i.as<VarNode>();
    if (!v) return {};
    vars.emplace_back(tables.slot(v), v);
  }
  return vars;
}

namespace {

NodePtr compile_unshared(const Expr& e, Tables& tables, const IndexContext& ctx) {
  std::optional<std::vector<int>> deps = memo_deps(e, tables);
  const bool row = !deps && row_invariant(e, tables);
  if (!deps && !row) {
    if (NodePtr table = compile_table(e, tables, ctx)) return table;
    return compile_node(e, tables, ctx);
  }
  tables.memo = false;  // nothing to cache inside a cached value
  NodePtr inner = compile_node(e, tables, ctx);
  tables.memo = true;
  if (!inner) return nullptr;
  if (row) return std::make_unique<RowMemo>(std::move(inner));
  return std::make_unique<Memo>(std::move(inner), std::move(*deps));
}

}  // namespace

NodePtr compile_expr(const Expr& e, Tables& tables, const IndexContext& ctx) {
  auto uses = e.tree_size() >= Tables::kMinReuse && e.tree_size() <= Tables::kMaxReuse
                  ? tables.uses.find(e)
                  : tables.uses.end();
  // Inside a repeated sub-expression, a part that occurs no more often than it is evaluated only
  // when the whole is: it needs no cache of its own.
  if (uses == tables.uses.end() || uses->second <= tables.enclosing_uses)
    return compile_unshared(e, tables, ctx);
  const int enclosing = tables.enclosing_uses;
  tables.enclosing_uses = uses->second;
  NodePtr inner = compile_unshared(e, tables, ctx);
  tables.enclosing_uses = enclosing;
  if (!inner) return nullptr;
  std::shared_ptr<ReuseCache>& cache = tables.reuse[e];
  if (!cache) cache = std::make_shared<ReuseCache>();
  return std::make_unique<Reuse>(std::move(inner), cache);
}

namespace {

NodePtr compile_node(const Expr& e, Tables& tables, const IndexContext& ctx) {
  if (e.dtype().lanes != 1) return nullptr;
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return std::make_unique<IntImm>(e.as<IntImmNode>()->value);
    case ExprKind::kFloatImm:
      return std::make_unique<FloatImm>(e.as<FloatImmNode>()->value);
    case ExprKind::kVar: {
      const auto* v = e.as<VarNode>();
      return std::make_unique<VarRead>(tables.slot(v), v);
    }
#define TESSEL_CASE_(Name, ...)                               \
  case ExprKind::k##Name: {                                   \
    const auto* op = static_cast<const Name##Node*>(e.get()); \
    return binary<Name##Op>(e, op->a, op->b, tables, ctx);    \
  }
      TESSEL_BINARY_NODES(TESSEL_CASE_)
#undef TESSEL_CASE_
#define TESSEL_CASE_(Name)                                    \
  case ExprKind::k##Name: {                                   \
    const auto* op = static_cast<const Name##Node*>(e.get()); \
    return compare<Name##Cmp>(op->a, op->b, tables, ctx);     \
  }
      TESSEL_CASE_(EQ)
      TESSEL_CASE_(NE)
      TESSEL_CASE_(LT)
      TESSEL_CASE_(LE)
      TESSEL_CASE_(GT)
      TESSEL_CASE_(GE)
#undef TESSEL_CASE_
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const auto* a = e.kind() == ExprKind::kAnd ? &static_cast<const AndNode*>(e.get())->a
                                                 : &static_cast<const OrNode*>(e.get())->a;
      const auto* b = e.kind() == ExprKind::kAnd ? &static_cast<const AndNode*>(e.get())->b
                                                 : &static_cast<const OrNode*>(e.get())->b;
      NodePtr x = compile_expr(*a, tables, ctx), y = compile_expr(*b, tables, ctx);
      if (!x || !y) return nullptr;
      return std::make_unique<Logic>(e.kind() == ExprKind::kAnd, std::move(x), std::move(y));
    }
    case ExprKind::kNot: {
      NodePtr x = compile_expr(e.as<NotNode>()->a, tables, ctx);
      return x ? std::make_unique<Not>(std::move(x)) : nullptr;
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      NodePtr c = compile_expr(op->cond, tables, ctx), t = compile_expr(op->t, tables, ctx),
              f = compile_expr(op->f, tables, ctx);
      if (!c || !t || !f) return nullptr;
      return std::make_unique<Select>(std::move(c), std::move(t), std::move(f));
    }
    case ExprKind::kCast: {
      const auto* op = e.as<CastNode>();
      NodePtr v = compile_expr(op->value, tables, ctx);
      if (!v) return nullptr;
      if (op->dtype.is_float())
        return std::make_unique<Cast<double>>(op->value.dtype(), op->dtype, std::move(v));
      return std::make_unique<Cast<int64_t>>(op->value.dtype(), op->dtype, std::move(v));
    }
    case ExprKind::kCall: {
      const auto* op = e.as<CallNode>();
      if (is_shuffle(op->op) || op->args.empty()) return nullptr;  // reads another lane
      NodePtr a = compile_expr(op->args[0], tables, ctx), b;
      if (!a) return nullptr;
      if (op->op == Builtin::kPow) {
        if (op->args.size() < 2 || !(b = compile_expr(op->args[1], tables, ctx))) return nullptr;
      }
      if (op->op == Builtin::kAbs && !op->dtype.is_float())
        return std::make_unique<IntAbs>(op->dtype, std::move(a));
      const bool halves = has_f16_table(op->op) && op->dtype == DataType::f16() &&
                          op->args[0].dtype() == DataType::f16();
      return std::make_unique<Call>(op->dtype, op->op, std::move(a), std::move(b),
                                    halves ? f16_builtin_table(op->op) : nullptr);
    }
    case ExprKind::kBufferLoad: {
      const auto* op = e.as<BufferLoadNode>();
      if (op->indices.size() > Load<double>::kMaxRank || op->buffer->dtype.lanes != 1)
        return nullptr;
      IndexContext inner{"load of", op->buffer.get(), &op->indices};
      std::vector<NodePtr> indices;
      if (!compile_indices(op->indices, tables, inner, indices)) return nullptr;
      std::vector<std::vector<int>> reads;
      for (const Expr& i : op->indices) {
        reads.emplace_back();
        pre_order_visit(i, [&](const Expr& x) {
          if (const auto* v = x.as<VarNode>()) reads.back().push_back(tables.slot(v));
        });
      }
      if (op->dtype.is_float()) {
        return std::make_unique<Load<double>>(op, tables.buffer(op->buffer), std::move(indices),
                                              variable_indices(op->indices, tables),
                                              std::move(reads));
      }
      return std::make_unique<Load<int64_t>>(op, tables.buffer(op->buffer), std::move(indices),
                                             variable_indices(op->indices, tables),
                                             std::move(reads));
    }
  }
  return nullptr;
}

}  // namespace

}  // namespace tessel::tile_parallel
