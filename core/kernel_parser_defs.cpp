// The kernel-file parser's definitions: the enclosing def with its -D parameters, the kernel
// function's signature (tensor parameters, bare T.Tensor directives) and T.macro helpers.
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

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

// ---- Signatures ------------------------------------------------------------------------------

std::vector<SignatureParam> Parser::read_signature(const std::string& function) {
  cur_->expect_op("(", "after the function name");
  std::vector<SignatureParam> params;
  while (!cur_->at_op(")")) {
    if (cur_->at_op("*") || cur_->at_op("**") || cur_->at_op("/")) {
      fail(cur_->peek(),
           "variadic and positional-only parameters are not supported; list each parameter of '" +
               function + "' by name");
    }
    SignatureParam p;
    p.name = expect_binding("a parameter name");
    for (const SignatureParam& seen : params) {
      if (seen.name.text == p.name.text)
        fail(p.name, "parameter '" + p.name.text + "' appears twice");
    }
    if (cur_->at_op(":")) {
      p.annotation = cur_->position();
      cur_->next();
      if (cur_->peek().kind == TokenKind::kName) {
        size_t at = cur_->position();
        read_dotted(p.annotation_head);
        p.annotation_head = normalize(p.annotation_head);
        cur_->rewind(at);
      }
      NoEval skip(*this);  // read where it is needed (T.Tensor shapes), not here
      parse_value();
    }
    if (cur_->accept_op("=")) {
      const Token at = cur_->peek();
      size_t start = cur_->position();
      try {
        p.default_value = parse_value();
      } catch (const AssertionFailure&) {
        throw;
      } catch (const UserError&) {
        // A default Tessel cannot evaluate (a host object): an error only where it is used.
        cur_->rewind(start);
        {
          NoEval skip(*this);
          parse_value();
        }
        Value host;
        host.kind = Value::Kind::kHost;
        host.text = "the default of '" + p.name.text + "' (line " + std::to_string(at.line) +
                    "), host code that Tessel does not run";
        p.default_value = host;
      }
    }
    p.position = params.size();
    params.push_back(std::move(p));
    if (!cur_->accept_op(",")) break;
  }
  cur_->expect_op(")", "to close the parameter list of '" + function + "'");
  if (cur_->accept_op("->")) {
    NoEval skip(*this);
    parse_value();
  }
  return params;
}

void Parser::bind_compile_time_params(const std::vector<const SignatureParam*>& params,
                                      const std::string& function, NameScope& scope) {
  for (const SignatureParam* sp : params) {
    KernelFileParam param{sp->name.text, std::nullopt, loc_of(sp->name)};
    // Without -D a parameter is what the file's own call of the def passes, else its default.
    std::optional<Value> fallback = sp->default_value;
    std::string why;
    if (auto passed = host_argument(function, sp->position, param.name, &why)) {
      fallback = passed->value;
      param.host_call = loc_of(passed->call);
    }
    if (fallback) param.default_text = define_text(*fallback);
    result_.params.push_back(param);
    auto it = defines_.find(param.name);
    Value v;
    if (it != defines_.end()) {
      v = define_value(param, it->second, fallback);
    } else if (fallback) {
      v = *fallback;
    } else {
      fail(sp->name, "parameter '" + param.name + "' of '" + function + "' has no default" +
                         (why.empty() ? "" : " and " + why) + "; give it with -D " + param.name +
                         "=VALUE");
    }
    scope.names[param.name] = Binding{v, param.loc, false};
  }
}

// ---- The enclosing def ------------------------------------------------------------------------

void Parser::parse_generator(const Token& def_token, const std::vector<Decorator>& decorators) {
  const Token name_tok = cur_->next();
  have_generator_ = true;
  result_.generator = name_tok.text;
  std::vector<SignatureParam> params = read_signature(name_tok.text);
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  std::vector<const SignatureParam*> all;
  for (const SignatureParam& p : params) all.push_back(&p);
  bind_compile_time_params(all, name_tok.text, *scope);
  std::swap(scope_, scope);
  generator_result_ = Value::none();
  parse_suite(Context::kGenerator);
  std::swap(scope_, scope);
  if (generator_result_.kind != Value::Kind::kKernel || !generator_result_.kernel.defined()) {
    fail(def_token, "the enclosing def '" + name_tok.text +
                        "' returns no kernel: expected a @T.prim_func (or @tilelang.jit) "
                        "function inside it and `return` of that function");
  }
  result_.kernel = generator_result_.kernel;
  result_.outputs = generator_result_.outputs;
  if (result_.outputs.empty()) result_.outputs = outputs_of(decorators, result_.kernel);
}

// ---- The kernel function ----------------------------------------------------------------------

void Parser::parse_kernel_def(const Token& def_token, const std::vector<Decorator>& decorators,
                              const DefScan& scan) {
  const Token name_tok = cur_->next();
  bool prim = false;
  for (const Decorator& d : decorators) prim = prim || d.name == "T.prim_func";
  kernel_name_ = name_tok.text == "main" && have_generator_ ? result_.generator : name_tok.text;
  if (!have_generator_) result_.generator = name_tok.text;
  node_ = KernelNode{};
  node_.name = kernel_name_;
  node_.loc = loc_of(name_tok);
  launched_ = false;
  scratch_.clear();
  launch_nodes_.clear();
  empty_tensors_.clear();
  returned_.clear();
  pending_tensors_.clear();
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  std::vector<SignatureParam> params = read_signature(kernel_name_);
  size_t body = cur_->position();
  std::set<std::string> declared = scan.declared;
  std::vector<Buffer> tensors(params.size());
  std::vector<const SignatureParam*> compile_time;
  std::swap(scope_, scope);
  for (size_t i = 0; i < params.size(); ++i) {
    const SignatureParam& p = params[i];
    const Token& pt = p.name;
    bool tensor = p.annotation_head == "T.Tensor" || p.annotation_head == "T.Buffer";
    std::optional<DataType> scalar;
    if (p.annotation_head.rfind("T.", 0) == 0)
      scalar = DataType::parse(p.annotation_head.substr(2));
    if (scalar && !tensor) {
      if (p.default_value) fail(pt, "kernel parameters take no default");
      bind(pt.text, scalar_param(pt, *scalar), pt, true);
    } else if (tensor || (p.annotation && p.annotation_head.rfind("T.", 0) == 0)) {
      cur_->rewind(p.annotation);
      tensors[i] = parse_tensor_param(pt);  // refuses other T.* annotations with the reason
      if (p.default_value) fail(pt, "kernel parameters take no default");
      bind(pt.text, Value::of(tensors[i]), pt, true);
    } else if (declared.count(pt.text)) {
      pending_tensors_[pt.text] = i;  // `A: T.Tensor(...)` in the body declares it
      Value pending;
      pending.kind = Value::Kind::kHost;
      pending.text =
          "tensor parameter '" + pt.text + "' before its `" + pt.text + ": T.Tensor(...)` line";
      bind(pt.text, pending, pt);
    } else if (prim) {
      fail(pt, "kernel parameter '" + pt.text + "' needs a tensor annotation, e.g. " + pt.text +
                   ": T.Tensor((M, K), \"float16\")");
    } else {
      compile_time.push_back(&p);
    }
  }
  bind_compile_time_params(compile_time, kernel_name_, *scope_);
  cur_->rewind(body);
  declared_ = &tensors;
  parse_suite(Context::kPreLaunch);
  declared_ = nullptr;
  std::swap(scope_, scope);
  if (!launched_) {
    fail(name_tok, "kernel '" + kernel_name_ +
                       "' has no T.Kernel(...) launch; open one with "
                       "`with T.Kernel(grid..., threads=128) as (bx, by):`");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (tensors[i].defined()) {
      node_.params.push_back(tensors[i]);
    } else if (pending_tensors_.count(params[i].name.text)) {
      fail(params[i].name, "tensor parameter '" + params[i].name.text + "' of '" + kernel_name_ +
                               "' is declared (`" + params[i].name.text +
                               ": T.Tensor(...)`) only in a branch that was not taken");
    }
  }
  for (const Buffer& b : empty_tensors_) node_.params.push_back(b);
  finish_kernel(def_token);
  Value v;
  v.kind = Value::Kind::kKernel;
  v.text = kernel_name_;
  v.kernel = result_.kernel;
  v.outputs = returned_;
  if (v.outputs.empty()) v.outputs = outputs_of(decorators, v.kernel);
  bind(name_tok.text, v, name_tok);
}

bool Parser::declare_tensor(const Token& name, const Token& at) {
  std::string dotted;
  size_t start = cur_->position();
  if (cur_->peek().kind == TokenKind::kName) read_dotted(dotted);
  std::string norm = normalize(dotted);
  cur_->rewind(start);
  if (norm != "T.Tensor" && norm != "T.Buffer") return false;
  auto it = pending_tensors_.find(name.text);
  if (it == pending_tensors_.end() || !declared_ || context_ != Context::kPreLaunch) {
    fail(name, "`" + name.text + ": " + norm +
                   "(...)` declares a tensor parameter of an eager @tilelang.jit function, before "
                   "its T.Kernel launch, but '" +
                   name.text + "' is not a parameter of " +
                   (kernel_name_.empty() ? std::string("a kernel") : "'" + kernel_name_ + "'") +
                   " here; an output tensor is made with " + name.text +
                   " = T.empty(shape, dtype)");
  }
  read_dotted(dotted);
  CallArgs call;
  if (cur_->at_op("[")) {  // T.Tensor[(M, K), dtype]
    const Token open = cur_->next();
    call.callee = norm;
    call.at = at;
    while (!cur_->at_op("]")) {
      Arg arg;
      arg.at = arg.value_at = cur_->peek();
      arg.value = parse_value();
      call.args.push_back(std::move(arg));
      if (!cur_->accept_op(",")) break;
    }
    if (!cur_->accept_op("]")) unclosed(open, "of " + norm + "[...]");
  } else if (cur_->at_op("(")) {
    call = parse_call_args(norm, at);
  } else {
    fail(at, "`" + name.text + ": " + norm + "` needs a shape and a dtype: " + name.text + ": " +
                 norm + "((M, K), \"float16\")");
  }
  Buffer b = tensor_from_annotation(name, at, call);
  (*declared_)[it->second] = b;
  pending_tensors_.erase(it);
  bind(name.text, Value::of(b), name, true);
  return true;
}

Buffer Parser::make_empty_tensor(const Token& target, const CallArgs& call) {
  if (context_ != Context::kPreLaunch || !declared_) {
    fail(call.at,
         "T.empty makes an output tensor of an eager @tilelang.jit function, before its "
         "T.Kernel launch (C = T.empty((M, N), dtype), then `return C`)");
  }
  Buffer b = tensor_from_annotation(target, call.at, call);
  empty_tensors_.push_back(b);
  return b;
}

void Parser::return_outputs(const Value& value, const Token& at) {
  std::vector<Value> items = value.kind == Value::Kind::kTuple ? value.items : std::vector{value};
  for (const Value& v : items) {
    bool empty = v.kind == Value::Kind::kBuffer &&
                 std::any_of(empty_tensors_.begin(), empty_tensors_.end(),
                             [&](const Buffer& b) { return b.get() == v.buffer.get(); });
    if (!empty) {
      fail(at, "a kernel function returns the tensors it made with T.empty, got " + v.describe());
    }
    returned_.push_back(v.buffer->name);
  }
  for (const Buffer& b : empty_tensors_) {
    if (std::find(returned_.begin(), returned_.end(), b->name) == returned_.end()) {
      fail(at, "tensor '" + b->name +
                   "' made with T.empty is not returned; return every output "
                   "(return " +
                   b->name + ", ...)");
    }
  }
}

std::vector<std::string> Parser::outputs_of(const std::vector<Decorator>& decorators,
                                            const Kernel& kernel) {
  // `@tilelang.jit(out_idx=[-1])`: the other arguments are host values, never read.
  std::vector<std::string> outputs;
  size_t resume = cur_->position();
  for (const Decorator& d : decorators) {
    if (!d.args) continue;
    cur_->rewind(*d.args);
    int depth = 0;
    std::optional<size_t> found;
    for (size_t k = 0; !found; ++k) {
      const Token& t = cur_->peek(k);
      if (t.kind == TokenKind::kEnd) break;
      if (t.kind == TokenKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
      if (t.kind == TokenKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}") &&
          --depth == 0) {
        break;
      }
      if (depth == 1 && t.kind == TokenKind::kName && t.text == "out_idx" &&
          cur_->at_op("=", k + 1) && (cur_->at_op("(", k - 1) || cur_->at_op(",", k - 1))) {
        found = k + 2;
      }
    }
    if (!found) continue;
    cur_->rewind(*d.args + *found);
    const Token value_at = cur_->peek();
    Value value = parse_value();
    std::vector<Value> items = value.kind == Value::Kind::kTuple  ? value.items
                               : value.kind == Value::Kind::kNone ? std::vector<Value>{}
                                                                  : std::vector<Value>{value};
    int64_t n = static_cast<int64_t>(kernel->params.size());
    for (const Value& item : items) {
      auto k = py_int(item);
      if (!k || *k < -n || *k >= n) {
        fail(value_at, "out_idx must index the " + plural(kernel->params.size(), "tensor") +
                           " of kernel '" + kernel->name + "' (-" + std::to_string(n) + " to " +
                           std::to_string(n - 1) + "), got " + item.describe());
      }
      outputs.push_back(kernel->params[static_cast<size_t>(*k < 0 ? *k + n : *k)]->name);
    }
  }
  cur_->rewind(resume);
  return outputs;
}

Buffer Parser::parse_tensor_param(const Token& name_tok) {
  cur_->expect_op(":", "after the parameter name");
  const Token at = cur_->peek();
  std::string dotted;
  if (at.kind == TokenKind::kName) read_dotted(dotted);
  std::string norm = normalize(dotted);
  if (norm != "T.Tensor" && norm != "T.Buffer") {
    fail(at, "kernel parameter '" + name_tok.text +
                 "' must be a tensor, T.Tensor((M, K), dtype), or a scalar of a dtype such as "
                 "T.int32 or T.float32" +
                 (norm.empty() ? std::string() : "; '" + dotted + "' is neither"));
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

Expr Parser::dynamic_var(const std::string& name, DataType dtype) {
  for (const Var& v : dynamic_vars_) {
    if (v.name() == name) return Expr(v);
  }
  dynamic_vars_.emplace_back(name, dtype);
  return Expr(dynamic_vars_.back());
}

Value Parser::scalar_param(const Token& name, DataType dtype) {
  KernelFileParam param{name.text, std::nullopt, loc_of(name), KernelFileParam::Kind::kScalar};
  bool listed = std::any_of(result_.params.begin(), result_.params.end(),
                            [&](const KernelFileParam& p) { return p.name == name.text; });
  if (!listed) result_.params.push_back(param);
  auto it = defines_.find(name.text);
  if (it == defines_.end()) {
    if (dtype.is_int()) return Value::of(dynamic_var(name.text, dtype));  // symbolic until set
    fail(name, "scalar parameter '" + name.text + ": T." + dtype.name() + "' of kernel '" +
                   kernel_name_ + "' has no value: Tessel specialises " + dtype.name() +
                   " scalar parameters, so give one with -D " + name.text + "=" +
                   (dtype.is_bool() ? "True" : "0.5") +
                   " (an integer scalar parameter may stay symbolic)");
  }
  Value v = define_value(param, it->second, std::nullopt);
  Value n = numeric(v, name);
  if (n.kind != Value::Kind::kExpr || !(n.expr.as<IntImmNode>() || n.expr.as<FloatImmNode>())) {
    fail(name, "-D " + name.text + "=" + it->second + ": scalar parameter '" + name.text +
                   "' is a " + dtype.name() + " number");
  }
  double value = n.expr.as<IntImmNode>() ? static_cast<double>(n.expr.as<IntImmNode>()->value)
                                         : n.expr.as<FloatImmNode>()->value;
  if (dtype.is_integral() && n.expr.as<FloatImmNode>()) {
    fail(name, "-D " + name.text + "=" + it->second + ": scalar parameter '" + name.text +
                   "' is a " + dtype.name() + " integer");
  }
  return Value::of(located(name, [&] { return make_const(dtype, value); }));
}

Value Parser::make_consts(const CallArgs& call) {
  auto a = bind_args(call, {"name", "dtype"}, 1);
  std::vector<std::string> names = split_const_names(arg_string(call, *a[0], "name"));
  DataType t = a[1] ? arg_dtype(call, *a[1], "dtype") : DataType::i32();
  if (!t.is_int()) fail(a[1]->value_at, "T.const: a size is an integer, got " + t.name());
  if (names.empty()) fail(a[0]->value_at, "T.const needs names: T.const(\"M, N\")");
  Value tuple;
  tuple.kind = Value::Kind::kTuple;
  for (const std::string& name : names) {
    bool identifier = !is_keyword(name) && name != "T" &&
                      (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char ch : name) {
      identifier = identifier && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    }
    if (!identifier) {
      fail(a[0]->value_at, "T.const: \"" + name + "\" is not a name; write T.const(\"M, N\")");
    }
    KernelFileParam param{name, std::nullopt, loc_of(a[0]->value_at),
                          KernelFileParam::Kind::kConst};
    bool listed = std::any_of(result_.params.begin(), result_.params.end(),
                              [&](const KernelFileParam& p) { return p.name == name; });
    if (!listed) result_.params.push_back(param);
    auto it = defines_.find(name);
    if (it == defines_.end()) {
      tuple.items.push_back(Value::of(dynamic_var(name, t)));  // symbolic until set
      continue;
    }
    std::optional<Value> size = define_value(param, it->second, Value::of(make_int(0)));
    tuple.items.push_back(*size);
  }
  return tuple.items.size() == 1 ? tuple.items[0] : tuple;
}

void Parser::finish_kernel(const Token& def_token) {
  node_.dynamic_vars = dynamic_vars_;
  if (!node_.thread_var.defined()) node_.thread_var = Var("tx");
  if (launch_nodes_.size() <= 1 && scratch_.empty()) {
    if (!views_.empty()) node_.body = view_accesses(node_.body);
    result_.kernel = located(launch_token_, [&] { return Kernel::make(node_); });
    return;
  }
  // Several launches (or global scratch): each launch is a one-launch kernel over the
  // parameters followed by the scratch tensors, run in order (core/kernel.h).
  std::vector<Buffer> launch_params = node_.params;
  launch_params.insert(launch_params.end(), scratch_.begin(), scratch_.end());
  std::vector<Kernel> launches;
  for (size_t i = 0; i < launch_nodes_.size(); ++i) {
    KernelNode launch = launch_nodes_[i];
    if (!views_.empty()) launch.body = view_accesses(launch.body);
    launch.name = kernel_name_ + "_launch" + std::to_string(i + 1);
    launch.params = launch_params;
    launch.dynamic_vars = dynamic_vars_;
    if (!launch.thread_var.defined()) launch.thread_var = Var("tx");
    launches.push_back(located(def_token, [&] { return Kernel::make(std::move(launch)); }));
  }
  result_.kernel = located(def_token, [&] {
    return make_launch_sequence(kernel_name_, node_.params, dynamic_vars_, scratch_,
                                std::move(launches), node_.loc);
  });
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
