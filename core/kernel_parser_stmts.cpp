// Statements of the kernel-file parser: blocks and their let bindings, assignments (allocations,
// stores, local constants), for loops, if/else, the T.Kernel launch and T.macro calls.
#include "core/analyzer.h"
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

bool is_augmented(const std::string& op) {
  static const char* kOps[] = {"+=", "-=", "*=", "/=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>=",
                               "**=", ":="};
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

/// `hi - lo` as a loop or slice extent, simplified the way the printer's `lo + extent` undoes.
Expr extent_between(const Expr& lo, const Expr& hi) {
  Expr extent = hi - lo;
  if (as_const_int(extent) || as_const_int(lo) == 0) return extent;
  Analyzer analyzer;
  return analyzer.simplify(extent);
}

const char* kSupportedStatements =
    "supported statements are assignments (constants, T.alloc_*, element stores), tile operators "
    "(T.copy, T.gemm, T.fill, ...), `for` over T.Parallel/T.Pipelined/T.serial/T.unroll/"
    "T.vectorized/T.grid/range, if/elif/else, `with T.Kernel(...)`, T.macro calls, pass and "
    "return";

}  // namespace

// ---- Blocks -----------------------------------------------------------------------------------

Stmt Parser::parse_suite(Context context, bool new_scope) {
  const Token colon = cur_->expect_op(":", "to open the block");
  if (++block_depth_ > kMaxBlockDepth) {
    fail(colon, "blocks nest more than " + std::to_string(kMaxBlockDepth) + " deep");
  }
  Context saved_context = context_;
  int saved_lets = let_depth_;
  auto scope = new_scope ? std::make_shared<NameScope>() : scope_;
  if (new_scope) scope->parent = scope_;
  std::swap(scope_, scope);
  context_ = context;
  std::vector<Stmt> out;
  std::vector<size_t> lets;
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
        fail(t, "a compound statement cannot follow ':' on the same line; start a new, "
                "indented line");
      }
      parse_statement(out, lets);
    }
  } else {
    cur_->next();
    if (cur_->peek().kind != TokenKind::kIndent) {
      fail(cur_->peek(), "expected an indented block after the ':' on line " +
                             std::to_string(colon.line));
    }
    cur_->next();
    parse_statements_until_dedent(out, lets);
  }
  std::swap(scope_, scope);
  context_ = saved_context;
  let_depth_ = saved_lets;
  --block_depth_;
  return fold_lets(std::move(out), lets);
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
    case TokenKind::kNewline: cur_->next(); return;
    case TokenKind::kIndent:
      fail(t, "unexpected indentation: this line is indented deeper than its block");
    case TokenKind::kString:  // a docstring or a string on its own: no effect
      while (cur_->peek().kind == TokenKind::kString) cur_->next();
      end_of_simple_statement();
      return;
    case TokenKind::kOp:
      if (t.text == "@") {
        std::vector<CallArgs> decorators = parse_decorators();
        if (!cur_->at_name("def")) {
          fail(cur_->peek(), "expected 'def' after the decorators, found " +
                                 TokenCursor::describe(cur_->peek()));
        }
        parse_def(std::move(decorators), cur_->next());
        return;
      }
      break;
    case TokenKind::kName:
      if (t.text == "def") {
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
      if (t.text == "while" || t.text == "class" || t.text == "try" || t.text == "except" ||
          t.text == "finally" || t.text == "raise" || t.text == "assert" || t.text == "break" ||
          t.text == "continue" || t.text == "del" || t.text == "global" || t.text == "nonlocal" ||
          t.text == "yield" || t.text == "async" || t.text == "await" || t.text == "lambda" ||
          t.text == "match") {
        unsupported(t);
      }
      break;
    default: break;
  }
  parse_simple_statement(out, lets);
}

void Parser::unsupported(const Token& at) const {
  const std::string& w = at.text;
  std::string why;
  if (w == "while") {
    why = "'while' loops are not supported: the IR has counted loops only; use `for i in "
          "T.serial(n):` with an `if` guard";
  } else if (w == "class") {
    why = "classes are not supported in kernel files: kernels are @T.prim_func functions and "
          "helpers are @T.macro functions";
  } else if (w == "break" || w == "continue") {
    why = "'" + w + "' is not supported: loops run their whole extent; guard the body with `if`";
  } else if (w == "try" || w == "except" || w == "finally" || w == "raise") {
    why = "exceptions ('" + w + "') are not supported in kernels";
  } else if (w == "assert") {
    why = "assert is not supported in kernels; guard with `if`";
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
    case Context::kKernelBody: return;
    case Context::kPreLaunch:
      fail(at, "kernel '" + kernel_name_ + "': " + what + " comes before T.Kernel(...); open the "
               "kernel launch first (with T.Kernel(grid..., threads=128) as (bx, by):)");
    case Context::kPostLaunch:
      fail(at, "kernel '" + kernel_name_ + "': " + what + " comes after the `with T.Kernel(...)` "
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

Var Parser::kernel_thread_var(const Token& at) {
  require_kernel_body(at, "T.get_thread_binding()");
  if (!node_.thread_var.defined()) node_.thread_var = Var("tx");
  return node_.thread_var;
}

// ---- Assignments ------------------------------------------------------------------------------

void Parser::parse_simple_statement(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  // Classify by the first `=`, `OP=` or `:` outside brackets.
  int depth = 0;
  std::string found;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) break;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    if (depth != 0) continue;
    if (t.text == ";") break;
    if (t.text == "=" || t.text == ":" || is_augmented(t.text)) {
      found = t.text;
      if (t.text == ":") {
        fail(t, "annotated assignments (x: T = v) are not supported; write x = v");
      }
      if (t.text == "**=" || t.text == ":=") fail(t, "'" + t.text + "' is not supported");
      break;
    }
  }
  if (found == "=") {
    parse_assignment(out, lets);
  } else if (!found.empty()) {
    parse_augmented(out, found);
  } else {
    parse_call_statement(out);
  }
}

void Parser::parse_assignment(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token target = cur_->peek();
  if (target.kind == TokenKind::kName && cur_->at_op("=", 1)) {
    check_binding(target);
    cur_->next();
    cur_->next();
    if (!parse_special_assignment(target, out)) {
      Value value = parse_value();
      if (cur_->at_op("=")) fail(cur_->peek(), "chained assignment (a = b = c) is not supported");
      assign_name(target, std::move(value), out, lets);
    }
    end_of_simple_statement();
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
    cur_->expect_op("=", "in the assignment");
    const Token value_at = cur_->peek();
    Value value = parse_value();
    if (cur_->at_op("=")) fail(cur_->peek(), "chained assignment (a = b = c) is not supported");
    out.push_back(make_store(buffer, indices, to_expr(value, value_at, "the stored value"), target));
    end_of_simple_statement();
    return;
  }
  // Tuple targets: `a, b = ...` or `(a, b) = ...`.
  bool paren = cur_->accept_op("(") || cur_->accept_op("[");
  std::vector<Token> names;
  while (cur_->peek().kind == TokenKind::kName) {
    check_binding(cur_->peek());
    names.push_back(cur_->next());
    if (!cur_->accept_op(",")) break;
  }
  if (paren && !cur_->accept_op(")")) cur_->accept_op("]");
  if (names.empty() || !cur_->at_op("=")) {
    fail(target, "cannot assign to this; assign to a name, an element (A[i, j]) or names "
                 "separated by commas");
  }
  cur_->next();
  const Token value_at = cur_->peek();
  Value value = parse_value();
  if (value.kind != Value::Kind::kTuple || value.items.size() != names.size()) {
    fail(value_at, "unpacking into " + std::to_string(names.size()) + " names needs a tuple of " +
                       std::to_string(names.size()) + " items, got " + value.describe());
  }
  for (size_t i = 0; i < names.size(); ++i) assign_name(names[i], value.items[i], out, lets);
  end_of_simple_statement();
}

bool Parser::parse_special_assignment(const Token& target, std::vector<Stmt>& out) {
  if (cur_->peek().kind != TokenKind::kName) return false;
  size_t start = cur_->position();
  std::string dotted;
  std::vector<Token> parts = read_dotted(dotted);
  std::string norm = normalize(dotted);
  bool alloc = norm == "T.alloc_shared" || norm == "T.alloc_fragment" ||
               norm == "T.alloc_local" || norm == "T.alloc_var";
  if (!cur_->at_op("(")) {
    cur_->rewind(start);
    return false;
  }
  if (alloc) {
    CallArgs call = parse_call_args(norm, parts[0]);
    require_kernel_body(parts[0], "an allocation");
    Buffer b = parse_alloc(call, target.text, out);
    bind(target.text, Value::of(b), target, true);
    return true;
  }
  if (norm == "T.get_thread_binding") {
    CallArgs call = parse_call_args(norm, parts[0]);
    if (!at_terminator()) {
      cur_->rewind(start);
      return false;
    }
    auto a = bind_args(call, {"dim"}, 0);
    if (a[0] && arg_int(call, *a[0], "dim", 0, 0) != 0) fail(a[0]->value_at, "use dimension 0");
    require_kernel_body(parts[0], "T.get_thread_binding()");
    if (!node_.thread_var.defined()) node_.thread_var = Var(target.text);
    bind(target.text, Value::of(Expr(node_.thread_var)), target, true);
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
      fail(at, "'" + buffer->name + "' is assigned through a slice; stores write one element "
                   "(use T.copy or T.fill for a region)");
    }
    indices.push_back(parse_expr());
    if (cur_->at_op(":")) {
      fail(at, "'" + buffer->name + "' is assigned through a slice; stores write one element "
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
  return located(at, [&] { return StoreNode::make(buffer, std::move(indices), value, loc_of(at)); });
}

void Parser::parse_augmented(std::vector<Stmt>& out, const std::string& op) {
  const Token target = cur_->next();
  if (target.kind != TokenKind::kName) {
    fail(target, "cannot update this with '" + op + "'; update a name or an element (A[i] " + op +
                     " v)");
  }
  const Binding* b = lookup(target.text);
  if (!b) unknown_name(target.text, target);
  Value current = b->value;
  std::vector<Expr> indices;
  bool element = cur_->at_op("[");
  bool var_buffer = current.kind == Value::Kind::kBuffer && var_buffers_.count(current.buffer.get());
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
    fail(target, "'" + target.text + "' is bound once at " + b->loc.str() + " and cannot change; "
                     "use T.alloc_var for a value that changes");
  } else {
    Expr old = to_expr(current, target, "'" + target.text + "'");
    bind(target.text, Value::of(located(op_tok, [&] { return combine(op, old, value); })), target);
  }
  end_of_simple_statement();
}

// ---- Loops, if and the launch -----------------------------------------------------------------

void Parser::parse_for(std::vector<Stmt>& out) {
  const Token for_tok = cur_->next();
  require_kernel_body(for_tok, "a for loop");
  bool paren = cur_->accept_op("(");
  std::vector<Token> names;
  do {
    names.push_back(expect_binding("a loop variable"));
  } while (cur_->accept_op(",") && cur_->peek().kind == TokenKind::kName);
  if (paren) cur_->expect_op(")", "after the loop variables");
  if (!cur_->accept_name("in")) {
    fail(cur_->peek(), "expected 'in' after the loop variables, found " +
                           TokenCursor::describe(cur_->peek()));
  }
  const Token it_at = cur_->peek();
  const char* kIterators = "a loop iterates over T.Parallel(...), T.Pipelined(...), "
                           "T.serial(...), T.unroll(...), T.vectorized(...), T.grid(...) or "
                           "range(...)";
  if (it_at.kind != TokenKind::kName) fail(it_at, kIterators);
  std::string dotted;
  read_dotted(dotted);
  std::string norm = normalize(dotted);
  if (!cur_->at_op("(")) fail(it_at, std::string(kIterators) + "; found '" + dotted + "'");
  CallArgs call = parse_call_args(norm, it_at);

  ForKind kind = ForKind::kSerial;
  std::vector<Expr> mins, extents;
  PipelineInfo pipeline;
  if (norm == "T.Parallel" || norm == "T.grid") {
    kind = norm == "T.Parallel" ? ForKind::kParallel : ForKind::kSerial;
    for (const Arg& a : call.args) {
      if (!a.keyword.empty()) {
        fail(a.at, norm + " has no argument '" + a.keyword + "'; it takes the loop extents only");
      }
      mins.push_back(make_int(0));
      extents.push_back(arg_expr(call, a, "extent"));
    }
    if (extents.empty()) fail(call.at, norm + " needs at least one extent");
  } else if (norm == "T.Pipelined" || norm == "T.serial" || norm == "range" ||
             norm == "T.unroll" || norm == "T.vectorized") {
    std::vector<std::string> params = {"start", "stop"};
    if (norm == "T.Pipelined") params = {"start", "stop", "num_stages", "order", "stage"};
    if (norm == "range") params.push_back("step");
    auto a = bind_args(call, params, 1);
    kind = norm == "T.Pipelined"    ? ForKind::kPipelined
           : norm == "T.unroll"     ? ForKind::kUnrolled
           : norm == "T.vectorized" ? ForKind::kVectorized
                                    : ForKind::kSerial;
    Expr first = arg_expr(call, *a[0], a[1] ? "start" : "stop");
    if (a[1]) {
      Expr stop = arg_expr(call, *a[1], "stop");
      mins.push_back(first);
      extents.push_back(located(a[1]->value_at, [&] { return extent_between(first, stop); }));
    } else {
      mins.push_back(make_int(0));
      extents.push_back(first);
    }
    if (norm == "range" && a[2] && a[2]->value.as_int() != 1) {
      fail(a[2]->value_at, "a step other than 1 is not supported; loops count by one (scale the "
                           "variable instead: i * step)");
    }
    if (norm == "T.Pipelined") {
      if (a[2]) pipeline.num_stages = static_cast<int>(arg_int(call, *a[2], "num_stages", 0, 64));
      if (a[3]) pipeline.order = arg_int_list(call, *a[3], "order");
      if (a[4]) pipeline.stage = arg_int_list(call, *a[4], "stage");
    }
  } else {
    fail(it_at, std::string(kIterators) + "; found '" + dotted + "'");
  }
  if (names.size() != extents.size()) {
    fail(names[0], norm + " gives " + std::to_string(extents.size()) + " loop variable" +
                       (extents.size() == 1 ? "" : "s") + " but the loop binds " +
                       std::to_string(names.size()) + "; bind one variable per extent");
  }
  count_statement(for_tok);
  std::vector<Var> vars;
  auto loop_scope = std::make_shared<NameScope>();
  loop_scope->parent = scope_;
  for (const Token& n : names) {
    vars.emplace_back(n.text);
    loop_scope->names[n.text] = Binding{Value::of(Expr(vars.back())), loc_of(n), true};
  }
  std::swap(scope_, loop_scope);
  Stmt body = parse_suite(Context::kKernelBody);
  std::swap(scope_, loop_scope);
  SourceLoc loc = loc_of(for_tok);
  out.push_back(located(for_tok, [&] {
    Stmt s = body;
    for (size_t d = vars.size(); d-- > 0;) {
      s = ForNode::make(vars[d], mins[d], extents[d], kind, s, loc,
                        d == 0 ? pipeline : PipelineInfo{});
    }
    return s;
  }));
}

void Parser::parse_if(std::vector<Stmt>& out, std::vector<size_t>& lets) {
  const Token if_tok = cur_->next();  // `if` or `elif`
  const Token cond_at = cur_->peek();
  Expr cond = parse_expr();
  if (auto c = as_const_int(cond)) {
    // A constant condition picks its branch while reading, as Python would: the other branch is
    // skipped unread and the chosen one's statements join this block.
    if (*c != 0) {
      Stmt chosen = parse_suite(context_, /*new_scope=*/false);
      if (const auto* seq = chosen.as<SeqNode>(); !seq || !seq->stmts.empty()) out.push_back(chosen);
      while (cur_->at_name("elif") || cur_->at_name("else")) {
        cur_->next();
        int depth = 0;
        while (!(depth == 0 && cur_->at_op(":")) && !cur_->at_end()) {
          if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
          if (cur_->at_op(")") || cur_->at_op("]")) --depth;
          cur_->next();
        }
        skip_suite();
      }
      return;
    }
    skip_suite();
    if (cur_->at_name("elif")) return parse_if(out, lets);
    if (cur_->accept_name("else")) {
      Stmt chosen = parse_suite(context_, /*new_scope=*/false);
      if (const auto* seq = chosen.as<SeqNode>(); !seq || !seq->stmts.empty()) out.push_back(chosen);
    }
    return;
  }
  if (context_ != Context::kKernelBody) {
    if (context_ == Context::kModule || context_ == Context::kGenerator) {
      fail(cond_at, "a compile-time `if` needs a constant condition, got `" + to_string(cond) + "`");
    }
    require_kernel_body(if_tok, "an if statement");
  }
  count_statement(if_tok);
  Stmt then_case = parse_suite(Context::kKernelBody);
  Stmt else_case;
  if (cur_->at_name("elif")) {
    std::vector<Stmt> nested;
    std::vector<size_t> no_lets;
    parse_if(nested, no_lets);
    else_case = SeqNode::make(std::move(nested));
  } else if (cur_->accept_name("else")) {
    else_case = parse_suite(Context::kKernelBody);
  }
  out.push_back(located(if_tok, [&] {
    return IfNode::make(cond, then_case, else_case, loc_of(if_tok));
  }));
}

void Parser::parse_with(std::vector<Stmt>& out) {
  const Token with_tok = cur_->next();
  const Token at = cur_->peek();
  std::string dotted;
  if (at.kind == TokenKind::kName) read_dotted(dotted);
  std::string norm = normalize(dotted);
  if (norm != "T.Kernel" || !cur_->at_op("(")) {
    fail(at, "only `with T.Kernel(grid..., threads=N) as (bx, by):` is supported as a with "
             "statement");
  }
  if (context_ == Context::kKernelBody || context_ == Context::kPostLaunch) {
    fail(with_tok, "kernel '" + kernel_name_ + "': T.Kernel is entered twice; a kernel has one "
                   "launch");
  }
  if (context_ != Context::kPreLaunch) {
    fail(with_tok, "`with T.Kernel(...)` belongs in the body of the kernel function "
                   "(@T.prim_func)");
  }
  CallArgs call = parse_call_args(norm, at);
  std::vector<Expr> grid;
  int64_t threads = 128;
  for (const Arg& a : call.args) {
    if (a.keyword.empty()) {
      grid.push_back(arg_expr(call, a, "grid extent"));
    } else if (a.keyword == "threads") {
      threads = arg_int(call, a, "threads", 1, 1 << 20);
    } else {
      fail(a.at, "T.Kernel has no argument '" + a.keyword + "'; it takes the grid extents and "
                 "threads=N");
    }
  }
  if (grid.empty() || grid.size() > 3) {
    fail(at, "kernel '" + kernel_name_ + "': T.Kernel takes 1 to 3 grid extents, got " +
                 std::to_string(grid.size()));
  }
  std::vector<Token> names;
  if (cur_->accept_name("as")) {
    if (cur_->accept_op("(") || cur_->accept_op("[")) {
      while (cur_->peek().kind == TokenKind::kName) {
        names.push_back(expect_binding("a block index name"));
        if (!cur_->accept_op(",")) break;
      }
      if (!cur_->accept_op(")")) cur_->expect_op("]", "to close the block indices");
    } else {
      names.push_back(expect_binding("a block index name"));
    }
    if (names.size() != grid.size()) {
      fail(names.empty() ? at : names[0],
           "T.Kernel has " + std::to_string(grid.size()) + " grid extent(s) but binds " +
               std::to_string(names.size()) + " block index name(s); bind one per extent, e.g. " +
               (grid.size() == 1 ? "as bx" : grid.size() == 2 ? "as (bx, by)" : "as (bx, by, bz)"));
    }
  }
  static const char* kDefaultNames[] = {"bx", "by", "bz"};
  node_.grid = grid;
  node_.threads = static_cast<int>(threads);
  node_.block_vars.clear();
  auto scope = std::make_shared<NameScope>();
  scope->parent = scope_;
  for (size_t d = 0; d < grid.size(); ++d) {
    node_.block_vars.emplace_back(names.empty() ? kDefaultNames[d] : names[d].text);
    if (!names.empty()) {
      scope->names[names[d].text] =
          Binding{Value::of(Expr(node_.block_vars.back())), loc_of(names[d]), true};
    }
  }
  launched_ = true;
  launch_token_ = at;
  std::swap(scope_, scope);
  node_.body = parse_suite(Context::kKernelBody);
  std::swap(scope_, scope);
  context_ = Context::kPostLaunch;
  (void)out;
}

void Parser::parse_return() {
  const Token at = cur_->next();
  bool has_value = !at_terminator();
  if (context_ == Context::kGenerator) {
    if (!has_value) fail(at, "the enclosing def returns the kernel function it defines");
    const Token value_at = cur_->peek();
    Value v = parse_value();
    if (v.kind != Value::Kind::kKernel) {
      fail(value_at, "the enclosing def returns the kernel function it defines ('" +
                         (kernel_name_.empty() ? std::string("main") : kernel_name_) + "'), got " +
                         v.describe());
    }
  } else if (context_ == Context::kModule) {
    fail(at, "'return' outside a function");
  } else if (has_value) {
    fail(at, "a kernel or T.macro returns nothing here; T.macro helpers that return a value are "
             "not supported (write the result into a buffer)");
  }
  end_of_simple_statement();
  while (cur_->peek().kind == TokenKind::kNewline) cur_->next();
  if (cur_->peek().kind != TokenKind::kDedent && cur_->peek().kind != TokenKind::kEnd) {
    fail(cur_->peek(), "code after 'return' never runs; remove it");
  }
}

// ---- Calls as statements and macros -----------------------------------------------------------

void Parser::parse_call_statement(std::vector<Stmt>& out) {
  const Token at = cur_->peek();
  const char* kNoEffect = "this line has no effect: a statement is an assignment, a call of a "
                          "T.* operator or a T.macro, a loop, an if or a with T.Kernel(...)";
  if (at.kind != TokenKind::kName) fail(at, kNoEffect);
  std::string dotted;
  std::vector<Token> parts = read_dotted(dotted);
  if (!cur_->at_op("(")) {
    if (!lookup(parts[0].text)) unknown_name(parts[0].text, parts[0]);
    fail(at, kNoEffect);
  }
  std::string norm = normalize(dotted);
  const Binding* b = lookup(parts[0].text);
  if (b && parts.size() == 1 && b->value.kind == Value::Kind::kMacro) {
    CallArgs call = parse_call_args(dotted, at);
    end_of_simple_statement();
    inline_macro(*b->value.macro, call, out);
    return;
  }
  CallArgs call = parse_call_args(norm, at);
  if (!at_terminator()) {
    fail(cur_->peek(), "unexpected " + TokenCursor::describe(cur_->peek()) + " after the call");
  }
  end_of_simple_statement();
  if (parse_operator(call, out)) return;
  if (norm.rfind("T.", 0) == 0) {
    fail(at, norm + " is not a statement Tessel supports; the statements of T are T.copy, "
                    "T.gemm, T.fill, T.clear, T.reduce_sum/max/min/abssum/absmax, "
                    "T.atomic_add/max/min, T.sync_threads, T.use_swizzle and the thread-level "
                    "instructions (T.mma_m16n8k16_f16, T.ldmatrix_x4, T.cp_async_16, ...)");
  }
  if (!b) unknown_name(parts[0].text, parts[0]);
  fail(at, "'" + dotted + "' is " + b->value.describe() + " and cannot be called as a statement");
}

void Parser::inline_macro(const MacroDef& macro, const CallArgs& call, std::vector<Stmt>& out) {
  require_kernel_body(call.at, "a call of T.macro '" + macro.name + "'");
  if (macro_depth_ >= kMaxMacroDepth) {
    fail(call.at, "T.macro calls nest more than " + std::to_string(kMaxMacroDepth) +
                      " deep (does '" + macro.name + "' call itself?)");
  }
  size_t required = 0;
  while (required < macro.params.size() && !macro.defaults[required]) ++required;
  std::vector<const Arg*> bound = bind_args(call, macro.params, required);
  auto scope = std::make_shared<NameScope>();
  scope->parent = macro.closure;
  for (size_t i = 0; i < macro.params.size(); ++i) {
    Value v = bound[i] ? bound[i]->value : *macro.defaults[i];
    scope->names[macro.params[i]] = Binding{std::move(v), macro.loc, false};
  }
  size_t resume = cur_->position();
  std::string note = "\n  (in T.macro '" + macro.name + "' called at " + loc_of(call.at).str() + ")";
  auto with_note = [&](const std::string& message) {
    return message.find(note) == std::string::npos ? message + note : message;
  };
  ++macro_depth_;
  std::swap(scope_, scope);
  cur_->rewind(macro.body_position);
  try {
    out.push_back(parse_suite(Context::kKernelBody));
  } catch (const KernelFileError& e) {
    throw KernelFileError(with_note(e.what()));
  } catch (const LocatedError& e) {
    throw LocatedError(with_note(e.what()));
  }
  std::swap(scope_, scope);
  cur_->rewind(resume);
  --macro_depth_;
}

}  // namespace tessel::kernel_parser_detail
