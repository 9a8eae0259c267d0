// The expression printer: Python syntax with Python's operator precedence.
#include "core/expr_printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "core/buffer.h"
#include "core/expr_functor.h"

namespace tessel {

std::string float_literal(double value) {
  if (std::isnan(value)) return "T.nan";
  if (std::isinf(value)) return value > 0 ? "T.inf" : "-T.inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

namespace {

// Python precedence levels, higher binds tighter.
enum Prec : int {
  kOr = 1, kAnd, kNot, kCmp, kBitOr, kBitXor, kBitAnd, kShift, kAdd, kMul, kUnary, kAtom
};

int precedence(ExprKind k) {
  switch (k) {
    case ExprKind::kOr: return kOr;
    case ExprKind::kAnd: return kAnd;
    case ExprKind::kNot: return kNot;
    case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
    case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: return kCmp;
    case ExprKind::kBitOr: return kBitOr;
    case ExprKind::kBitXor: return kBitXor;
    case ExprKind::kBitAnd: return kBitAnd;
    case ExprKind::kShl: case ExprKind::kShr: return kShift;
    case ExprKind::kAdd: case ExprKind::kSub: return kAdd;
    case ExprKind::kMul: case ExprKind::kDiv: case ExprKind::kFloorDiv: case ExprKind::kFloorMod:
      return kMul;
    default: return kAtom;
  }
}

int precedence(const Expr& e) {
  if (const auto* i = e.as<IntImmNode>(); i && i->value < 0) return kUnary;
  if (const auto* f = e.as<FloatImmNode>(); f && std::signbit(f->value)) return kUnary;
  return precedence(e.kind());
}

class Printer : public ExprFunctor<void> {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}
  void print(const Expr& e) { visit(e); }

 protected:
  void visit_IntImm(const IntImmNode* op, const Expr&) override {
    if (op->dtype == DataType::i32()) {
      os_ << op->value;
    } else if (op->dtype.is_bool()) {
      os_ << (op->value ? "True" : "False");
    } else {
      os_ << "T." << op->dtype.name() << "(" << op->value << ")";
    }
  }
  void visit_FloatImm(const FloatImmNode* op, const Expr&) override {
    if (op->dtype == DataType::f32()) {
      os_ << float_literal(op->value);
    } else {
      os_ << "T." << op->dtype.name() << "(" << float_literal(op->value) << ")";
    }
  }
  void visit_Var(const VarNode* op, const Expr&) override { os_ << op->name; }
  void visit_Not(const NotNode* op, const Expr&) override {
    os_ << "not ";
    child(op->a, kNot, false);
  }
  void visit_Select(const SelectNode* op, const Expr&) override {
    call("T.if_then_else", {op->cond, op->t, op->f});
  }
  void visit_Cast(const CastNode* op, const Expr&) override {
    os_ << "T.cast(";
    print(op->value);
    os_ << ", \"" << op->dtype.name() << "\")";
  }
  void visit_BufferLoad(const BufferLoadNode* op, const Expr&) override {
    os_ << op->buffer->name << "[";
    list(op->indices);
    os_ << "]";
  }
  void visit_Call(const CallNode* op, const Expr&) override {
    call(std::string("T.") + builtin_name(op->op), op->args);
  }
  void visit_Min(const MinNode* op, const Expr&) override { call("T.min", {op->a, op->b}); }
  void visit_Max(const MaxNode* op, const Expr&) override { call("T.max", {op->a, op->b}); }

#define TESSEL_INFIX_(name, sym)                                        \
  void visit_##name(const name##Node* op, const Expr& e) override {    \
    infix(e, op->a, op->b, sym);                                       \
  }
  TESSEL_INFIX_(Add, "+") TESSEL_INFIX_(Sub, "-") TESSEL_INFIX_(Mul, "*")
  TESSEL_INFIX_(Div, "/") TESSEL_INFIX_(FloorDiv, "//") TESSEL_INFIX_(FloorMod, "%")
  TESSEL_INFIX_(BitAnd, "&") TESSEL_INFIX_(BitOr, "|") TESSEL_INFIX_(BitXor, "^")
  TESSEL_INFIX_(Shl, "<<") TESSEL_INFIX_(Shr, ">>")
  TESSEL_COMPARE_NODES(TESSEL_INFIX_)
#undef TESSEL_INFIX_

 private:
  void infix(const Expr& e, const Expr& a, const Expr& b, const char* sym) {
    int p = precedence(e.kind());
    // Left-associative: the left child may share our precedence, the right one may not.
    // Python chains comparisons, so a comparison child of a comparison is always parenthesised.
    bool cmp = p == kCmp;
    child(a, p, cmp);
    os_ << " " << sym << " ";
    child(b, p, true);
  }
  void child(const Expr& c, int parent, bool strict) {
    int p = precedence(c);
    bool paren = strict ? p <= parent : p < parent;
    if (paren) os_ << "(";
    print(c);
    if (paren) os_ << ")";
  }
  void call(const std::string& name, const std::vector<Expr>& args) {
    os_ << name << "(";
    list(args);
    os_ << ")";
  }
  void list(const std::vector<Expr>& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) os_ << ", ";
      print(items[i]);
    }
  }
  std::ostream& os_;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  if (!e.defined()) return os << "<undefined>";
  Printer(os).print(e);
  return os;
}

}  // namespace tessel
