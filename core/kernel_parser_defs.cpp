// The kernel-file parser's definitions: the enclosing def with its -D parameters, the kernel
// function's signature (tensor parameters, bare T.Tensor directives) and T.macro helpers.
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

/// A parameter's value as -D would spell it.
std::string define_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kExpr:
      if (const auto* i = v.expr.as<IntImmNode>()) {
        if (v.expr.dtype().is_bool()) return i->value ? "True" : "False";
        return std::to_string(i->value);
      }
      return to_string(v.expr);
    case Value::Kind::kString:
      return v.text;
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kTuple: {
      std::string s = "(";
      for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + define_text(v.items[i]);
      return s + (v.items.size() == 1 ? ",)" : ")");
    }
    default:
      return v.describe();
  }
}

}  // namespace

// ---- The enclosing def ------------------------------------------------------------------------

Value Parser::define_value(const KernelFileParam& param, const std::string& text,
                           const std::optional<Value>& fallback) {
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
    // The text is read as a value with no names in scope: numbers, strings, tuples, booleans.
    TokenCursor cursor(text, tokens);
    TokenCursor* saved_cursor = cur_;
    auto saved_scope = scope_;
    cur_ = &cursor;
    scope_ = std::make_shared<NameScope>();
    try {
      Value v = parse_value();
      bool constant =
          v.kind != Value::Kind::kExpr || v.expr.as<IntImmNode>() || v.expr.as<FloatImmNode>();
      if (cursor.at_end() && constant) parsed = v;
    } catch (const UserError&) {
      // not a value: taken as text below
    }
    cur_ = saved_cursor;
    scope_ = saved_scope;
  }
  if (!fallback) return parsed ? *parsed : Value::string(text);
  const Value& d = *fallback;
  if (d.kind == Value::Kind::kString) {
    return parsed && parsed->kind == Value::Kind::kString ? *parsed : Value::string(text);
  }
  if (d.kind == Value::Kind::kExpr && d.expr.dtype().is_bool()) {
    if (text == "true" || text == "True" || text == "1")
      return Value::of(IntImmNode::make(DataType::boolean(), 1));
    if (text == "false" || text == "False" || text == "0")
      return Value::of(IntImmNode::make(DataType::boolean(), 0));
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
    fail(name_tok, "a second kernel generator '" + name_tok.text +
                       "'; a kernel file holds one "
                       "kernel (the first is '" +
                       result_.generator + "')");
  }
  have_generator_ = true;
  result_.generator = name_tok.text;
  cur_->expect_op("(", "after the function name");
  std::vector<std::optional<Value>> defaults;
  std::vector<Token> name_tokens;
  while (!cur_->at_op(")")) {
    if (cur_->at_op("*") || cur_->at_op("**") || cur_->at_op("/")) {
      fail(cur_->peek(),
           "variadic and positional-only parameters are not supported; list each "
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
    fail(def_token, "the enclosing def '" + name_tok.text +
                        "' defines no kernel: expected a "
                        "@T.prim_func function inside it");
  }
}

// ---- The kernel function ----------------------------------------------------------------------

void Parser::parse_kernel_def(const Token& def_token) {
  const Token name_tok = cur_->next();
  if (have_kernel_) {
    fail(name_tok, "a second kernel '" + name_tok.text +
                       "'; a kernel file holds one kernel (the "
                       "first is '" +
                       kernel_name_ + "')");
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
    fail(name_tok, "kernel '" + kernel_name_ +
                       "' has no T.Kernel(...) launch; open one with "
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
    fail(at, "parameter '" + name_tok.text + "' is annotated with a bare " + norm +
                 ", so its "
                 "shape and dtype are unknown: write " +
                 name_tok.text +
                 ": T.Tensor((M, K), "
                 "\"float16\"), or keep the signature and add a line `# tessel: " +
                 name_tok.text + ": T.Tensor((M, K), \"float16\")`");
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

Buffer Parser::tensor_from_annotation(const Token& name_tok, const Token& at,
                                      const CallArgs& call) {
  auto a = bind_args(call, {"shape", "dtype"}, 2);
  std::vector<Expr> shape = arg_shape(call, *a[0], "shape");
  DataType dtype = arg_dtype(call, *a[1], "dtype");
  return located(at, [&] {
    return BufferNode::make(name_tok.text, shape, dtype, tessel::Scope::kGlobal, loc_of(name_tok));
  });
}

bool Parser::declare_tensor(const Token& name, const Token& at) {
  (void)name;
  (void)at;
  return false;
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

}  // namespace tessel::kernel_parser_detail
