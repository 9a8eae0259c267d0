// The kernel parser's expression evaluator: Python's grammar and precedence over Values, from
// conditional expressions down to atoms, calls, attributes and subscripts. Constants are computed
// as Python would (kernel_parser_pyops.cpp); operands that are expressions of variables build IR.
// `and`, `or` and conditional expressions evaluate only the operand Python would: the others are
// read without evaluation (no_eval_), so `x.bits if x is not None else 16` works with x None.
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

bool is_comparison_op(const Token& t) {
  return t.kind == TokenKind::kOp && (t.text == "<" || t.text == ">" || t.text == "<=" ||
                                      t.text == ">=" || t.text == "==" || t.text == "!=");
}

}  // namespace

Value Parser::parse_value() {
  const Token at = cur_->peek();
  Value v = eval_test();
  if (v.kind == Value::Kind::kExpr) check_depth(v.expr, at);
  return v;
}

Value Parser::parse_testlist() {
  const Token at = cur_->peek();
  Value first = parse_value();
  if (!cur_->at_op(",")) return first;
  Value tuple;
  tuple.kind = Value::Kind::kTuple;
  tuple.items.push_back(std::move(first));
  while (cur_->accept_op(",")) {
    if (at_terminator()) break;
    tuple.items.push_back(parse_value());
  }
  (void)at;
  return tuple;
}

Expr Parser::parse_expr() {
  const Token at = cur_->peek();
  return to_expr(parse_value(), at, "this");
}

Value Parser::numeric(const Value& v, const Token& at) const {
  if (v.kind == Value::Kind::kElement ||
      (v.kind == Value::Kind::kBuffer && var_buffers_.count(v.buffer.get()))) {
    return Value::of(to_expr(v, at, "the value"));
  }
  return v;
}

const Token* Parser::keyword_ahead() const {
  int depth = 0;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    switch (t.kind) {
      case TokenKind::kEnd:
      case TokenKind::kNewline:
      case TokenKind::kIndent:
      case TokenKind::kDedent:
        return nullptr;
      case TokenKind::kName:
        if (depth > 0) break;
        if (t.text == "if" || t.text == "for") return &t;
        if (t.text == "else" || t.text == "lambda") return nullptr;
        break;
      case TokenKind::kOp:
        if (t.text == "(" || t.text == "[" || t.text == "{") {
          ++depth;
        } else if (t.text == ")" || t.text == "]" || t.text == "}") {
          if (--depth < 0) return nullptr;
        } else if (depth == 0 &&
                   (t.text == "," || t.text == ":" || t.text == "=" || t.text == ";")) {
          return nullptr;
        }
        break;
      default:
        break;
    }
  }
}

// ---- Conditional expressions and boolean operators -------------------------------------------

Value Parser::eval_test() {
  if (cur_->at_name("lambda")) {
    fail(cur_->peek(),
         "lambda is only accepted in layout specs (`tessel layout`, T.annotate_layout); it is not "
         "a value Tessel evaluates");
  }
  const Token* keyword = no_eval_ ? nullptr : keyword_ahead();
  if (keyword && keyword->text == "for") {
    fail(*keyword,
         "comprehensions ([x for x in ...]) are not supported; write the items out, e.g. "
         "[a, b, c]");
  }
  if (!keyword) return eval_or();
  // `a if c else b`: c first, then only the branch it picks.
  size_t start = cur_->position();
  {
    NoEval skip(*this);
    eval_or();
  }
  const Token if_tok = cur_->next();
  const Token cond_at = cur_->peek();
  Value cond = numeric(eval_or(), cond_at);
  if (!cur_->accept_name("else")) {
    fail(cur_->peek(), "expected 'else' to finish the conditional expression started at column " +
                           std::to_string(if_tok.column) + ", found " +
                           TokenCursor::describe(cur_->peek()));
  }
  auto truth = py_truth(cond);
  if (truth && !*truth) return eval_test();
  size_t else_at = cur_->position();
  cur_->rewind(start);
  const Token then_at = cur_->peek();
  Value then = eval_or();
  cur_->rewind(else_at);
  if (truth) {
    NoEval skip(*this);
    eval_test();
    return then;
  }
  const Token else_tok = cur_->peek();
  Value other = eval_test();
  Expr c = to_expr(cond, cond_at, "the condition");
  Expr t = to_expr(then, then_at, "a branch of a conditional expression on `" + to_string(c) + "`");
  Expr f =
      to_expr(other, else_tok, "a branch of a conditional expression on `" + to_string(c) + "`");
  return Value::of(located(if_tok, [&] { return if_then_else(c, t, f); }));
}

Value Parser::eval_or() { return eval_boolean("or"); }

Value Parser::eval_and() { return eval_boolean("and"); }

Value Parser::eval_boolean(const char* op) {
  bool is_or = op[0] == 'o';
  auto operand = [&] { return is_or ? eval_boolean("and") : eval_not(); };
  const Token first_at = cur_->peek();
  Value a = operand();
  while (cur_->at_name(op)) {
    const Token op_tok = cur_->next();
    if (no_eval_) {
      operand();
      continue;
    }
    a = numeric(a, first_at);
    auto truth = py_truth(a);
    if (truth && *truth == is_or) {  // decided: the right operand is not evaluated
      NoEval skip(*this);
      operand();
      continue;
    }
    const Token b_at = cur_->peek();
    Value b = numeric(operand(), b_at);
    if (truth) {
      a = b;
      continue;
    }
    Expr x = to_expr(a, first_at, std::string("the left operand of '") + op + "'");
    Expr y = to_expr(b, b_at, std::string("the right operand of '") + op + "'");
    a = Value::of(located(op_tok, [&] { return is_or ? (x || y) : (x && y); }));
  }
  return a;
}

Value Parser::eval_not() {
  if (cur_->at_name("not")) {
    const Token at = cur_->next();
    const Token v_at = cur_->peek();
    Value v = eval_not();
    if (no_eval_) return Value::none();
    return located(at, [&] { return py_not(numeric(v, v_at)); });
  }
  return eval_comparison();
}

Value Parser::eval_comparison() {
  const Token left_at = cur_->peek();
  Value left = eval_binary(0);
  Value result;
  bool have = false, decided_false = false;
  while (is_comparison_op(cur_->peek()) || cur_->at_name("in") || cur_->at_name("is") ||
         (cur_->at_name("not") && cur_->at_name("in", 1))) {
    const Token op_tok = cur_->next();
    std::string op = op_tok.text;
    if (op == "not") {
      cur_->next();
      op = "not in";
    } else if (op == "is" && cur_->accept_name("not")) {
      op = "is not";
    }
    const Token right_at = cur_->peek();
    if (no_eval_ || decided_false) {
      NoEval skip(*this);
      eval_binary(0);
      continue;
    }
    Value right = numeric(eval_binary(0), right_at);
    left = numeric(left, left_at);
    Value cmp = located_syntax(op_tok, [&] { return py_compare(op, left, right); });
    if (!have) {
      result = cmp;
    } else if (!py_truth(result)) {
      Expr c = to_expr(cmp, op_tok, "a comparison");
      result = Value::of(py_truth(cmp) ? result.expr : (result.expr && c));
    } else {
      result = cmp;
    }
    have = true;
    auto truth = py_truth(result);
    decided_false = truth && !*truth;
    left = right;
  }
  return have ? result : left;
}

// ---- Binary operators ---------------------------------------------------------------------------

Value Parser::eval_binary(int level) {
  // Python's binary operators, loosest first; level 6 is the unary operators and '**'.
  static const std::vector<std::vector<const char*>> kLevels = {
      {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"}};
  if (level == static_cast<int>(kLevels.size())) return eval_factor();
  const Token first_at = cur_->peek();
  Value a = eval_binary(level + 1);
  while (true) {
    const char* found = nullptr;
    for (const char* op : kLevels[level]) {
      if (cur_->at_op(op)) found = op;
    }
    if (!found) return a;
    const Token op_tok = cur_->next();
    const Token b_at = cur_->peek();
    Value b = eval_binary(level + 1);
    if (no_eval_) continue;
    Value x = numeric(a, first_at), y = numeric(b, b_at);
    a = located_syntax(op_tok, [&] { return py_binary(found, x, y); });
  }
}

Value Parser::eval_factor() {
  if (cur_->at_op("-") || cur_->at_op("+") || cur_->at_op("~")) {
    const Token op = cur_->next();
    const Token at = cur_->peek();
    Value v = eval_factor();
    if (no_eval_) return v;
    v = numeric(v, at);
    if (op.text == "+") {
      if (v.kind != Value::Kind::kExpr) fail(op, "unary '+' needs a number, got " + v.describe());
      return v;
    }
    return located_syntax(op, [&] { return op.text == "-" ? py_negate(v) : py_invert(v); });
  }
  return eval_power();
}

Value Parser::eval_power() {
  const Token at = cur_->peek();
  Value base = eval_primary();
  if (!cur_->at_op("**")) return base;
  const Token op = cur_->next();
  const Token e_at = cur_->peek();
  Value exponent = eval_factor();
  if (no_eval_) return base;
  Value x = numeric(base, at), y = numeric(exponent, e_at);
  return located_syntax(op, [&] { return py_binary("**", x, y); });
}

// ---- Atoms and trailers -------------------------------------------------------------------------

Value Parser::eval_primary() {
  const Token at = cur_->peek();
  Value v = eval_atom();
  while (true) {
    if (cur_->at_op(".") && cur_->peek(1).kind == TokenKind::kName) {
      cur_->next();
      const Token attr = cur_->next();
      if (cur_->at_op("(") && v.kind != Value::Kind::kModule) {
        v = eval_method(v, attr);
      } else if (!no_eval_) {
        v = attribute(v, attr.text, attr);
      }
      continue;
    }
    if (cur_->at_op("(")) {
      v = eval_call(v, at);
      continue;
    }
    if (cur_->at_op("[")) {
      v = eval_subscript(v, at);
      continue;
    }
    return v;
  }
}

Value Parser::eval_atom() {
  const Token t = cur_->peek();
  switch (t.kind) {
    case TokenKind::kInt:
      cur_->next();
      return Value::of(make_int(t.int_value));
    case TokenKind::kFloat:
      cur_->next();
      return Value::of(Expr(t.float_value));
    case TokenKind::kString: {
      std::string s = cur_->next().text;
      while (cur_->peek().kind == TokenKind::kString) s += cur_->next().text;
      return Value::string(std::move(s));
    }
    case TokenKind::kName: {
      if (t.text == "True" || t.text == "False") {
        cur_->next();
        return py_bool(t.text == "True");
      }
      if (t.text == "None") {
        cur_->next();
        return Value::none();
      }
      if (is_keyword(t.text)) {
        fail(t, "expected an expression, found '" + t.text + "'");
      }
      cur_->next();
      if (no_eval_) return Value::none();
      const Binding* b = lookup(t.text);
      if (!b) unknown_name(t.text, t);
      return b->value;
    }
    case TokenKind::kOp:
      if (t.text == "(") return eval_parenthesised();
      if (t.text == "[") return eval_list();
      if (t.text == "{") {
        if (!no_eval_) {
          fail(t,
               "dicts and sets are not supported here; Tessel evaluates numbers, strings, "
               "tuples, lists and None (a dict is accepted in T.annotate_layout)");
        }
        skip_brackets();
        return Value::none();
      }
      if (t.text == "*") {
        fail(t, "star expressions (*args) are not supported; write the items out");
      }
      break;
    default:
      break;
  }
  fail(t, "expected an expression, found " + TokenCursor::describe(t));
}

void Parser::skip_brackets() {
  const Token open = cur_->peek();
  int depth = 0;
  do {
    if (cur_->at_end()) unclosed(open, "here");
    if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
    if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
    cur_->next();
  } while (depth > 0);
}

Value Parser::eval_parenthesised() {
  const Token open = cur_->next();
  Value tuple;
  tuple.kind = Value::Kind::kTuple;
  if (cur_->accept_op(")")) return tuple;  // ()
  Value first = parse_value();
  if (cur_->at_op(")")) {
    cur_->next();
    return first;  // (x): the value itself
  }
  tuple.items.push_back(std::move(first));
  while (cur_->accept_op(",")) {
    if (cur_->at_op(")")) break;
    tuple.items.push_back(parse_value());
  }
  if (!cur_->accept_op(")")) unclosed(open, "of this tuple");
  return tuple;
}

Value Parser::eval_list() {
  const Token open = cur_->next();
  Value list;
  list.kind = Value::Kind::kTuple;
  list.is_list = true;
  if (cur_->accept_op("]")) return list;
  Value first = parse_value();
  list.items.push_back(std::move(first));
  while (cur_->accept_op(",")) {
    if (cur_->at_op("]")) break;
    list.items.push_back(parse_value());
  }
  if (!cur_->accept_op("]")) unclosed(open, "of this list");
  return list;
}

// ---- Subscripts ---------------------------------------------------------------------------------

Value Parser::eval_subscript(const Value& base, const Token& at) {
  struct Item {
    Value lo, hi;
    bool has_lo = false, has_hi = false, slice = false;
    Token at;
  };
  const Token open = cur_->next();
  std::vector<Item> items;
  bool any_slice = false;
  while (!cur_->at_op("]")) {
    Item item;
    item.at = cur_->peek();
    if (!cur_->at_op(":")) {
      item.lo = numeric(parse_value(), item.at);
      item.has_lo = true;
    }
    if (cur_->accept_op(":")) {
      item.slice = any_slice = true;
      if (!cur_->at_op(",") && !cur_->at_op("]")) {
        const Token hi_at = cur_->peek();
        item.hi = numeric(parse_value(), hi_at);
        item.has_hi = true;
      }
      if (cur_->at_op(":")) fail(cur_->peek(), "a slice step is not supported; regions are dense");
    }
    items.push_back(item);
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->at_op("]")) unclosed(open, "of this subscript");
  cur_->next();
  if (no_eval_) return Value::none();

  using K = Value::Kind;
  if (base.kind == K::kTuple || base.kind == K::kString) {
    bool is_string = base.kind == K::kString;
    int64_t n = static_cast<int64_t>(is_string ? base.text.size() : base.items.size());
    if (items.size() != 1) fail(open, base.describe() + " takes one index");
    const Item& item = items[0];
    auto constant = [&](const Value& v, const Token& where) {
      auto c = py_int(v);
      if (!c)
        fail(where,
             "an index of " + base.describe() + " must be a constant integer, got " + v.describe());
      return *c;
    };
    if (!item.slice) {
      int64_t k = constant(item.lo, item.at);
      if (k < -n || k >= n) {
        fail(item.at, "index " + std::to_string(k) + " is out of range: " + base.describe() +
                          " has " + plural(static_cast<size_t>(n), "item"));
      }
      if (k < 0) k += n;
      if (is_string) return Value::string(base.text.substr(static_cast<size_t>(k), 1));
      return base.items[static_cast<size_t>(k)];
    }
    auto clamp = [&](int64_t k) { return std::max<int64_t>(0, std::min(n, k < 0 ? k + n : k)); };
    int64_t lo = item.has_lo ? clamp(constant(item.lo, item.at)) : 0;
    int64_t hi = item.has_hi ? clamp(constant(item.hi, item.at)) : n;
    Value r = base;
    r.text.clear();
    r.items.clear();
    for (int64_t k = lo; k < hi; ++k) {
      if (is_string) {
        r.text += base.text[static_cast<size_t>(k)];
      } else {
        r.items.push_back(base.items[static_cast<size_t>(k)]);
      }
    }
    return r;
  }
  if (base.kind != K::kBuffer) fail(at, base.describe() + " cannot be indexed");
  const Buffer& buffer = base.buffer;
  if (var_buffers_.count(buffer.get())) {
    std::vector<Expr> indices;
    for (const Item& item : items) {
      if (item.slice)
        fail(item.at, "'" + buffer->name + "' is a T.alloc_var scalar; index it with [0]");
      indices.push_back(to_expr(item.lo, item.at, "an index of '" + buffer->name + "'"));
    }
    return Value::of(located(at, [&] { return BufferLoadNode::make(buffer, indices); }));
  }
  if (items.size() != buffer->ndim()) {
    fail(at, "region of '" + buffer->name + "' with " + std::to_string(items.size()) +
                 " index(es), but it has " + std::to_string(buffer->ndim()) +
                 " dimension(s); give one index or slice per dimension");
  }
  Value v;
  v.buffer = buffer;
  v.region.buffer = buffer;
  v.region.point_form = !any_slice;
  for (size_t d = 0; d < items.size(); ++d) {
    const Item& item = items[d];
    Expr lo =
        item.has_lo ? to_expr(item.lo, item.at, "an index of '" + buffer->name + "'") : make_int(0);
    Expr hi = item.has_hi ? to_expr(item.hi, item.at, "an index of '" + buffer->name + "'")
                          : buffer->shape[d];
    for (const Expr* e : {&lo, &hi}) {
      if (!e->dtype().is_integral()) {
        fail(item.at, "index " + std::to_string(d) + " of '" + buffer->name + "' is a " +
                          e->dtype().name() + " expression; indices must be integers");
      }
    }
    if (!item.slice) {
      v.indices.push_back(lo);
      v.region.ranges.push_back({lo, make_int(1)});
      continue;
    }
    v.region.ranges.push_back({lo, extent_between(lo, hi)});
  }
  v.kind = any_slice ? K::kRegion : K::kElement;
  return v;
}

}  // namespace tessel::kernel_parser_detail
