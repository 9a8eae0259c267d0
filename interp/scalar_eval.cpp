// The per-thread scalar expression evaluator.
#include "interp/scalar_eval.h"

#include <cmath>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "core/stmt.h"
#include "interp/division_error.h"
#include "interp/float_builtin.h"

namespace tessel {

int64_t checked_flat_index(const BlockState& block, int thread, const Buffer& buffer,
                           const HostTensor& tensor, const std::vector<int64_t>& indices,
                           const char* access) {
  int64_t flat = 0;
  const auto& shape = tensor.shape();
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d] < 0 || indices[d] >= shape[d]) {
      std::string idx = "[", ext = "(";
      for (size_t k = 0; k < indices.size(); ++k) {
        idx += (k ? ", " : "") + std::to_string(indices[k]);
        ext += (k ? ", " : "") + std::to_string(shape[k]);
      }
      const SourceLoc& loc = block.current_loc();
      user_error("kernel '" + block.kernel()->name + "', " + block.block_name() + ", thread " +
                 std::to_string(thread) + (loc.known() ? " (at " + loc.str() + ")" : "") + ": " +
                 access + " " + buffer->name + idx + "] is out of bounds of its shape " + ext +
                 ")" + "; guard the access with an `if` on the index or shrink the loop");
    }
    flat = flat * shape[d] + indices[d];
  }
  return flat;
}

namespace {

class Evaluator : public ExprFunctor<Value> {
 public:
  Evaluator(BlockState& block, int thread) : block_(block), thread_(thread) {}

 protected:
  Value visit_IntImm(const IntImmNode* op, const Expr&) override {
    return Value::of_int(op->value);
  }
  Value visit_FloatImm(const FloatImmNode* op, const Expr&) override {
    return Value::of_float(op->value);
  }
  Value visit_Var(const VarNode* op, const Expr&) override {
    const Value* v = block_.find_var(op, thread_);
    if (!v) {
      user_error("kernel '" + block_.kernel()->name + "': variable '" + op->name +
                 "' is used outside the scope that defines it");
    }
    return *v;
  }
  Value visit_Not(const NotNode* op, const Expr&) override {
    return Value::of_int(!visit(op->a).i);
  }
  Value visit_Select(const SelectNode* op, const Expr&) override {
    return visit(op->cond).i ? visit(op->t) : visit(op->f);
  }
  Value visit_Cast(const CastNode* op, const Expr&) override {
    Value v = visit(op->value);
    DataType from = op->value.dtype(), to = op->dtype;
    if (to.is_float()) return Value::of_float(round_to(to, v.as_double(from)));
    if (from.is_float()) return Value::of_int(static_cast<int64_t>(round_to(to, std::trunc(v.f))));
    return Value::of_int(wrap_int(to, v.i));
  }
  Value visit_BufferLoad(const BufferLoadNode* op, const Expr&) override {
    // The indices on the stack (a load is the evaluator's most frequent node: no allocation).
    constexpr size_t kMaxRank = 8;
    const size_t rank = op->indices.size();
    if (rank > kMaxRank) return load_any_rank(op);
    int64_t idx[kMaxRank];
    IndexOf outer = index_of_;
    index_of_ = IndexOf{"load of", op->buffer.get(), &op->indices};
    for (size_t d = 0; d < rank; ++d) idx[d] = visit(op->indices[d]).i;
    index_of_ = outer;
    HostTensor& t = block_.storage(op->buffer, thread_);
    const std::vector<int64_t>& shape = t.shape();
    int64_t flat = 0;
    bool inside = rank == shape.size();
    for (size_t d = 0; inside && d < rank; ++d) {
      inside = idx[d] >= 0 && idx[d] < shape[d];
      flat = flat * shape[d] + idx[d];
    }
    if (!inside) {  // the checked path names the access
      flat = checked_flat_index(block_, thread_, op->buffer, t,
                                std::vector<int64_t>(idx, idx + rank), "load of");
    }
    double v = t.at(flat);
    return op->dtype.is_float() ? Value::of_float(v) : Value::of_int(static_cast<int64_t>(v));
  }
  Value load_any_rank(const BufferLoadNode* op) {
    std::vector<int64_t> idx;
    idx.reserve(op->indices.size());
    IndexOf outer = index_of_;
    index_of_ = IndexOf{"load of", op->buffer.get(), &op->indices};
    for (const Expr& i : op->indices) idx.push_back(visit(i).i);
    index_of_ = outer;
    HostTensor& t = block_.storage(op->buffer, thread_);
    int64_t flat = checked_flat_index(block_, thread_, op->buffer, t, idx, "load of");
    double v = t.at(flat);
    return op->dtype.is_float() ? Value::of_float(v) : Value::of_int(static_cast<int64_t>(v));
  }
  Value visit_Call(const CallNode* op, const Expr& e) override;

#define TESSEL_ARITH_(name, int_expr, float_expr)                    \
  Value visit_##name(const name##Node* op, const Expr& e) override { \
    Value a = visit(op->a), b = visit(op->b);                        \
    if (op->dtype.is_float()) {                                      \
      double x = a.f, y = b.f;                                       \
      return Value::of_float(round_to(op->dtype, float_expr));       \
    }                                                                \
    int64_t x = a.i, y = b.i;                                        \
    return Value::of_int(wrap_int(op->dtype, int_expr));             \
  }
  TESSEL_ARITH_(Add, static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)),
                x + y)
  TESSEL_ARITH_(Sub, static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)),
                x - y)
  TESSEL_ARITH_(Mul, static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)),
                x* y)
  TESSEL_ARITH_(Div, floor_div(x, nonzero(y, e)), x / y)
  TESSEL_ARITH_(FloorDiv, floor_div(x, nonzero(y, e)), std::floor(x / y))
  TESSEL_ARITH_(FloorMod, floor_mod(x, nonzero(y, e)), x - std::floor(x / y) * y)
  TESSEL_ARITH_(Min, std::min(x, y), std::fmin(x, y))
  TESSEL_ARITH_(Max, std::max(x, y), std::fmax(x, y))
#undef TESSEL_ARITH_

#define TESSEL_BITS_(name, int_expr)                               \
  Value visit_##name(const name##Node* op, const Expr&) override { \
    int64_t x = visit(op->a).i, y = visit(op->b).i;                \
    return Value::of_int(wrap_int(op->dtype, int_expr));           \
  }
  TESSEL_BITS_(BitAnd, x& y)
  TESSEL_BITS_(BitOr, x | y)
  TESSEL_BITS_(BitXor, x ^ y)
  TESSEL_BITS_(Shl, (y < 0 || y >= 64) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) << y))
  TESSEL_BITS_(Shr, x >> std::clamp<int64_t>(y, 0, 63))
#undef TESSEL_BITS_

#define TESSEL_CMP_(name, cmp)                                         \
  Value visit_##name(const name##Node* op, const Expr&) override {     \
    Value a = visit(op->a), b = visit(op->b);                          \
    bool r = op->a.dtype().is_float() ? (a.f cmp b.f) : (a.i cmp b.i); \
    return Value::of_int(r);                                           \
  }
  TESSEL_CMP_(EQ, ==)
  TESSEL_CMP_(NE, !=)
  TESSEL_CMP_(LT, <)
  TESSEL_CMP_(LE, <=)
  TESSEL_CMP_(GT, >)
  TESSEL_CMP_(GE, >=)
#undef TESSEL_CMP_
  Value visit_And(const AndNode* op, const Expr&) override {
    return Value::of_int(visit(op->a).i && visit(op->b).i);
  }
  Value visit_Or(const OrNode* op, const Expr&) override {
    return Value::of_int(visit(op->a).i || visit(op->b).i);
  }

 public:
  /// The access whose indices are being evaluated (none outside an index).
  struct IndexOf {
    const char* access = nullptr;
    const BufferNode* buffer = nullptr;
    const std::vector<Expr>* indices = nullptr;
  };
  IndexOf index_of_;

 private:
  /// `y`, or a user error naming the kernel, block, thread, source line, the division and the
  /// access (buffer and indices) it is an index of.
  int64_t nonzero(int64_t y, const Expr& division) const {
    if (y == 0) {
      const SourceLoc& loc = block_.current_loc();
      std::string where = "kernel '" + block_.kernel()->name + "', " + block_.block_name() +
                          ", thread " + std::to_string(thread_) +
                          (loc.known() ? " (at " + loc.str() + ")" : "");
      std::string access = index_of_.access ? access_words(index_of_.access, index_of_.buffer->name,
                                                           *index_of_.indices)
                                            : "";
      user_error(division_by_zero_message(where, division, access));
    }
    return y;
  }
  Value shuffle(const CallNode* op);

  BlockState& block_;
  int thread_;
};

Value Evaluator::visit_Call(const CallNode* op, const Expr&) {
  if (is_shuffle(op->op)) return shuffle(op);
  Value a = visit(op->args[0]);
  DataType t = op->dtype;
  if (op->op == Builtin::kAbs && !t.is_float()) return Value::of_int(wrap_int(t, std::llabs(a.i)));
  double y = op->op == Builtin::kPow ? visit(op->args[1]).f : 0.0;
  double r = float_builtin(op->op, a.f, y);
  return Value::of_float(round_to(t, r));
}

/// Warp shuffles read `value` as another lane of the same warp computes it at this point of the
/// lock-step execution. Out-of-range sources return the lane's own value (CUDA semantics).
Value Evaluator::shuffle(const CallNode* op) {
  int64_t arg = visit(op->args[1]).i;
  int lane = thread_ % kNvidiaWarpSize, warp_base = thread_ - lane;
  int64_t src = lane;
  switch (op->op) {
    case Builtin::kShflXor:
      src = lane ^ arg;
      break;
    case Builtin::kShflDown:
      src = lane + arg;
      break;
    case Builtin::kShflUp:
      src = lane - arg;
      break;
    default:
      break;
  }
  if (src < 0 || src >= kNvidiaWarpSize) src = lane;
  return Evaluator(block_, warp_base + static_cast<int>(src)).visit(op->args[0]);
}

}  // namespace

Value eval_scalar(const Expr& e, BlockState& block, int thread) {
  return Evaluator(block, thread).visit(e);
}

int64_t eval_store_index(const Expr& index, const StoreNode* store, BlockState& block, int thread) {
  Evaluator ev(block, thread);
  ev.index_of_ = Evaluator::IndexOf{"store to", store->buffer.get(), &store->indices};
  return ev.visit(index).i;
}

}  // namespace tessel
