// Control flow and calls in the kernel-file parser: for loops over T.Parallel/T.Pipelined/...,
// if/elif/else (constant conditions pick a branch while reading), the T.Kernel launch,
// return, operator calls as statements and T.macro inlining.
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

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
    fail(cur_->peek(),
         "expected 'in' after the loop variables, found " + TokenCursor::describe(cur_->peek()));
  }
  const Token it_at = cur_->peek();
  const char* kIterators =
      "a loop iterates over T.Parallel(...), T.Pipelined(...), "
      "T.serial(...), T.unroll(...), T.vectorized(...), T.grid(...) or "
      "range(...)";
  if (it_at.kind != TokenKind::kName) fail(it_at, kIterators);
  std::string dotted;
  read_dotted(dotted);
  std::string norm = normalize(dotted);
  // TileLang's capitalised aliases of the serial loop kinds.
  if (norm == "T.Serial") norm = "T.serial";
  if (norm == "T.Unroll") norm = "T.unroll";
  if (norm == "T.Vectorized") norm = "T.vectorized";
  if (auto why = refusal_of(norm)) fail(it_at, *why);
  if (!cur_->at_op("(")) fail(it_at, std::string(kIterators) + "; found '" + dotted + "'");
  CallArgs call = parse_call_args(norm, it_at);

  ForKind kind = ForKind::kSerial;
  std::vector<Expr> mins, extents;
  PipelineInfo pipeline;
  if (norm == "T.Parallel" || norm == "T.grid") {
    kind = norm == "T.Parallel" ? ForKind::kParallel : ForKind::kSerial;
    for (const Arg& a : call.args) {
      if (norm == "T.Parallel" && a.keyword == "loop_layout") {
        // A thread mapping for the loop: a hint to layout inference, which Tessel makes itself
        // (and `tessel verify` proves); the loop's meaning does not depend on it.
        continue;
      }
      if (!a.keyword.empty()) {
        fail(a.at, norm + " has no argument '" + a.keyword + "'; it takes the loop extents" +
                       (norm == "T.Parallel" ? " and loop_layout=" : " only"));
      }
      mins.push_back(make_int(0));
      extents.push_back(arg_expr(call, a, "extent"));
    }
    if (extents.empty()) fail(call.at, norm + " needs at least one extent");
  } else if (norm == "T.Pipelined" || norm == "T.serial" || norm == "range" || norm == "T.unroll" ||
             norm == "T.vectorized") {
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
      fail(a[2]->value_at,
           "a step other than 1 is not supported; loops count by one (scale the "
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
  for (size_t d = 0; d < names.size(); ++d) {
    const Token& n = names[d];
    vars.emplace_back(n.text, loop_var_type(mins[d], extents[d]));
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
  Value cond_value = numeric(parse_value(), cond_at);
  if (auto c = py_truth(cond_value)) {
    // A constant condition picks its branch while reading, as Python would: the other branch is
    // skipped unread and the chosen one's statements and names join this block.
    if (*c) {
      parse_block_into(out, lets);
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
    if (cur_->accept_name("else")) parse_block_into(out, lets);
    return;
  }
  Expr cond = to_expr(cond_value, cond_at, "the condition of 'if'");
  if (context_ != Context::kKernelBody) {
    if (context_ == Context::kModule || context_ == Context::kGenerator) {
      fail(cond_at,
           "a compile-time `if` needs a constant condition, got `" + to_string(cond) + "`");
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
  out.push_back(
      located(if_tok, [&] { return IfNode::make(cond, then_case, else_case, loc_of(if_tok)); }));
}

void Parser::parse_with(std::vector<Stmt>& out) {
  const Token with_tok = cur_->next();
  const Token at = cur_->peek();
  std::string dotted;
  if (at.kind == TokenKind::kName) read_dotted(dotted);
  std::string norm = normalize(dotted);
  if (auto why = refusal_of(norm)) fail(at, *why);
  if (norm == "T.ws" && cur_->at_op("(")) {
    // Warp specialisation: the body runs in the threads of the named warpgroups.
    require_kernel_body(at, "with T.ws(...)");
    CallArgs call = parse_call_args(norm, at);
    Expr cond = warp_group_condition(call);
    int saved = ws_first_thread_;
    ws_first_thread_ = 128 * static_cast<int>(arg_int(call, call.args[0], "warp_group", 0, 7));
    Stmt body = parse_suite(Context::kKernelBody);
    ws_first_thread_ = saved;
    out.push_back(
        located(with_tok, [&] { return IfNode::make(cond, body, Stmt(), loc_of(with_tok)); }));
    return;
  }
  if (norm != "T.Kernel" || !cur_->at_op("(")) {
    fail(at,
         "only `with T.Kernel(grid..., threads=N) as (bx, by):` is supported as a with "
         "statement");
  }
  if (context_ == Context::kKernelBody) {
    fail(with_tok, "kernel '" + kernel_name_ +
                       "': a T.Kernel launch inside another; launches run one after another: "
                       "close the first `with T.Kernel(...)` block before opening the next");
  }
  if (context_ != Context::kPreLaunch && context_ != Context::kPostLaunch) {
    fail(with_tok,
         "`with T.Kernel(...)` belongs in the body of the kernel function "
         "(@T.prim_func)");
  }
  CallArgs call = parse_call_args(norm, at);
  std::vector<Expr> grid;
  std::vector<int> thread_dims{128};
  for (const Arg& a : call.args) {
    if (a.keyword.empty()) {
      grid.push_back(arg_expr(call, a, "grid extent"));
    } else if (a.keyword == "threads") {
      thread_dims =
          a.value.kind == Value::Kind::kTuple
              ? arg_int_list(call, a, "threads")
              : std::vector<int>{static_cast<int>(arg_int(call, a, "threads", 1, 1 << 20))};
      if (thread_dims.empty() || thread_dims.size() > 3) {
        fail(a.value_at, "T.Kernel: threads= takes 1 to 3 extents (x, y, z), got " +
                             std::to_string(thread_dims.size()));
      }
    } else {
      fail(a.at, "T.Kernel has no argument '" + a.keyword +
                     "'; it takes the grid extents and "
                     "threads=N or threads=(x, y[, z])");
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
               (grid.size() == 1   ? "as bx"
                : grid.size() == 2 ? "as (bx, by)"
                                   : "as (bx, by, bz)"));
    }
  }
  static const char* kDefaultNames[] = {"bx", "by", "bz"};
  node_.grid = grid;
  node_.thread_dims = thread_dims;  // Kernel::make sets threads to their product
  node_.block_vars.clear();
  node_.thread_var = Var();  // each launch has its own thread index
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
  if (!hoisted_allocs_.empty()) {
    // Buffers the front end adds (a fragment's shared staging tile for T.cumsum) live for the
    // whole kernel, allocated before its first statement.
    std::vector<Stmt> body = std::move(hoisted_allocs_);
    body.push_back(node_.body);
    node_.body = SeqNode::make(std::move(body));
    hoisted_allocs_.clear();
  }
  std::swap(scope_, scope);
  context_ = Context::kPostLaunch;
  launch_nodes_.push_back(node_);
  launch_nodes_.back().loc = loc_of(at);
  (void)out;
}

void Parser::parse_return() {
  const Token at = cur_->next();
  bool has_value = !at_terminator();
  if (context_ == Context::kGenerator) {
    if (!has_value) fail(at, "the enclosing def returns the kernel function it defines");
    const Token value_at = cur_->peek();
    Value v = parse_testlist();
    if (v.kind != Value::Kind::kKernel || !v.kernel.defined()) {
      fail(value_at, "the enclosing def returns the kernel function it defines ('" +
                         (kernel_name_.empty() ? std::string("main") : kernel_name_) + "'), got " +
                         v.describe());
    }
    generator_result_ = v;
  } else if (context_ == Context::kModule) {
    fail(at, "'return' outside a function");
  } else if (has_value && declared_ &&
             (context_ == Context::kPreLaunch || context_ == Context::kPostLaunch)) {
    const Token value_at = cur_->peek();
    return_outputs(parse_testlist(), value_at);
  } else if (has_value) {
    fail(at,
         "a kernel or T.macro returns nothing here; T.macro helpers that return a value are "
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
  const char* kNoEffect =
      "this line has no effect: a statement is an assignment, a call of a "
      "T.* operator or a T.macro, a loop, an if or a with T.Kernel(...)";
  if (at.kind != TokenKind::kName) fail(at, kNoEffect);
  size_t start = cur_->position();
  std::string dotted;
  std::vector<Token> parts = read_dotted(dotted);
  if (!cur_->at_op("(")) {
    if (!lookup(parts[0].text)) unknown_name(parts[0].text, parts[0]);
    fail(at, kNoEffect);
  }
  std::string norm = normalize(dotted);
  if (auto why = refusal_of(norm)) fail(at, *why);
  if (norm == "T.annotate_layout") return parse_annotate_layout(at, out);
  if (norm.rfind("T.annotate_", 0) == 0) {
    fail(at, norm +
                 " is not supported; of the annotations, Tessel's IR has "
                 "T.annotate_layout({buffer: layout, ...})");
  }
  const Binding* b = lookup(parts[0].text);
  if (b && parts.size() == 1 && b->value.kind == Value::Kind::kMacro) {
    CallArgs call = parse_call_args(dotted, at);
    end_of_simple_statement();
    inline_macro(*b->value.macro, call, out);
    return;
  }
  if (b && parts.size() == 1 && b->value.kind == Value::Kind::kModule &&
      b->value.text.find('.') == std::string::npos && b->value.text != "T" &&
      b->value.text != "tilelang") {
    // A Python built-in (print(...)) as a statement: evaluated for its errors, no effect.
    cur_->rewind(start);
    parse_value();
    end_of_simple_statement();
    return;
  }
  CallArgs call = parse_call_args(norm, at);
  if (!at_terminator()) {
    fail(cur_->peek(), "unexpected " + TokenCursor::describe(cur_->peek()) + " after the call");
  }
  end_of_simple_statement();
  if (parse_operator(call, out)) return;
  if (norm.rfind("T.", 0) == 0) {
    fail(at, norm +
                 " is not a statement Tessel supports; the statements of T are T.copy, "
                 "T.gemm, T.fill, T.clear, T.reduce (and T.reduce_sum/max/min/abssum/absmax), "
                 "T.cumsum, T.cummax, T.atomic_add/max/min, T.sync_threads, T.use_swizzle, "
                 "T.annotate_layout, T.no_set_max_nreg and the thread-level instructions "
                 "(T.mma_m16n8k16_f16, T.ldmatrix_x4, T.cp_async_16, ...)");
  }
  if (!b) unknown_name(parts[0].text, parts[0]);
  fail(at, "'" + dotted + "' is " + b->value.describe() + " and cannot be called as a statement");
}

void Parser::inline_macro(const MacroDef& macro, const CallArgs& call, std::vector<Stmt>& out) {
  // Called in the kernel function's body outside a launch, a macro may open launches itself
  // (TileLang's split-KV files write each launch as a T.macro holding its `with T.Kernel`).
  const bool launches = context_ == Context::kPreLaunch || context_ == Context::kPostLaunch;
  if (!launches) require_kernel_body(call.at, "a call of T.macro '" + macro.name + "'");
  if (macro_depth_ >= kMaxMacroDepth) {
    fail(call.at, "T.macro calls nest more than " + std::to_string(kMaxMacroDepth) +
                      " deep (does '" + macro.name + "' call itself?)");
  }
  count_statement(call.at);
  size_t required = 0;
  while (required < macro.params.size() && !macro.defaults[required]) ++required;
  std::vector<const Arg*> bound = bind_args(call, macro.params, required);
  auto scope = std::make_shared<NameScope>();
  scope->parent = macro.closure.lock();
  internal_check(scope->parent != nullptr, "a T.macro called after its defining scope ended");
  for (size_t i = 0; i < macro.params.size(); ++i) {
    Value v = bound[i] ? bound[i]->value : *macro.defaults[i];
    scope->names[macro.params[i]] = Binding{std::move(v), macro.loc, false};
  }
  size_t resume = cur_->position();
  std::string note =
      "\n  (in T.macro '" + macro.name + "' called at " + loc_of(call.at).str() + ")";
  auto with_note = [&](const std::string& message) {
    return message.find(note) == std::string::npos ? message + note : message;
  };
  ++macro_depth_;
  const size_t launches_before = launch_nodes_.size();
  std::swap(scope_, scope);
  cur_->rewind(macro.body_position);
  try {
    Stmt body = parse_suite(launches ? context_ : Context::kKernelBody);
    if (!launches) out.push_back(body);
  } catch (const KernelFileError& e) {
    throw KernelFileError(with_note(e.what()));
  } catch (const LocatedError& e) {
    throw LocatedError(with_note(e.what()));
  }
  std::swap(scope_, scope);
  cur_->rewind(resume);
  --macro_depth_;
  if (launch_nodes_.size() > launches_before) context_ = Context::kPostLaunch;
}

}  // namespace tessel::kernel_parser_detail
