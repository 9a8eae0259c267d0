// The kernel-file parser's entry points and file structure: limits, directives, imports, the
// enclosing def with its -D parameters, the kernel function's signature and T.macro definitions.
#include "core/kernel_parser.h"

#include <fstream>
#include <sstream>

#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel {

namespace kernel_parser_detail {

namespace {

/// A token at a position of the source, for errors outside the token stream (directives).
Token token_at(int line, int column) {
  Token t;
  t.line = line;
  t.column = column;
  return t;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

/// A parameter's value as -D would spell it.
std::string define_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kExpr:
      if (const auto* i = v.expr.as<IntImmNode>()) {
        if (v.expr.dtype().is_bool()) return i->value ? "True" : "False";
        return std::to_string(i->value);
      }
      return to_string(v.expr);
    case Value::Kind::kString: return v.text;
    case Value::Kind::kNone: return "None";
    case Value::Kind::kTuple: {
      std::string s = "(";
      for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + define_text(v.items[i]);
      return s + (v.items.size() == 1 ? ",)" : ")");
    }
    default: return v.describe();
  }
}

}  // namespace

Parser::Parser(const std::string& source, std::string path,
               const std::map<std::string, std::string>& defines)
    : source_(source), path_(std::move(path)), defines_(defines),
      main_cursor_(source, std::vector<Token>{}), cur_(&main_cursor_) {
  hooks_ = make_hooks();
  scope_ = std::make_shared<NameScope>();
  scope_->names["T"] = Binding{Value::module("T"), {}, false};
  scope_->names["tilelang"] = Binding{Value::module("tilelang"), {}, false};
  Value maker;
  maker.kind = Value::Kind::kConvertMaker;
  scope_->names["_tir_packed_to_unsigned_convert"] = Binding{maker, {}, false};
}

ParsedKernel Parser::run() {
  try {
    main_cursor_ = TokenCursor(source_, tokenize(source_, TokenizeMode::kFile, path_));
    main_cursor_.set_file(path_);
    scan_limits();
    scan_directives();
    // Module-level names live in a child of the built-ins, so they may shadow them.
    auto module = std::make_shared<NameScope>();
    module->parent = scope_;
    scope_ = module;
    parse_module();
    if (!have_kernel_) {
      throw KernelFileError(path_ + ": no kernel in this file: expected a @T.prim_func (or "
                            "@tilelang.jit) function whose parameters are T.Tensor((...), dtype) "
                            "tensors");
    }
    for (const auto& [name, d] : tensor_directives_) {
      if (!d.used) {
        fail(token_at(d.line, d.column), "this directive describes '" + name + "', but no kernel "
                                         "parameter '" + name + "' is annotated with a bare T.Tensor");
      }
    }
    return result_;
  } catch (const KernelFileError&) {
    throw;
  } catch (const LocatedError&) {
    throw;
  } catch (const UserError& e) {
    std::string message = e.what();
    if (message.rfind(path_ + ":", 0) == 0) throw KernelFileError(message);
    throw UserError(path_ + ": " + message);
  }
}

void Parser::scan_limits() const {
  // Bound recursion: bracket depth, runs of unary operators, powers and conditionals per line,
  // tokens per line, and indentation depth. Real kernels stay far below every limit.
  int depth = 0, unary_run = 0, powers = 0, conditionals = 0, tokens = 0, indent = 0;
  Token line_start = cur_->peek();
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) break;
    if (t.kind == TokenKind::kNewline) {
      depth = unary_run = powers = conditionals = tokens = 0;
      line_start = cur_->peek(k + 1);
      continue;
    }
    if (t.kind == TokenKind::kIndent && ++indent > kMaxBlockDepth) {
      fail(t, "blocks nest more than " + std::to_string(kMaxBlockDepth) + " deep");
    }
    if (t.kind == TokenKind::kDedent) --indent;
    if (++tokens > kMaxLineTokens) {
      fail(line_start, "this statement has more than " + std::to_string(kMaxLineTokens) +
                           " tokens; split it");
    }
    bool unary = (t.kind == TokenKind::kOp && (t.text == "-" || t.text == "+" || t.text == "~")) ||
                 (t.kind == TokenKind::kName && t.text == "not");
    unary_run = unary ? unary_run + 1 : 0;
    if (unary_run > kMaxUnaryRun) fail(t, "too many unary operators in a row");
    if (t.kind == TokenKind::kOp && t.text == "**" && ++powers > kMaxUnaryRun) {
      fail(t, "too many '**' in one statement");
    }
    if (t.kind == TokenKind::kName && (t.text == "if" || t.text == "lambda") &&
        ++conditionals > kMaxUnaryRun) {
      fail(t, "too many conditional expressions in one statement");
    }
    if (t.kind == TokenKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{") &&
        ++depth > kMaxBracketDepth) {
      fail(t, "brackets nest more than " + std::to_string(kMaxBracketDepth) + " deep");
    }
    if (t.kind == TokenKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
  }
}

void Parser::scan_directives() {
  std::istringstream in(source_);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    size_t p = text.find_first_not_of(" \t");
    if (p == std::string::npos || text[p] != '#') continue;
    p = text.find_first_not_of(" \t", p + 1);
    if (p == std::string::npos || text.compare(p, 7, "tessel:") != 0) continue;
    p = text.find_first_not_of(" \t", p + 7);
    if (p == std::string::npos) p = text.size();
    std::string body = text.substr(p);
    while (!body.empty() && (body.back() == ' ' || body.back() == '\t' || body.back() == '\r')) {
      body.pop_back();
    }
    Token at = token_at(line, static_cast<int>(p) + 1);
    size_t eq = body.find('='), colon = body.find(':');
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    if (eq != std::string::npos && trim(body.substr(0, eq)) == "reference") {
      std::string name = trim(body.substr(eq + 1));
      if (!is_identifier(name)) {
        fail(at, "`# tessel: reference=NAME` needs the name of a built-in kernel (tessel list), "
                 "got '" + name + "'");
      }
      if (result_.reference) fail(at, "a second reference directive; a kernel has one reference");
      result_.reference = name;
      result_.reference_loc = loc_of(at);
      continue;
    }
    if (colon != std::string::npos && is_identifier(trim(body.substr(0, colon)))) {
      std::string name = trim(body.substr(0, colon));
      size_t start = body.find_first_not_of(" \t", colon + 1);
      if (start == std::string::npos) fail(at, "the directive for '" + name + "' has no T.Tensor");
      if (tensor_directives_.count(name)) fail(at, "a second directive for '" + name + "'");
      tensor_directives_[name] =
          TensorDirective{body.substr(start), line, static_cast<int>(p + start) + 1, false};
      continue;
    }
    fail(at, "unknown directive; the directives are `# tessel: reference=NAME` (the built-in "
             "kernel whose reference checks this one) and `# tessel: NAME: T.Tensor(shape, dtype)` "
             "(the shape of a parameter annotated with a bare T.Tensor)");
  }
}

// ---- The module -------------------------------------------------------------------------------

void Parser::parse_module() {
  context_ = Context::kModule;
  std::vector<Stmt> out;
  std::vector<size_t> lets;
  while (!cur_->at_end()) {
    if (cur_->peek().kind == TokenKind::kDedent) {
      cur_->next();
      continue;
    }
    parse_statement(out, lets);
  }
}

void Parser::parse_import() {
  const Token kw = cur_->next();
  auto module_name = [&] {
    std::string name;
    while (cur_->accept_op(".")) name += ".";
    if (cur_->peek().kind == TokenKind::kName) {
      std::string dotted;
      read_dotted(dotted);
      name += dotted;
    }
    return name;
  };
  auto import_alias = [&]() -> Token {
    const Token alias = cur_->expect_name("a name after 'as'");
    if (is_keyword(alias.text)) fail(alias, "'" + alias.text + "' is a keyword and cannot be a name");
    return alias;
  };
  auto bind_module = [&](const std::string& module, const Token& alias) {
    if (module == "tilelang.language") bind(alias.text, Value::module("T"), alias);
    if (module == "tilelang") bind(alias.text, Value::module("tilelang"), alias);
  };
  if (kw.text == "import") {
    do {
      const Token first = cur_->peek();
      std::string module = module_name();
      if (module.empty()) fail(first, "expected a module name after 'import'");
      if (cur_->accept_name("as")) {
        bind_module(module, import_alias());
      } else if (module.rfind("tilelang", 0) == 0) {
        Token t = first;
        t.text = "tilelang";
        bind_module("tilelang", t);
      }
    } while (cur_->accept_op(","));
  } else {
    std::string module = module_name();
    if (!cur_->accept_name("import")) {
      fail(cur_->peek(), "expected 'import' in the from-import, found " +
                             TokenCursor::describe(cur_->peek()));
    }
    bool paren = cur_->accept_op("(");
    if (!cur_->accept_op("*")) {
      do {
        if (paren && cur_->at_op(")")) break;
        Token name = cur_->expect_name("a name to import");
        Token alias = name;
        if (cur_->accept_name("as")) alias = import_alias();
        bind_module(module + "." + name.text, alias);
      } while (cur_->accept_op(","));
    }
    if (paren) cur_->expect_op(")", "to close the imported names");
  }
  end_of_simple_statement();
}

std::vector<CallArgs> Parser::parse_decorators() {
  std::vector<CallArgs> decorators;
  while (cur_->at_op("@")) {
    cur_->next();
    const Token at = cur_->peek();
    if (at.kind != TokenKind::kName) fail(at, "expected a decorator name after '@'");
    std::string dotted;
    read_dotted(dotted);
    decorators.push_back(CallArgs{normalize(dotted), at, {}});
    if (cur_->at_op("(")) {  // decorator arguments (out_idx=..., configs=...) do not matter here
      int depth = 0;
      do {
        if (cur_->at_end()) fail(at, "unclosed '(' in this decorator");
        if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
        cur_->next();
      } while (depth > 0);
    }
    if (cur_->peek().kind != TokenKind::kNewline) {
      fail(cur_->peek(), "expected the end of the decorator line, found " +
                             TokenCursor::describe(cur_->peek()));
    }
    cur_->next();
  }
  return decorators;
}

bool Parser::params_have_tensors() const {
  // At the function name: is any parameter annotated `NAME: T.Tensor` / `T.Buffer`?
  int depth = 0;
  for (size_t k = 1;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) return false;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[") ++depth;
    if (t.text == ")" || t.text == "]") {
      if (--depth == 0) return false;
    }
    if (t.text == ":" && depth == 1 && cur_->peek(k + 1).kind == TokenKind::kName) {
      std::string dotted = cur_->peek(k + 1).text;
      for (size_t j = k + 2; cur_->at_op(".", j) && cur_->peek(j + 1).kind == TokenKind::kName;
           j += 2) {
        dotted += "." + cur_->peek(j + 1).text;
      }
      std::string norm = normalize(dotted);
      if (norm == "T.Tensor" || norm == "T.Buffer") return true;
    }
  }
}

bool Parser::body_has_nested_def() const {
  // At the function name: skip the signature to its ':' and look for `def` in the block.
  int depth = 0;
  size_t k = 1;
  for (;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[") ++depth;
    if (t.text == ")" || t.text == "]") --depth;
    if (t.text == ":" && depth == 0) break;
  }
  if (cur_->peek(k + 1).kind != TokenKind::kNewline || cur_->peek(k + 2).kind != TokenKind::kIndent) {
    return false;
  }
  int indent = 0;
  for (k += 2;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind == TokenKind::kIndent) ++indent;
    if (t.kind == TokenKind::kDedent && --indent == 0) return false;
    if (t.kind == TokenKind::kName && t.text == "def") return true;
  }
}

void Parser::skip_suite() {
  const Token colon = cur_->expect_op(":", "to open the block");
  if (cur_->peek().kind != TokenKind::kNewline) {
    while (cur_->peek().kind != TokenKind::kNewline && !cur_->at_end()) cur_->next();
    if (!cur_->at_end()) cur_->next();
    return;
  }
  cur_->next();
  if (cur_->peek().kind != TokenKind::kIndent) {
    fail(cur_->peek(), "expected an indented block after the ':' on line " +
                           std::to_string(colon.line));
  }
  int depth = 0;
  do {
    const Token& t = cur_->next();
    if (t.kind == TokenKind::kIndent) ++depth;
    if (t.kind == TokenKind::kDedent) --depth;
    if (t.kind == TokenKind::kEnd) break;
  } while (depth > 0);
}

void Parser::parse_def(std::vector<CallArgs> decorators, const Token& def_token) {
  if (cur_->peek().kind != TokenKind::kName) {
    fail(cur_->peek(), "expected a function name after 'def'");
  }
  check_binding(cur_->peek());
  bool macro = false, prim = false;
  const CallArgs* unknown = nullptr;
  for (const CallArgs& d : decorators) {
    if (d.callee == "T.macro") macro = true;
    else if (d.callee == "T.prim_func") prim = true;
    else if (d.callee.rfind("tilelang.", 0) != 0 && !unknown) unknown = &d;
  }
  bool kernel = !macro && (prim || params_have_tensors());
  if ((macro || kernel) && unknown) {
    fail(unknown->at, "unsupported decorator '@" + unknown->callee + "'; kernels take "
                      "@T.prim_func or @tilelang.jit, helpers @T.macro");
  }
  if (macro) return parse_macro_def(def_token);
  if (kernel) return parse_kernel_def(def_token);
  if (context_ == Context::kModule && body_has_nested_def()) {
    if (unknown) {
      fail(unknown->at, "unsupported decorator '@" + unknown->callee + "' on the enclosing def");
    }
    return parse_generator(def_token);
  }
  if (context_ == Context::kModule) {
    // Host code (a test harness, a reference in PyTorch): skipped unread.
    cur_->next();
    int depth = 0;
    while (!(depth == 0 && cur_->at_op(":")) && !cur_->at_end()) {
      if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
      if (cur_->at_op(")") || cur_->at_op("]")) --depth;
      cur_->next();
    }
    skip_suite();
    return;
  }
  fail(def_token, "a plain nested def is not supported: mark helpers @T.macro (they are "
                  "inlined where they are called)");
}

// ---- The enclosing def ------------------------------------------------------------------------

Value Parser::define_value(const KernelFileParam& param, const std::string& text,
                           const std::optional<Value>& fallback) const {
  auto bad = [&](const std::string& kind) -> Value {
    throw KernelFileError("-D " + param.name + "=" + text + ": parameter '" + param.name +
                          "' of '" + result_.generator + "' (" + param.loc.str() + ") is " + kind +
                          (param.default_text ? " (default " + *param.default_text + ")" : "") +
                          "; give e.g. -D " + param.name + "=" +
                          param.default_text.value_or("128"));
  };
  std::optional<Value> parsed;
  std::vector<Token> tokens;
  try {
    tokens = tokenize(text);
  } catch (const UserError&) {
    tokens.clear();
  }
  if (tokens.size() == 2 && tokens[0].kind == TokenKind::kName && tokens[0].text != "True" &&
      tokens[0].text != "False" && tokens[0].text != "None") {
    parsed = Value::string(text);
  } else if (tokens.size() > 1) {
    TokenCursor cursor(text, tokens);
    auto* self = const_cast<Parser*>(this);
    TokenCursor* saved_cursor = self->cur_;
    auto saved_scope = self->scope_;
    self->cur_ = &cursor;
    self->scope_ = std::make_shared<NameScope>();
    try {
      Value v = self->parse_value();
      bool constant = v.kind != Value::Kind::kExpr || v.expr.as<IntImmNode>() ||
                      v.expr.as<FloatImmNode>();
      if (cursor.at_end() && constant) parsed = v;
    } catch (const UserError&) {
    }
    self->cur_ = saved_cursor;
    self->scope_ = saved_scope;
  }
  if (!fallback) return parsed ? *parsed : Value::string(text);
  const Value& d = *fallback;
  if (d.kind == Value::Kind::kString) {
    return parsed && parsed->kind == Value::Kind::kString ? *parsed : Value::string(text);
  }
  if (d.kind == Value::Kind::kExpr && d.expr.dtype().is_bool()) {
    if (text == "true" || text == "True" || text == "1") return Value::of(IntImmNode::make(DataType::boolean(), 1));
    if (text == "false" || text == "False" || text == "0") return Value::of(IntImmNode::make(DataType::boolean(), 0));
    return bad("a boolean");
  }
  if (d.as_int()) {
    if (!parsed || !parsed->as_int()) return bad("an integer");
    return *parsed;
  }
  if (d.kind == Value::Kind::kExpr && d.expr.as<FloatImmNode>()) {
    if (parsed && parsed->as_int()) return Value::of(Expr(static_cast<double>(*parsed->as_int())));
    if (!parsed || parsed->kind != Value::Kind::kExpr || !parsed->expr.as<FloatImmNode>()) {
      return bad("a number");
    }
    return *parsed;
  }
  if (d.kind == Value::Kind::kTuple && (!parsed || parsed->kind != Value::Kind::kTuple)) {
    return bad("a tuple");
  }
  return parsed ? *parsed : Value::string(text);
}

void Parser::parse_generator(const Token& def_token) {
  const Token name_tok = cur_->next();
  if (have_generator_) {
    fail(name_tok, "a second kernel generator '" + name_tok.text + "'; a kernel file holds one "
                   "kernel (the first is '" + result_.generator + "')");
  }
  have_generator_ = true;
  result_.generator = name_tok.text;
  cur_->expect_op("(", "after the function name");
  std::vector<std::optional<Value>> defaults;
  std::vector<Token> name_tokens;
  while (!cur_->at_op(")")) {
    if (cur_->at_op("*") || cur_->at_op("**") || cur_->at_op("/")) {
      fail(cur_->peek(), "variadic and positional-only parameters are not supported; list each "
                         "kernel parameter by name");
    }
    const Token p = expect_binding("a parameter name");
    for (const Token& seen : name_tokens) {
      if (seen.text == p.text) fail(p, "parameter '" + p.text + "' appears twice");
    }
    if (cur_->accept_op(":")) {  // an annotation (int, str): skipped
      int depth = 0;
      while (!(depth == 0 && (cur_->at_op(",") || cur_->at_op("=") || cur_->at_op(")"))) &&
             !cur_->at_end()) {
        if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]")) --depth;
        cur_->next();
      }
    }
    std::optional<Value> def;
    if (cur_->accept_op("=")) def = parse_value();
    KernelFileParam param{p.text, std::nullopt, loc_of(p)};
    if (def) param.default_text = define_text(*def);
    result_.params.push_back(param);
    defaults.push_back(def);
    name_tokens.push_back(p);
    if (!cur_->accept_op(",")) break;
  }
  cur_->expect_op(")", "to close the parameter list");
  if (cur_->accept_op("->")) {
    while (!cur_->at_op(":") && !cur_->at_end()) cur_->next();
  }
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  for (size_t i = 0; i < result_.params.size(); ++i) {
    const KernelFileParam& param = result_.params[i];
    auto it = defines_.find(param.name);
    Value v;
    if (it != defines_.end()) {
      v = define_value(param, it->second, defaults[i]);
    } else if (defaults[i]) {
      v = *defaults[i];
    } else {
      fail(name_tokens[i], "parameter '" + param.name + "' of '" + name_tok.text +
                               "' has no default; give it with -D " + param.name + "=VALUE");
    }
    scope->names[param.name] = Binding{v, param.loc, false};
  }
  std::swap(scope_, scope);
  parse_suite(Context::kGenerator);
  std::swap(scope_, scope);
  if (!have_kernel_) {
    fail(def_token, "the enclosing def '" + name_tok.text + "' defines no kernel: expected a "
                    "@T.prim_func function inside it");
  }
}

// ---- The kernel function ----------------------------------------------------------------------

void Parser::parse_kernel_def(const Token& def_token) {
  const Token name_tok = cur_->next();
  if (have_kernel_) {
    fail(name_tok, "a second kernel '" + name_tok.text + "'; a kernel file holds one kernel (the "
                   "first is '" + kernel_name_ + "')");
  }
  have_kernel_ = true;
  kernel_name_ = name_tok.text == "main" && have_generator_ ? result_.generator : name_tok.text;
  node_ = KernelNode{};
  node_.name = kernel_name_;
  node_.loc = loc_of(name_tok);
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  std::swap(scope_, scope);
  cur_->expect_op("(", "after the kernel's name");
  while (!cur_->at_op(")")) {
    const Token p = expect_binding("a tensor parameter");
    if (!cur_->at_op(":")) {
      fail(p, "kernel parameter '" + p.text + "' needs a tensor annotation, e.g. " + p.text +
                  ": T.Tensor((M, K), \"float16\")");
    }
    Buffer b = parse_tensor_param(p);
    if (cur_->at_op("=")) fail(cur_->peek(), "kernel parameters take no default");
    node_.params.push_back(b);
    bind(p.text, Value::of(b), p, true);
    if (!cur_->accept_op(",")) break;
  }
  cur_->expect_op(")", "to close the kernel's parameter list");
  if (cur_->accept_op("->")) {
    while (!cur_->at_op(":") && !cur_->at_end()) cur_->next();
  }
  parse_suite(Context::kPreLaunch);
  std::swap(scope_, scope);
  if (!launched_) {
    fail(name_tok, "kernel '" + kernel_name_ + "' has no T.Kernel(...) launch; open one with "
                   "`with T.Kernel(grid..., threads=128) as (bx, by):`");
  }
  finish_kernel(def_token);
  Value v;
  v.kind = Value::Kind::kKernel;
  v.text = kernel_name_;
  bind(name_tok.text, v, name_tok);
}

Buffer Parser::parse_tensor_param(const Token& name_tok) {
  cur_->expect_op(":", "after the parameter name");
  const Token at = cur_->peek();
  std::string dotted;
  if (at.kind == TokenKind::kName) read_dotted(dotted);
  std::string norm = normalize(dotted);
  if (norm != "T.Tensor" && norm != "T.Buffer") {
    fail(at, "kernel parameter '" + name_tok.text + "' must be a tensor, T.Tensor((M, K), dtype)" +
                 (norm.rfind("T.", 0) == 0 ? "; scalar parameters are not supported (a symbolic "
                                             "size is N = T.dynamic(\"N\") in a tensor's shape)"
                                           : ""));
  }
  if (cur_->at_op("(")) return tensor_from_annotation(name_tok, at, parse_call_args(norm, at));
  auto it = tensor_directives_.find(name_tok.text);
  if (it == tensor_directives_.end()) {
    fail(at, "parameter '" + name_tok.text + "' is annotated with a bare " + norm + ", so its "
             "shape and dtype are unknown: write " + name_tok.text + ": T.Tensor((M, K), "
             "\"float16\"), or keep the signature and add a line `# tessel: " + name_tok.text +
             ": T.Tensor((M, K), \"float16\")`");
  }
  TensorDirective& d = it->second;
  d.used = true;
  std::vector<Token> tokens;
  try {
    tokens = tokenize(d.text);
  } catch (const UserError& e) {
    std::string m = e.what();
    fail(token_at(d.line, d.column), "malformed directive: " + m.substr(0, m.find('\n')));
  }
  for (Token& t : tokens) {  // the directive sits at (line, column) of the file
    if (t.line == 1) t.column += d.column - 1;
    t.line += d.line - 1;
  }
  TokenCursor cursor(source_, std::move(tokens));
  cursor.set_file(path_);
  TokenCursor* saved = cur_;
  cur_ = &cursor;
  const Token dat = cur_->peek();
  std::string ddotted;
  if (dat.kind == TokenKind::kName) read_dotted(ddotted);
  std::string dnorm = normalize(ddotted);
  if ((dnorm != "T.Tensor" && dnorm != "T.Buffer") || !cur_->at_op("(")) {
    fail(dat, "the directive for '" + name_tok.text + "' must read T.Tensor((M, K), dtype)");
  }
  Buffer b = tensor_from_annotation(name_tok, dat, parse_call_args(dnorm, dat));
  if (!cur_->at_end()) fail(cur_->peek(), "unexpected text after the directive's T.Tensor(...)");
  cur_ = saved;
  return b;
}

Buffer Parser::tensor_from_annotation(const Token& name_tok, const Token& at, const CallArgs& call) {
  auto a = bind_args(call, {"shape", "dtype"}, 2);
  std::vector<Expr> shape = arg_shape(call, *a[0], "shape");
  DataType dtype = arg_dtype(call, *a[1], "dtype");
  return located(at, [&] {
    return BufferNode::make(name_tok.text, shape, dtype, tessel::Scope::kGlobal, loc_of(name_tok));
  });
}

void Parser::finish_kernel(const Token& def_token) {
  node_.dynamic_vars = dynamic_vars_;
  if (!node_.thread_var.defined()) node_.thread_var = Var("tx");
  result_.kernel = located(launch_token_, [&] { return Kernel::make(node_); });
  (void)def_token;
}

void Parser::parse_macro_def(const Token& def_token) {
  const Token name_tok = cur_->next();
  auto macro = std::make_shared<MacroDef>();
  macro->name = name_tok.text;
  macro->loc = loc_of(name_tok);
  cur_->expect_op("(", "after the macro's name");
  while (!cur_->at_op(")")) {
    if (cur_->at_op("*") || cur_->at_op("**") || cur_->at_op("/")) {
      fail(cur_->peek(), "variadic parameters are not supported in a T.macro");
    }
    const Token p = expect_binding("a parameter name");
    if (cur_->accept_op(":")) {
      int depth = 0;
      while (!(depth == 0 && (cur_->at_op(",") || cur_->at_op("=") || cur_->at_op(")"))) &&
             !cur_->at_end()) {
        if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]")) --depth;
        cur_->next();
      }
    }
    std::optional<Value> def;
    if (cur_->accept_op("=")) {
      def = parse_value();
    } else if (!macro->defaults.empty() && macro->defaults.back()) {
      fail(p, "a parameter without a default follows one with a default");
    }
    macro->params.push_back(p.text);
    macro->defaults.push_back(def);
    if (!cur_->accept_op(",")) break;
  }
  cur_->expect_op(")", "to close the macro's parameter list");
  if (cur_->accept_op("->")) {
    while (!cur_->at_op(":") && !cur_->at_end()) cur_->next();
  }
  macro->body_position = cur_->position();
  macro->closure = scope_;
  skip_suite();
  Value v;
  v.kind = Value::Kind::kMacro;
  v.macro = macro;
  bind(name_tok.text, v, name_tok);
  (void)def_token;
}

}  // namespace kernel_parser_detail

ParsedKernel parse_kernel(const std::string& source, const std::string& path,
                          const std::map<std::string, std::string>& defines) {
  return kernel_parser_detail::Parser(source, path.empty() ? "<kernel>" : path, defines).run();
}

ParsedKernel parse_kernel_file(const std::string& path,
                               const std::map<std::string, std::string>& defines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KernelFileError("cannot read the kernel file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_kernel(text.str(), path, defines);
}

}  // namespace tessel
