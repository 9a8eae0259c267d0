// Values of the kernel-file parser: names and scopes, errors located in the file, values of
// arguments and right-hand sides, and expressions through the shared expression parser's hooks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/analyzer.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/intrinsics.h"
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
    case Kind::kHost:
      return text;
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
  return static_cast<int64_t>(e.height()) > limit;  // O(1): every node records its height
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
  if (e.tree_size() > kMaxExprSize) {
    fail(at, "this expression grows past " + std::to_string(kMaxExprSize) +
                 " operations when each use of a shared value is counted (a value built from "
                 "itself, like e2 = e1 + e1, doubles each time); compute it in fewer steps");
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
  return module_name(b->value.text + rest);
}

std::string module_name(const std::string& dotted) {
  if (dotted == "tilelang.language") return "T";
  if (dotted.rfind("tilelang.language.", 0) == 0) return "T" + dotted.substr(17);
  return dotted;
}

Value Parser::attribute(const Value& base, const std::string& attr, const Token& at) const {
  if (base.kind == Value::Kind::kModule) {
    std::string full = module_name(base.text + "." + attr);
    if (base.text == "T" || base.text == "torch") {  // T.float16, torch.bfloat16: dtype names
      if (auto dtype = DataType::parse(attr)) return Value::string(dtype->name());
    }
    if (base.text == "T" || base.text == "math") {
      if (attr == "inf") return Value::of(Expr(std::numeric_limits<double>::infinity()));
      if (attr == "nan") return Value::of(Expr(std::numeric_limits<double>::quiet_NaN()));
    }
    if (base.text == "math" && (attr == "pi" || attr == "e")) {
      return py_float_value(attr == "pi" ? M_PI : M_E);
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
    if (attr == "data") return base;  // its storage: what T.Tensor(shape, dtype, A.data) views
    fail(at, "buffer '" + base.buffer->name + "' has no attribute '" + attr +
                 "'; buffers have .shape, .dtype and .data");
  }
  if (base.kind == Value::Kind::kString) {  // a dtype name: T.float16.bits, DataType(d).bits
    auto dtype = DataType::parse(base.text);
    if (dtype && attr == "bits") return Value::of(make_int(dtype->bits));
    if (dtype && attr == "lanes") return Value::of(make_int(dtype->lanes));
    if (dtype && attr == "itemsize") return Value::of(make_int(dtype->storage_bytes(1)));
    if (dtype) {
      fail(at, "the dtype \"" + base.text + "\" has no attribute '" + attr +
                   "'; dtypes have .bits, .lanes and .itemsize");
    }
  }
  if (base.kind == Value::Kind::kHost && base.attributes && base.attributes->count(attr)) {
    return base.attributes->at(attr);
  }
  if (base.kind == Value::Kind::kHost) fail(at, "cannot read ." + attr + " of " + base.text);
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

Expr Parser::to_expr(const Value& v, const Token& at, const std::string& what) const {
  if (v.kind == Value::Kind::kExpr) return v.expr;
  if (v.kind == Value::Kind::kElement) {
    return located(at, [&] { return BufferLoadNode::make(v.buffer, v.indices); });
  }
  if (v.kind == Value::Kind::kBuffer && var_buffers_.count(v.buffer.get())) {
    return BufferLoadNode::make(v.buffer, {make_int(0)});
  }
  if (v.kind == Value::Kind::kBuffer) {
    fail(at, what + " must be a number or an expression, got buffer '" + v.buffer->name +
                 "'; index it (" + v.buffer->name + "[i, j]) to read an element");
  }
  fail(at, what + " must be a number or an expression, got " + v.describe());
}

}  // namespace tessel::kernel_parser_detail
