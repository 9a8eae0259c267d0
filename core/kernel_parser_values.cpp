// Values of the kernel-file parser: names and scopes, errors located in the file, values of
// arguments and right-hand sides, and expressions through the shared expression parser's hooks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/analyzer.h"
#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/expr_functor.h"
#include "core/kernel_parser_detail.h"
#include "core/tile_op.h"

namespace tessel::kernel_parser_detail {

// ---- Value ------------------------------------------------------------------------------------

Value Value::of(Expr e) {
  Value v;
  v.kind = Kind::kExpr;
  v.expr = std::move(e);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind = Kind::kString;
  v.text = std::move(s);
  return v;
}

Value Value::module(std::string name) {
  Value v;
  v.kind = Kind::kModule;
  v.text = std::move(name);
  return v;
}

Value Value::of(Buffer b) {
  Value v;
  v.kind = Kind::kBuffer;
  v.buffer = std::move(b);
  return v;
}

std::optional<int64_t> Value::as_int() const {
  if (kind != Kind::kExpr || expr.dtype().is_bool()) return std::nullopt;
  return as_const_int(expr);
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kExpr:
      if (expr.as<IntImmNode>() || expr.as<FloatImmNode>()) return "the number " + to_string(expr);
      return "the expression `" + to_string(expr) + "`";
    case Kind::kString:
      return "the string \"" + text + "\"";
    case Kind::kTuple: {
      std::string s = is_list ? "the list [" : "the tuple (";
      for (size_t i = 0; i < items.size(); ++i) {
        const Value& item = items[i];
        s += (i ? ", " : "");
        s += item.kind == Kind::kExpr     ? to_string(item.expr)
             : item.kind == Kind::kString ? "\"" + item.text + "\""
                                          : "...";
      }
      return s + (is_list ? "]" : ")");
    }
    case Kind::kBuffer:
      return "buffer '" + buffer->name + "'";
    case Kind::kRegion:
      return "the region " + region_to_string(region);
    case Kind::kElement:
      return "the element " + to_string(BufferLoadNode::make(buffer, indices));
    case Kind::kModule:
      return text == "T" || text == "tilelang" ? "the module " + text : text;
    case Kind::kMacro:
      return "the T.macro '" + macro->name + "'";
    case Kind::kConvertMaker:
      return "_tir_packed_to_unsigned_convert";
    case Kind::kConverter:
      return "a converter made by _tir_packed_to_unsigned_convert";
    case Kind::kPolicy:
      return std::string("T.GemmWarpPolicy.") + policy_name(policy);
    case Kind::kKernel:
      return "the kernel '" + text + "'";
  }
  return "a value";
}

const Binding* NameScope::find(const std::string& name) const {
  for (const NameScope* s = this; s; s = s->parent.get()) {
    auto it = s->names.find(name);
    if (it != s->names.end()) return &it->second;
  }
  return nullptr;
}

// ---- Helpers ----------------------------------------------------------------------------------

Expr extent_between(const Expr& lo, const Expr& hi) {
  Expr extent = hi - lo;
  if (as_const_int(extent) || as_const_int(lo) == 0) return extent;
  Analyzer analyzer;  // `k * 32:k * 32 + 32` has extent 32, as the printer meant
  return analyzer.simplify(extent);
}

bool expr_deeper_than(const Expr& e, int limit) {
  if (limit <= 0) return true;
  for (const Expr& c : expr_children(e)) {
    if (expr_deeper_than(c, limit - 1)) return true;
  }
  return false;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;
  for (const std::string& c : candidates) {
    if (c == name || c.size() > name.size() + 2 || name.size() > c.size() + 2) continue;
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (name[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[c.size()] < best_distance) {
      best_distance = row[c.size()];
      best = c;
    }
  }
  return best;
}

// ---- Errors -----------------------------------------------------------------------------------

void Parser::fail(const Token& at, const std::string& message) const {
  throw KernelFileError(caret_message(source_, at.line, at.column, message, path_));
}

void Parser::relocate(const UserError& error, const Token& at) const {
  std::string message = error.what();
  // The cursor and the tokenizer already located it: a syntax error of the file.
  if (message.rfind(path_ + ":", 0) == 0) throw KernelFileError(message);
  std::string where = loc_of(at).str();
  std::string quoted = caret_message(source_, at.line, at.column, "", path_);
  quoted = quoted.substr(std::min(quoted.find('\n'), quoted.size()));
  if (message.find(where) != std::string::npos) throw LocatedError(message + quoted);
  throw LocatedError(where + ": " + message + quoted);
}

void Parser::unclosed(const Token& open, const std::string& what) const {
  const Token& found = cur_->peek();
  fail(open, "'" + open.text + "' " + what + " is not closed: expected ',' or '" +
                 (open.text == "("   ? ")"
                  : open.text == "[" ? "]"
                                     : "}") +
                 "' but found " + TokenCursor::describe(found) + " at line " +
                 std::to_string(found.line) + ", column " + std::to_string(found.column));
}

bool is_keyword(const std::string& word) {
  static const char* kKeywords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  for (const char* k : kKeywords) {
    if (word == k) return true;
  }
  return false;
}

void Parser::check_binding(const Token& name) const {
  if (name.kind != TokenKind::kName) {
    fail(name, "expected a name, found " + TokenCursor::describe(name));
  }
  if (is_keyword(name.text)) fail(name, "'" + name.text + "' is a keyword and cannot be a name");
  if (name.text == "T") {
    fail(name, "'T' is tilelang.language in kernel files and cannot name anything else");
  }
}

const Token& Parser::expect_binding(const std::string& what) {
  if (cur_->peek().kind != TokenKind::kName) {
    fail(cur_->peek(), "expected " + what + ", found " + TokenCursor::describe(cur_->peek()));
  }
  check_binding(cur_->peek());
  return cur_->next();
}

void Parser::unknown_name(const std::string& name, const Token& at) const {
  std::vector<std::string> known;
  for (const NameScope* s = scope_.get(); s; s = s->parent.get()) {
    for (const auto& [n, b] : s->names) known.push_back(n);
  }
  std::string near = closest_name(name, known);
  if (!near.empty()) fail(at, "unknown name '" + name + "'; did you mean '" + near + "'?");
  fail(at, "unknown name '" + name +
               "': define it above this line (a kernel parameter goes in "
               "the enclosing def's signature)");
}

void Parser::check_depth(const Expr& e, const Token& at) const {
  if (expr_deeper_than(e, kMaxExprDepth)) {
    fail(at, "this expression nests more than " + std::to_string(kMaxExprDepth) +
                 " operations deep; split it with local constants (x = ...)");
  }
}

// ---- Names ------------------------------------------------------------------------------------

const Binding* Parser::lookup(const std::string& name) const { return scope_->find(name); }

void Parser::bind(const std::string& name, Value value, const Token& at, bool kernel_local) {
  auto it = scope_->names.find(name);
  if (it != scope_->names.end() && it->second.kernel_local) {
    fail(at, "'" + name + "' is already bound at " + it->second.loc.str() +
                 "; a name in the kernel body is bound once (use T.alloc_var for a value that "
                 "changes, or pick another name)");
  }
  scope_->names[name] = Binding{std::move(value), loc_of(at), kernel_local};
}

std::string Parser::normalize(const std::string& dotted) const {
  size_t dot = dotted.find('.');
  std::string first = dotted.substr(0, dot);
  std::string rest = dot == std::string::npos ? "" : dotted.substr(dot);
  const Binding* b = lookup(first);
  if (!b || b->value.kind != Value::Kind::kModule) return dotted;
  std::string base = b->value.text;
  if (base == "tilelang" && rest.rfind(".language", 0) == 0) {
    base = "T";
    rest = rest.substr(9);
  }
  return base + rest;
}

Value Parser::attribute(const Value& base, const std::string& attr, const Token& at) const {
  if (base.kind == Value::Kind::kModule) {
    std::string full = base.text + "." + attr;
    if (base.text == "tilelang" && attr == "language") return Value::module("T");
    if (base.text == "T") {
      if (auto dtype = DataType::parse(attr)) return Value::string(dtype->name());
      if (attr == "inf") return Value::of(Expr(std::numeric_limits<double>::infinity()));
      if (attr == "nan") return Value::of(Expr(std::numeric_limits<double>::quiet_NaN()));
    }
    if (base.text == "T.GemmWarpPolicy") {
      Value v;
      v.kind = Value::Kind::kPolicy;
      if (attr == "Square")
        v.policy = GemmWarpPolicy::kSquare;
      else if (attr == "FullRow")
        v.policy = GemmWarpPolicy::kFullRow;
      else if (attr == "FullCol")
        v.policy = GemmWarpPolicy::kFullCol;
      else
        fail(at, "T.GemmWarpPolicy has no member '" + attr + "'; use Square, FullRow or FullCol");
      return v;
    }
    return Value::module(full);  // a function of T, or a submodule
  }
  if (base.kind == Value::Kind::kBuffer) {
    if (attr == "shape") {
      Value v;
      v.kind = Value::Kind::kTuple;
      for (const Expr& e : base.buffer->shape) v.items.push_back(Value::of(e));
      return v;
    }
    if (attr == "dtype") return Value::string(base.buffer->dtype.name());
    fail(at, "buffer '" + base.buffer->name + "' has no attribute '" + attr +
                 "'; buffers have .shape and .dtype");
  }
  fail(at, base.describe() + " has no attribute '" + attr + "'");
}

std::vector<Token> Parser::read_dotted(std::string& name) {
  std::vector<Token> parts{cur_->next()};
  name = parts[0].text;
  while (cur_->at_op(".") && cur_->peek(1).kind == TokenKind::kName) {
    cur_->next();
    parts.push_back(cur_->next());
    name += "." + parts.back().text;
  }
  return parts;
}

// ---- Values -----------------------------------------------------------------------------------

bool Parser::at_terminator(size_t ahead) const {
  const Token& t = cur_->peek(ahead);
  switch (t.kind) {
    case TokenKind::kNewline:
    case TokenKind::kEnd:
    case TokenKind::kDedent:
    case TokenKind::kIndent:
      return true;
    case TokenKind::kOp:
      return t.text == "," || t.text == ")" || t.text == "]" || t.text == "}" || t.text == ":" ||
             t.text == "=" || t.text == ";";
    default:
      return false;
  }
}

bool Parser::tuple_ahead() const {
  int depth = 0;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") {
      ++depth;
      if (k == 0 && cur_->at_op(")", 1)) return true;  // ()
    } else if (t.text == ")" || t.text == "]" || t.text == "}") {
      if (--depth == 0) return false;
    } else if (t.text == "," && depth == 1) {
      return true;
    }
  }
}

Value Parser::parse_sequence(const char* close, bool is_list) {
  const Token open = cur_->next();
  Value v;
  v.kind = Value::Kind::kTuple;
  v.is_list = is_list;
  while (!cur_->at_op(close)) {
    v.items.push_back(parse_value());
    if (cur_->at_name("for")) {
      fail(cur_->peek(), "comprehensions are not supported; write the items out");
    }
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->at_op(close)) unclosed(open, is_list ? "of this list" : "of this tuple");
  cur_->next();
  if (!at_terminator()) {
    fail(cur_->peek(), std::string("a ") + (is_list ? "list" : "tuple") +
                           " is not a number: arithmetic on it is not supported");
  }
  return v;
}

Value Parser::parse_value() {
  const Token t = cur_->peek();
  if (t.kind == TokenKind::kString) {
    std::string s = cur_->next().text;
    while (cur_->peek().kind == TokenKind::kString) s += cur_->next().text;
    if (!at_terminator()) {
      fail(cur_->peek(),
           "a string is not a number; strings name dtypes and scopes "
           "(\"float16\", \"shared.dyn\")");
    }
    return Value::string(std::move(s));
  }
  if (t.kind == TokenKind::kOp) {
    if (t.text == "(" && tuple_ahead()) return parse_sequence(")", false);
    if (t.text == "[") return parse_sequence("]", true);
    if (t.text == "{") fail(t, "dicts and sets are not supported in kernel files");
  }
  if (t.kind == TokenKind::kName) {
    if (t.text == "None" && at_terminator(1)) {
      cur_->next();
      return Value::none();
    }
    if (t.text == "lambda") {
      fail(t,
           "lambda is only accepted in layout specs (`tessel layout`); a kernel file has no "
           "place for one: Tessel's IR carries no layout annotations, layouts are inferred");
    }
    if (auto v = parse_name_value()) return *v;
  }
  return Value::of(parse_expr());
}

std::optional<Value> Parser::parse_name_value() {
  size_t start = cur_->position();
  std::string dotted;
  std::vector<Token> parts = read_dotted(dotted);
  const Binding* base = lookup(parts[0].text);
  if (!base) {
    cur_->rewind(start);
    return std::nullopt;  // the expression parser reports the unknown name
  }
  Value v = base->value;
  for (size_t k = 1; k < parts.size(); ++k) v = attribute(v, parts[k].text, parts[k]);
  std::string norm = normalize(dotted);

  if (cur_->at_op("(")) {
    if (v.kind == Value::Kind::kConvertMaker) {
      Value conv = make_converter(parse_call_args(norm, parts[0]));
      if (!cur_->at_op("(")) {
        if (!at_terminator()) fail(cur_->peek(), "a converter is not a number; call it");
        return conv;
      }
    }
    if (norm == "T.get_thread_bindings" || norm == "T.get_block_bindings") {
      bind_args(parse_call_args(norm, parts[0]), {}, 0);
      Value all;
      all.kind = Value::Kind::kTuple;
      for (int d = 0; d < 3; ++d) {
        all.items.push_back(Value::of(norm == "T.get_thread_bindings"
                                          ? thread_binding_of(parts[0], d)
                                          : block_binding_of(parts[0], d)));
      }
      return all;
    }
    if (norm.rfind("T.alloc_", 0) == 0) {
      fail(parts[0], norm +
                         "(...) allocates a buffer: assign it to a name on a line of its own "
                         "(X = " +
                         norm + "(...))");
    }
    cur_->rewind(start);
    return std::nullopt;
  }
  if (cur_->at_op("[")) {
    if (v.kind == Value::Kind::kBuffer && !var_buffers_.count(v.buffer.get())) {
      Value sub = parse_subscript_value(v.buffer, parts[0]);
      if (sub.kind != Value::Kind::kNone) return sub;
    }
    cur_->rewind(start);
    return std::nullopt;
  }
  bool expression = v.kind == Value::Kind::kExpr ||
                    (v.kind == Value::Kind::kBuffer && var_buffers_.count(v.buffer.get()));
  bool operator_follows = cur_->peek().kind == TokenKind::kOp && !at_terminator();
  if (expression || operator_follows) {
    cur_->rewind(start);
    return std::nullopt;  // an expression, or an error the expression parser words
  }
  if (v.kind == Value::Kind::kModule && v.text != "T" && v.text != "tilelang") {
    fail(parts[0], norm + " is a function of TileLang: call it");
  }
  return v;
}

Value Parser::parse_subscript_value(const Buffer& buffer, const Token& at) {
  struct Item {
    Expr lo, hi;
    bool slice = false;
    Token at;
  };
  size_t after_name = cur_->position();
  const Token open = cur_->next();
  std::vector<Item> items;
  bool any_slice = false;
  while (!cur_->at_op("]")) {
    Item item;
    item.at = cur_->peek();
    if (!cur_->at_op(":")) item.lo = parse_expr();
    if (cur_->accept_op(":")) {
      item.slice = any_slice = true;
      if (!cur_->at_op(",") && !cur_->at_op("]")) item.hi = parse_expr();
      if (cur_->at_op(":")) fail(cur_->peek(), "a slice step is not supported; regions are dense");
    }
    items.push_back(item);
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->at_op("]")) unclosed(open, "after '" + buffer->name + "'");
  cur_->next();
  if (!at_terminator()) {
    if (any_slice) {
      fail(at, "the region " + buffer->name +
                   "[...] is not a number: tile operators take "
                   "regions, expressions read single elements (" +
                   buffer->name + "[i, j])");
    }
    cur_->rewind(after_name);
    return Value::none();  // an element inside a larger expression
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
    for (const Expr* e : {&item.lo, &item.hi}) {
      if (e->defined() && !e->dtype().is_integral()) {
        fail(item.at, "index " + std::to_string(d) + " of '" + buffer->name + "' is a " +
                          e->dtype().name() + " expression; indices must be integers");
      }
    }
    if (!item.slice) {
      v.indices.push_back(item.lo);
      v.region.ranges.push_back({item.lo, make_int(1)});
      continue;
    }
    Expr lo = item.lo.defined() ? item.lo : make_int(0);
    Expr hi = item.hi.defined() ? item.hi : buffer->shape[d];
    v.region.ranges.push_back({lo, extent_between(lo, hi)});
  }
  v.kind = any_slice ? Value::Kind::kRegion : Value::Kind::kElement;
  return v;
}

Expr Parser::parse_expr() {
  const Token at = cur_->peek();
  Expr e = located(at, [&] { return parse_expression(*cur_, hooks_); });
  check_depth(e, at);
  return e;
}

Expr Parser::to_expr(const Value& v, const Token& at, const std::string& what) const {
  if (v.kind == Value::Kind::kExpr) return v.expr;
  if (v.kind == Value::Kind::kElement) {
    return located(at, [&] { return BufferLoadNode::make(v.buffer, v.indices); });
  }
  if (v.kind == Value::Kind::kBuffer && var_buffers_.count(v.buffer.get())) {
    return BufferLoadNode::make(v.buffer, {make_int(0)});
  }
  fail(at, what + " must be a number or an expression, got " + v.describe());
}

// ---- The expression parser's hooks ------------------------------------------------------------

ExprParseHooks Parser::make_hooks() {
  ExprParseHooks h;
  h.resolve_name = [this](const std::string& name, const Token& at) -> std::optional<Expr> {
    size_t dot = name.find('.');
    std::string first = name.substr(0, dot);
    const Binding* b = lookup(first);
    if (!b) unknown_name(first, at);
    Value v = b->value;
    for (size_t p = dot; p != std::string::npos;) {
      size_t next = name.find('.', p + 1);
      v = attribute(v, name.substr(p + 1, next == std::string::npos ? next : next - p - 1), at);
      p = next;
    }
    if (v.kind == Value::Kind::kBuffer && !var_buffers_.count(v.buffer.get())) {
      fail(at, "'" + name + "' is buffer '" + v.buffer->name + "', not a number; index it (" +
                   name + "[i, j]) to read an element");
    }
    return to_expr(v, at, "'" + name + "'");
  };
  h.resolve_subscript = [this](const std::string& name, const std::vector<Expr>& indices,
                               const Token& at) -> std::optional<Expr> {
    size_t dot = name.find('.');
    const Binding* b = lookup(name.substr(0, dot));
    if (!b) unknown_name(name.substr(0, dot), at);
    Value v = b->value;
    for (size_t p = dot; p != std::string::npos;) {
      size_t next = name.find('.', p + 1);
      v = attribute(v, name.substr(p + 1, next == std::string::npos ? next : next - p - 1), at);
      p = next;
    }
    if (v.kind == Value::Kind::kBuffer) {
      return located(at, [&] { return BufferLoadNode::make(v.buffer, indices); });
    }
    if (v.kind == Value::Kind::kTuple) {
      auto k = indices.size() == 1 ? as_const_int(indices[0]) : std::nullopt;
      int64_t n = static_cast<int64_t>(v.items.size());
      if (!k || *k < -n || *k >= n) {
        fail(at, "'" + name + "' has " + plural(v.items.size(), "item") +
                     "; index it with one constant between " + std::to_string(-n) + " and " +
                     std::to_string(n - 1));
      }
      return to_expr(v.items[*k < 0 ? *k + n : *k], at, "item of '" + name + "'");
    }
    fail(at, "'" + name + "' is " + v.describe() + " and cannot be indexed");
  };
  h.parse_call = [this](const std::string& callee, TokenCursor&,
                        const Token& at) -> std::optional<Expr> {
    return expression_call(callee, at);
  };
  return h;
}

}  // namespace tessel::kernel_parser_detail
