// Statements of the kernel-file parser: blocks and their let bindings, the statement dispatch,
// and assignments (allocations, element stores, local constants, augmented updates).
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

bool is_augmented(const std::string& op) {
  static const char* kOps[] = {
      "+=", "-=", "*=", "/=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>=", "**=", ":="};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

/// `a OP= b` as `a OP b`, with Python's meaning of each operator.
Expr combine(const std::string& op, const Expr& a, const Expr& b) {
  if (op == "+=") return a + b;
  if (op == "-=") return a - b;
  if (op == "*=") return a * b;
  if (op == "/=") return DivNode::make(a, b);
  if (op == "//=") return floordiv(a, b);
  if (op == "%=") return floormod(a, b);
  if (op == "&=") return a & b;
  if (op == "|=") return a | b;
  if (op == "^=") return a ^ b;
  if (op == "<<=") return a << b;
  return a >> b;
}

const char* kSupportedStatements =
    "supported statements are assignments (constants, T.alloc_*, element stores), tile operators "
    "(T.copy, T.gemm, T.fill, ...), `for` over T.Parallel/T.Pipelined/T.serial/T.unroll/"
    "T.vectorized/T.grid/range, if/elif/else, `with T.Kernel(...)`, T.macro calls, pass and "
    "return";

}  // namespace

// ---- Blocks -----------------------------------------------------------------------------------

Stmt Parser::parse_suite(Context context) {
  Context saved_context = context_;
  int saved_lets = let_depth_;
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  std::swap(scope_, scope);
  context_ = context;
  std::vector<Stmt> out;
  std::vector<size_t> lets;
  parse_block_into(out, lets);
  std::swap(scope_, scope);
  context_ = saved_context;
  let_depth_ = saved_lets;
  return fold_lets(std::move(out), lets);
}

void Parser::parse_block_into(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token colon = cur_->expect_op(":", "to open the block");
  if (++block_depth_ > kMaxBlockDepth) {
    fail(colon, "blocks nest more than " + std::to_string(kMaxBlockDepth) + " deep");
  }
  if (cur_->peek().kind != TokenKind::kNewline) {
    // A one-line block: `if x: A[i] = 0` — simple statements up to the end of the line.
    while (true) {
      const Token& t = cur_->peek();
      if (t.kind == TokenKind::kNewline) {
        cur_->next();
        break;
      }
      if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kDedent) break;
      if (t.kind == TokenKind::kName &&
          (t.text == "for" || t.text == "if" || t.text == "with" || t.text == "def")) {
        fail(t,
             "a compound statement cannot follow ':' on the same line; start a new, "
             "indented line");
      }
      parse_statement(out, lets);
    }
  } else {
    cur_->next();
    if (cur_->peek().kind != TokenKind::kIndent) {
      fail(cur_->peek(),
           "expected an indented block after the ':' on line " + std::to_string(colon.line));
    }
    cur_->next();
    parse_statements_until_dedent(out, lets);
  }
  --block_depth_;
}

void Parser::parse_statements_until_dedent(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  while (cur_->peek().kind != TokenKind::kDedent && cur_->peek().kind != TokenKind::kEnd) {
    parse_statement(out, lets);
  }
  if (cur_->peek().kind == TokenKind::kDedent) cur_->next();
}

Stmt Parser::fold_lets(std::vector<Stmt> stmts, const std::vector<size_t>& lets) const {
  // A let binds the rest of its block: `x = e; s1; s2` is Let(x, e, Seq(s1, s2)).
  size_t end = stmts.size();
  Stmt tail;
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
    size_t i = *it;
    std::vector<Stmt> body(stmts.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                           stmts.begin() + static_cast<std::ptrdiff_t>(end));
    if (tail.defined()) body.push_back(tail);
    const auto* let = stmts[i].as<LetNode>();
    tail = LetNode::make(let->var, let->value, SeqNode::make(std::move(body)), let->loc);
    end = i;
  }
  std::vector<Stmt> head(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(end));
  if (tail.defined()) head.push_back(tail);
  return SeqNode::make(std::move(head));
}

void Parser::parse_statement(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token t = cur_->peek();
  switch (t.kind) {
    case TokenKind::kNewline:
      cur_->next();
      return;
    case TokenKind::kIndent:
      fail(t, "unexpected indentation: this line is indented deeper than its block");
    case TokenKind::kString:  // a docstring or a string on its own: no effect
      while (cur_->peek().kind == TokenKind::kString) cur_->next();
      end_of_simple_statement();
      return;
    case TokenKind::kOp:
      if (t.text == "@") {
        std::vector<Decorator> decorators = parse_decorators();
        if (!cur_->at_name("def")) {
          fail(cur_->peek(),
               "expected 'def' after the decorators, found " + TokenCursor::describe(cur_->peek()));
        }
        parse_def(std::move(decorators), cur_->next());
        return;
      }
      break;
    case TokenKind::kName:
      if (t.text == "def") {
        def_start_ = cur_->position();
        parse_def({}, cur_->next());
        return;
      }
      if (t.text == "import" || t.text == "from") return parse_import();
      if (t.text == "for") return parse_for(out);
      if (t.text == "if") {
        if (context_ == Context::kModule && cur_->at_name("__name__", 1)) {
          // `if __name__ == "__main__":` host code: skipped with its elif/else branches.
          do {
            cur_->next();
            int depth = 0;
            while (!(depth == 0 && cur_->at_op(":")) && !cur_->at_end()) {
              if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
              if (cur_->at_op(")") || cur_->at_op("]")) --depth;
              cur_->next();
            }
            skip_suite();
          } while (cur_->at_name("elif") || cur_->at_name("else"));
          return;
        }
        return parse_if(out, lets);
      }
      if (t.text == "with") return parse_with(out);
      if (t.text == "return") return parse_return();
      if (t.text == "pass") {
        cur_->next();
        end_of_simple_statement();
        return;
      }
      if (t.text == "elif" || t.text == "else") {
        fail(t, "'" + t.text + "' without a matching 'if' at this indentation");
      }
      if (t.text == "assert") return parse_assert();
      if (t.text == "while" || t.text == "class" || t.text == "try" || t.text == "except" ||
          t.text == "finally" || t.text == "raise" || t.text == "break" || t.text == "continue" ||
          t.text == "del" || t.text == "global" || t.text == "nonlocal" || t.text == "yield" ||
          t.text == "async" || t.text == "await" || t.text == "lambda" || t.text == "match") {
        unsupported(t);
      }
      break;
    default:
      break;
  }
  parse_simple_statement(out, lets);
}

void Parser::unsupported(const Token& at) const {
  const std::string& w = at.text;
  std::string why;
  if (w == "while") {
    why =
        "'while' loops are not supported: the IR has counted loops only; use `for i in "
        "T.serial(n):` with an `if` guard";
  } else if (w == "class") {
    why =
        "classes are not supported in kernel files: kernels are @T.prim_func functions and "
        "helpers are @T.macro functions";
  } else if (w == "break" || w == "continue") {
    why = "'" + w + "' is not supported: loops run their whole extent; guard the body with `if`";
  } else if (w == "try" || w == "except" || w == "finally" || w == "raise") {
    why = "exceptions ('" + w + "') are not supported in kernels";
  } else if (w == "lambda") {
    why = "lambda is only accepted in layout specs (`tessel layout`), not as a statement";
  } else {
    why = "'" + w + "' is not supported in kernel files";
  }
  fail(at, why + "; " + kSupportedStatements);
}

void Parser::end_of_simple_statement() {
  if (cur_->accept_op(";")) {
    if (cur_->peek().kind == TokenKind::kNewline) cur_->next();
    return;
  }
  const Token& t = cur_->peek();
  if (t.kind == TokenKind::kNewline) {
    cur_->next();
    return;
  }
  if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kDedent) return;
  fail(t, "expected the end of the statement, found " + TokenCursor::describe(t));
}

void Parser::require_kernel_body(const Token& at, const std::string& what) const {
  switch (context_) {
    case Context::kKernelBody:
      return;
    case Context::kPreLaunch:
      fail(at, "kernel '" + kernel_name_ + "': " + what +
                   " comes before T.Kernel(...); open the "
                   "kernel launch first (with T.Kernel(grid..., threads=128) as (bx, by):)");
    case Context::kPostLaunch:
      fail(at, "kernel '" + kernel_name_ + "': " + what +
                   " comes after the `with T.Kernel(...)` "
                   "block; move it inside");
    default:
      fail(at, what + " belongs inside a kernel's `with T.Kernel(...)` block");
  }
}

void Parser::count_statement(const Token& at) {
  if (++statements_ > kMaxStatements) {
    fail(at, "the kernel has more than " + std::to_string(kMaxStatements) +
                 " statements once T.macro calls are inlined");
  }
}

Expr Parser::thread_binding_of(const Token& at, int dim, const std::string& name) {
  require_kernel_body(at, "T.get_thread_binding()");
  if (!node_.thread_var.defined()) {
    // A 1-d block's index is the linear index itself and takes the user's name.
    bool linear = dim == 0 && node_.thread_dims.size() == 1;
    node_.thread_var = Var(linear && !name.empty() ? name : linear ? "tx" : "tid");
  }
  return thread_binding(node_, dim);
}

Expr Parser::block_binding_of(const Token& at, int dim) {
  require_kernel_body(at, "T.get_block_binding()");
  if (dim >= static_cast<int>(node_.block_vars.size())) return make_int(0);  // extent 1
  return node_.block_vars[dim];
}

// ---- Assignments ------------------------------------------------------------------------------

void Parser::parse_simple_statement(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  // Classify by the first `=`, `OP=` or `:` outside brackets.
  int depth = 0;
  std::string found;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) break;
    if (t.kind == TokenKind::kName && t.text == "lambda" && depth == 0) break;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    if (depth != 0) continue;
    if (t.text == ";") break;
    if (t.text == "=" || t.text == ":" || is_augmented(t.text)) {
      found = t.text;
      if (t.text == "**=" || t.text == ":=") fail(t, "'" + t.text + "' is not supported");
      break;
    }
  }
  if (found == "=") {
    parse_assignment(out, lets);
  } else if (found == ":") {
    parse_annotated(out, lets);
  } else if (!found.empty()) {
    parse_augmented(out, found);
  } else {
    parse_call_statement(out);
  }
}

void Parser::parse_assignment(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token target = cur_->peek();
  // `a = b = value`: every segment before the last '=' is a target, assigned left to right.
  std::vector<size_t> starts{cur_->position()};
  int depth = 0;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) break;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    if (depth == 0 && t.text == ";") break;
    if (depth == 0 && t.text == "=") {
      if (cur_->position() + k == starts.back()) fail(t, "expected an expression, found '='");
      starts.push_back(cur_->position() + k + 1);
    }
  }
  size_t value_start = starts.back();
  starts.pop_back();
  if (starts.size() == 1 && target.kind == TokenKind::kName && cur_->at_op("=", 1)) {
    check_binding(target);
    cur_->rewind(value_start);
    if (parse_special_assignment(target, out)) {
      end_of_simple_statement();
      return;
    }
  }
  cur_->rewind(value_start);
  const Token value_at = cur_->peek();
  Value value = parse_testlist();
  size_t end = cur_->position();
  for (size_t start : starts) {
    cur_->rewind(start);
    assign_target(value, value_at, out, lets);
    if (!cur_->at_op("=")) {
      fail(cur_->peek(), "expected '=' after the assignment's target, found " +
                             TokenCursor::describe(cur_->peek()));
    }
  }
  cur_->rewind(end);
  end_of_simple_statement();
}

void Parser::assign_target(const Value& value, const Token& value_at, std::vector<Stmt>& out,
                           std::vector<size_t>& lets) {
  const Token target = cur_->peek();
  if (target.kind == TokenKind::kName && cur_->at_op("=", 1)) {
    check_binding(target);
    cur_->next();
    assign_name(target, value, out, lets);
    return;
  }
  if (target.kind == TokenKind::kName && cur_->at_op("[", 1)) {
    cur_->next();
    const Binding* b = lookup(target.text);
    if (!b) unknown_name(target.text, target);
    if (b->value.kind != Value::Kind::kBuffer) {
      fail(target, "'" + target.text + "' is " + b->value.describe() +
                       "; only buffers take element assignments (A[i, j] = value)");
    }
    Buffer buffer = b->value.buffer;
    std::vector<Expr> indices = parse_store_indices(buffer, target);
    out.push_back(
        make_store(buffer, indices, to_expr(value, value_at, "the stored value"), target));
    return;
  }
  // Tuple targets: `a, b = ...`, `(a, b) = ...` or `[a, b] = ...`.
  bool paren = cur_->accept_op("(") || cur_->accept_op("[");
  std::vector<Token> names;
  while (cur_->peek().kind == TokenKind::kName) {
    check_binding(cur_->peek());
    names.push_back(cur_->next());
    if (!cur_->accept_op(",")) break;
  }
  if (paren && !cur_->accept_op(")")) cur_->accept_op("]");
  if (names.empty() || !cur_->at_op("=")) {
    fail(target,
         "cannot assign to this; assign to a name, an element (A[i, j]) or names "
         "separated by commas");
  }
  if (value.kind != Value::Kind::kTuple || value.items.size() != names.size()) {
    fail(value_at, "unpacking into " + std::to_string(names.size()) + " names needs a tuple of " +
                       std::to_string(names.size()) + " items, got " + value.describe());
  }
  for (size_t i = 0; i < names.size(); ++i) assign_name(names[i], value.items[i], out, lets);
}

void Parser::parse_annotated(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token target = cur_->peek();
  if (target.kind != TokenKind::kName || !cur_->at_op(":", 1)) {
    fail(target, "an annotated statement (x: T = v) annotates one name");
  }
  check_binding(target);
  cur_->next();
  cur_->next();
  const Token annotation_at = cur_->peek();
  if (declare_tensor(target, annotation_at)) {
    end_of_simple_statement();
    return;
  }
  {
    NoEval skip(*this);  // an annotation on anything else means nothing to the kernel
    parse_value();
  }
  if (cur_->accept_op("=")) {
    const Token value_at = cur_->peek();
    Value value = parse_testlist();
    assign_name(target, value, out, lets);
    (void)value_at;
  }
  end_of_simple_statement();
}

void Parser::parse_assert() {
  const Token kw = cur_->next();
  const Token cond_at = cur_->peek();
  Value cond = numeric(parse_value(), cond_at);
  size_t cond_end = offset_of(cur_->peek());
  std::string cond_text = source_.substr(offset_of(cond_at), cond_end - offset_of(cond_at));
  while (!cond_text.empty() && (cond_text.back() == ' ' || cond_text.back() == ',')) {
    cond_text.pop_back();
  }
  std::string message = "assertion failed: `" + cond_text + "`";
  size_t message_at = 0;
  bool has_message = cur_->accept_op(",");
  if (has_message) {
    message_at = cur_->position();
    NoEval skip(*this);  // evaluated only when the assertion fails, as in Python
    parse_value();
  }
  size_t end = cur_->position();
  auto truth = py_truth(cond);
  if (has_message && !(truth && *truth)) {
    cur_->rewind(message_at);
    try {
      Value m = parse_value();
      message = "assertion failed: " + (m.kind == Value::Kind::kString ? m.text : m.describe());
    } catch (const UserError&) {
      // a message Tessel cannot evaluate (host code): the condition's text stands for it
    }
    cur_->rewind(end);
  }
  end_of_simple_statement();
  if (truth) {
    if (!*truth) {
      std::string quoted = caret_message(source_, kw.line, kw.column, "", path_);
      throw AssertionFailure(loc_of(kw).str() + ": " + message +
                             quoted.substr(std::min(quoted.find('\n'), quoted.size())));
    }
    return;
  }
  Expr c = to_expr(cond, cond_at, "the condition of assert");
  std::vector<std::string> runtime;
  pre_order_visit(c, [&](const Expr& e) {
    if (const auto* v = e.as<VarNode>()) {
      bool size = false;
      for (const Var& d : dynamic_vars_) size = size || d.get() == v;
      if (!size) runtime.push_back(v->name);
    }
    if (e.as<BufferLoadNode>()) runtime.push_back(to_string(e));
  });
  if (!runtime.empty()) {
    fail(cond_at, "this assert depends on '" + runtime.front() +
                      "', known only while the kernel runs; Tessel checks an assert when it "
                      "reads the file (constants) or before a run (sizes of T.dynamic and T.const "
                      "dimensions); guard with `if` instead");
  }
  result_.assertions.push_back(KernelAssertion{c, message, loc_of(kw)});
}

bool Parser::parse_special_assignment(const Token& target, std::vector<Stmt>& out) {
  if (cur_->peek().kind != TokenKind::kName) return false;
  size_t start = cur_->position();
  std::string dotted;
  std::vector<Token> parts = read_dotted(dotted);
  std::string norm = normalize(dotted);
  bool alloc = norm == "T.alloc_shared" || norm == "T.alloc_fragment" || norm == "T.alloc_local" ||
               norm == "T.alloc_var";
  if (!cur_->at_op("(")) {
    cur_->rewind(start);
    return false;
  }
  if (alloc || norm == "T.alloc_barrier") {
    CallArgs call = parse_call_args(norm, parts[0]);
    require_kernel_body(parts[0], "an allocation");
    Buffer b =
        alloc ? parse_alloc(call, target.text, out) : parse_alloc_barrier(call, target.text, out);
    bind(target.text, Value::of(b), target, true);
    return true;
  }
  if (norm == "T.get_thread_binding" || norm == "T.linear_thread_index") {
    CallArgs call = parse_call_args(norm, parts[0]);
    if (!at_terminator()) {
      cur_->rewind(start);
      return false;
    }
    bool linear = norm == "T.linear_thread_index";
    auto a =
        bind_args(call, linear ? std::vector<std::string>{} : std::vector<std::string>{"dim"}, 0);
    int dim = !linear && a[0] ? static_cast<int>(arg_int(call, *a[0], "dim", 0, 2)) : 0;
    if (linear && !node_.thread_var.defined()) {
      require_kernel_body(parts[0], norm + "()");
      node_.thread_var = Var(target.text);
    }
    Expr index = thread_binding_of(parts[0], dim, target.text);
    bind(target.text, Value::of(linear ? Expr(node_.thread_var) : index), target, true);
    return true;
  }
  if (norm == "T.alloc_global") {
    CallArgs call = parse_call_args(norm, parts[0]);
    if (context_ != Context::kPreLaunch && context_ != Context::kPostLaunch) {
      fail(parts[0],
           "T.alloc_global makes global scratch that the kernel's launches share: allocate it in "
           "the kernel function's body, before the `with T.Kernel(...)` launch that first uses "
           "it, not inside a launch (inside one, use T.alloc_shared or T.alloc_fragment)");
    }
    Buffer b = tensor_from_annotation(target, parts[0], call);
    for (const Buffer& s : scratch_) {
      if (s->name == b->name) fail(target, "T.alloc_global: '" + b->name + "' is allocated twice");
    }
    bool param = pending_tensors_.count(b->name) > 0;
    if (declared_) {
      for (const Buffer& p : *declared_) param = param || (p.defined() && p->name == b->name);
    }
    for (const Buffer& p : empty_tensors_) param = param || p->name == b->name;
    if (param) {
      fail(target, "T.alloc_global: '" + b->name + "' is a tensor parameter of '" + kernel_name_ +
                       "'; give the scratch another name");
    }
    scratch_.push_back(b);
    bind(target.text, Value::of(b), target, true);
    return true;
  }
  if (norm == "T.empty") {
    Buffer b = make_empty_tensor(target, parse_call_args(norm, parts[0]));
    bind(target.text, Value::of(b), target, true);
    return true;
  }
  if (norm == "T.dynamic" || norm == "T.symbolic") {
    cur_->rewind(start);
    Value v = parse_value();  // the hook makes (or finds) the symbolic variable
    bind(target.text, std::move(v), target, context_ == Context::kKernelBody);
    return true;
  }
  cur_->rewind(start);
  return false;
}

void Parser::assign_name(const Token& target, Value value, std::vector<Stmt>& out,
                         std::vector<size_t>& lets) {
  const std::string& name = target.text;
  if (context_ != Context::kKernelBody) {
    if (value.kind == Value::Kind::kElement) value = Value::of(to_expr(value, target, "the value"));
    bind(name, std::move(value), target);
    return;
  }
  const Binding* existing = lookup(name);
  if (existing && existing->value.kind == Value::Kind::kBuffer &&
      var_buffers_.count(existing->value.buffer.get())) {
    // `x = v` on a T.alloc_var buffer writes it.
    out.push_back(make_store(existing->value.buffer, {make_int(0)},
                             to_expr(value, target, "the stored value"), target));
    return;
  }
  if (value.kind == Value::Kind::kElement) value = Value::of(to_expr(value, target, "the value"));
  bool constant = value.kind == Value::Kind::kExpr &&
                  (value.expr.as<IntImmNode>() || value.expr.as<FloatImmNode>());
  if (value.kind != Value::Kind::kExpr || constant) {
    bind(name, std::move(value), target, true);  // a compile-time name: folded into its uses
    return;
  }
  if (++let_depth_ + block_depth_ > kMaxLetDepth) {
    fail(target, "more than " + std::to_string(kMaxLetDepth) + " nested bindings in one kernel");
  }
  count_statement(target);
  Var var(name, value.expr.dtype());
  lets.push_back(out.size());
  out.push_back(LetNode::make(var, value.expr, Stmt(), loc_of(target)));
  bind(name, Value::of(Expr(var)), target, true);
}

std::vector<Expr> Parser::parse_store_indices(const Buffer& buffer, const Token& at) {
  const Token open = cur_->expect_op("[", "after " + buffer->name);
  std::vector<Expr> indices;
  while (!cur_->at_op("]")) {
    if (cur_->at_op(":")) {
      fail(at, "'" + buffer->name +
                   "' is assigned through a slice; stores write one element "
                   "(use T.copy or T.fill for a region)");
    }
    indices.push_back(parse_expr());
    if (cur_->at_op(":")) {
      fail(at, "'" + buffer->name +
                   "' is assigned through a slice; stores write one element "
                   "(use T.copy or T.fill for a region)");
    }
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->at_op("]")) unclosed(open, "after '" + buffer->name + "'");
  cur_->next();
  return indices;
}

Stmt Parser::make_store(const Buffer& buffer, std::vector<Expr> indices, Expr value,
                        const Token& at) {
  require_kernel_body(at, "a store to '" + buffer->name + "'");
  count_statement(at);
  return located(at,
                 [&] { return StoreNode::make(buffer, std::move(indices), value, loc_of(at)); });
}

void Parser::parse_augmented(std::vector<Stmt>& out, const std::string& op) {
  const Token target = cur_->next();
  if (target.kind != TokenKind::kName) {
    fail(target,
         "cannot update this with '" + op + "'; update a name or an element (A[i] " + op + " v)");
  }
  const Binding* b = lookup(target.text);
  if (!b) unknown_name(target.text, target);
  Value current = b->value;
  std::vector<Expr> indices;
  bool element = cur_->at_op("[");
  bool var_buffer =
      current.kind == Value::Kind::kBuffer && var_buffers_.count(current.buffer.get());
  if (element) {
    if (current.kind != Value::Kind::kBuffer) {
      fail(target, "'" + target.text + "' is " + current.describe() + " and has no elements");
    }
    indices = parse_store_indices(current.buffer, target);
  } else if (var_buffer) {
    indices = {make_int(0)};
  }
  const Token op_tok = cur_->expect_op(op, "in the update");
  const Token value_at = cur_->peek();
  Value rhs = parse_value();
  Expr value = to_expr(rhs, value_at, "the right-hand side of '" + op + "'");
  if (element || var_buffer) {
    Expr old = located(target, [&] { return BufferLoadNode::make(current.buffer, indices); });
    Expr updated = located(op_tok, [&] { return combine(op, old, value); });
    out.push_back(make_store(current.buffer, indices, updated, target));
  } else if (context_ == Context::kKernelBody && b->kernel_local) {
    fail(target, "'" + target.text + "' is bound once at " + b->loc.str() +
                     " and cannot change; "
                     "use T.alloc_var for a value that changes");
  } else {
    Expr old = to_expr(current, target, "'" + target.text + "'");
    bind(target.text, Value::of(located(op_tok, [&] { return combine(op, old, value); })), target);
  }
  end_of_simple_statement();
}

}  // namespace tessel::kernel_parser_detail
