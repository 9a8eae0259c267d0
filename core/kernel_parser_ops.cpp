// Tile operators, allocations and thread-level calls of the kernel-file parser: each reads its
// arguments as TileLang spells them and builds IR through the operator's own make().
#include <algorithm>
#include <cstdio>
#include <set>

#include "core/intrinsics.h"
#include "core/kernel_parser_detail.h"
#include "core/op_annotate_layout.h"
#include "core/op_copy.h"
#include "core/op_cumsum.h"
#include "core/op_fill.h"

namespace tessel::kernel_parser_detail {

namespace {

std::optional<ReduceKind> reduce_kind(const std::string& name) {
  if (name == "T.reduce_sum") return ReduceKind::kSum;
  if (name == "T.reduce_max") return ReduceKind::kMax;
  if (name == "T.reduce_min") return ReduceKind::kMin;
  if (name == "T.reduce_abssum") return ReduceKind::kAbsSum;
  if (name == "T.reduce_absmax") return ReduceKind::kAbsMax;
  return std::nullopt;
}

std::optional<AtomicKind> atomic_kind(const std::string& name) {
  if (name == "T.atomic_add") return AtomicKind::kAdd;
  if (name == "T.atomic_max") return AtomicKind::kMax;
  if (name == "T.atomic_min") return AtomicKind::kMin;
  return std::nullopt;
}

}  // namespace

bool Parser::parse_operator(const CallArgs& call, std::vector<Stmt>& out) {
  const std::string& op = call.callee;
  SourceLoc loc = loc_of(call.at);
  auto emit_op = [&](const std::function<TileOpRef()>& make) {
    out.push_back(located(call.at, [&] { return TileOpCallNode::make(make()); }));
  };
  auto start = [&] {
    require_kernel_body(call.at, op);
    count_statement(call.at);
  };
  if (op == "T.copy") {
    start();
    auto a = bind_args(call,
                       {"src", "dst", "coalesced_width", "disable_tma", "eviction_policy",
                        "annotations", "loop_layout"},
                       2);
    BufferRegion src = arg_region(call, *a[0], "src"), dst = arg_region(call, *a[1], "dst");
    // Hints to TileLang's code generation that do not change what is copied: the vector width
    // (Tessel picks widths itself and proves them aligned), TMA, the L2 eviction policy.
    if (a[2]) arg_int(call, *a[2], "coalesced_width", 1, 64);
    if (a[3]) arg_bool(call, *a[3], "disable_tma");
    if (a[4]) {
      std::string policy = arg_string(call, *a[4], "eviction_policy");
      if (policy != "evict_normal" && policy != "evict_first" && policy != "evict_last") {
        fail(a[4]->value_at,
             "T.copy: eviction_policy is \"evict_normal\", \"evict_first\" or "
             "\"evict_last\", got \"" +
                 policy + "\"");
      }
    }
    if (view_base(src.buffer) || view_base(dst.buffer)) {
      out.push_back(view_copy(call, src, dst));
      return true;
    }
    emit_op([&] { return CopyOp::make(src, dst, loc); });
    return true;
  }
  if (op == "T.gemm") {
    start();
    auto a =
        bind_args(call, {"A", "B", "C", "transpose_A", "transpose_B", "policy", "clear_accum"}, 3);
    Buffer A = arg_buffer(call, *a[0], "A"), B = arg_buffer(call, *a[1], "B"),
           C = arg_buffer(call, *a[2], "C");
    GemmOptions options;
    if (a[3]) options.transpose_A = arg_bool(call, *a[3], "transpose_A");
    if (a[4]) options.transpose_B = arg_bool(call, *a[4], "transpose_B");
    if (a[5]) {
      if (a[5]->value.kind != Value::Kind::kPolicy) {
        wrong_kind(call, *a[5], "policy", "T.GemmWarpPolicy.Square, FullRow or FullCol");
      }
      options.policy = a[5]->value.policy;
    }
    if (a[6]) options.clear_accum = arg_bool(call, *a[6], "clear_accum");
    emit_op([&] { return GemmOp::make(A, B, C, options, loc); });
    return true;
  }
  if (auto kind = reduce_kind(op); kind || op == "T.reduce") {
    // T.reduce(buffer, out, reduce_type, dim, clear) names the kind as a string.
    start();
    bool generic = op == "T.reduce";
    auto a = generic ? bind_args(call, {"buffer", "out", "reduce_type", "dim", "clear"}, 5)
                     : bind_args(call, {"buffer", "out", "dim", "clear"}, 2);
    if (generic) {
      std::string type = arg_string(call, *a[2], "reduce_type");
      kind = reduce_kind("T.reduce_" + type);
      if (!kind) {
        fail(a[2]->value_at, "T.reduce: reduce_type \"" + type +
                                 "\" is not supported; Tessel reduces with \"sum\", \"max\", "
                                 "\"min\", \"abssum\" and \"absmax\"");
      }
      a.erase(a.begin() + 2);
    }
    Buffer src = arg_buffer(call, *a[0], "buffer"), dst = arg_buffer(call, *a[1], "out");
    int64_t dim = a[2] ? arg_int(call, *a[2], "dim", -8, 8) : -1;
    // ReduceOp::make reads a negative dim Python-style (-1 is the last) and checks the range.
    bool clear = a[3] ? arg_bool(call, *a[3], "clear") : true;
    emit_op([&] { return ReduceOp::make(*kind, src, dst, static_cast<int>(dim), clear, loc); });
    return true;
  }
  if (auto kind = atomic_kind(op)) {
    start();
    auto a = bind_args(call, {"dst", "value", "memory_order", "return_prev", "use_tma"}, 2);
    BufferRegion dst = arg_region(call, *a[0], "dst");
    const Value& v = a[1]->value;
    if (a[2] && a[2]->value.kind != Value::Kind::kNone) {
      // The ordering of the atomic against the thread's other memory accesses. A kernel here
      // cannot read an atomic's result (no return_prev, no atomic loads), so no race-free
      // kernel can tell orders apart: every level runs it as a relaxed atomic.
      std::string order = arg_string(call, *a[2], "memory_order");
      static const char* kOrders[] = {"relaxed", "consume", "acquire",
                                      "release", "acq_rel", "seq_cst"};
      if (std::find(std::begin(kOrders), std::end(kOrders), order) == std::end(kOrders)) {
        fail(a[2]->value_at, op +
                                 ": memory_order is \"relaxed\", \"consume\", \"acquire\", "
                                 "\"release\", \"acq_rel\" or \"seq_cst\", got \"" +
                                 order + "\"");
      }
    }
    if (a[3] && arg_bool(call, *a[3], "return_prev")) {
      fail(a[3]->value_at, op + "(..., return_prev=True) is not supported: an atomic here is a "
                                "statement; its previous value cannot be read");
    }
    if (a[4]) arg_bool(call, *a[4], "use_tma");  // sm90 TMA reduction: the same sums
    if (v.kind == Value::Kind::kBuffer && !var_buffers_.count(v.buffer.get())) {
      emit_op([&] { return AtomicOp::make_tile(*kind, dst, BufferRegion::full(v.buffer), loc); });
    } else if (v.kind == Value::Kind::kRegion) {
      emit_op([&] { return AtomicOp::make_tile(*kind, dst, v.region, loc); });
    } else {
      // A single element or an expression: the scalar form, as in the C++ builder.
      Expr value = arg_expr(call, *a[1], "value");
      emit_op([&] { return AtomicOp::make_scalar(*kind, dst, value, loc); });
    }
    return true;
  }
  if (op == "T.cumsum" || op == "T.cummax") {
    start();
    auto a = bind_args(call, {"src", "dst", "dim", "reverse"}, 1);
    BufferRegion src = arg_region(call, *a[0], "src");
    BufferRegion dst = a[1] && a[1]->value.kind != Value::Kind::kNone
                           ? arg_region(call, *a[1], "dst")
                           : src;  // in place, as TileLang's dst=None
    int64_t rank = static_cast<int64_t>(src.ranges.size());
    int64_t dim = a[2] ? arg_int(call, *a[2], "dim", -rank, rank - 1) : 0;
    if (dim < 0) dim += rank;  // Python-style: -1 is the last
    bool reverse = a[3] ? arg_bool(call, *a[3], "reverse") : false;
    ScanKind kind = op == "T.cumsum" ? ScanKind::kSum : ScanKind::kMax;
    if (src.buffer->scope != Scope::kFragment && dst.buffer->scope != Scope::kFragment) {
      emit_op([&] { return ScanOp::make(kind, src, dst, static_cast<int>(dim), reverse, loc); });
      return true;
    }
    // A fragment is scanned as TileLang does it: copied to a shared tile of its shape, scanned
    // there in place and copied to dst.
    std::vector<Expr> shape;
    for (const Range& r : src.ranges) shape.push_back(r.extent);
    std::string name = src.buffer->name + "_scan";
    while (lookup(name)) name += "_";
    Buffer tile = located(call.at, [&] {
      return BufferNode::make(name, shape, src.buffer->dtype, Scope::kShared, loc);
    });
    hoisted_allocs_.push_back(AllocNode::make(tile, Expr(), false, loc));
    bind(name, Value::of(tile), call.at, true);
    BufferRegion whole = BufferRegion::full(tile);
    emit_op([&] { return CopyOp::make(src, whole, loc); });
    emit_op([&] { return ScanOp::make(kind, whole, whole, static_cast<int>(dim), reverse, loc); });
    emit_op([&] { return CopyOp::make(whole, dst, loc); });
    return true;
  }
  if (op == "T.fill") {
    start();
    auto a = bind_args(call, {"buffer", "value"}, 2);
    BufferRegion dst = arg_region(call, *a[0], "buffer");
    Expr value = arg_expr(call, *a[1], "value");
    emit_op([&] { return FillOp::make(dst, value, false, loc); });
    return true;
  }
  if (op == "T.clear") {
    start();
    auto a = bind_args(call, {"buffer"}, 1);
    BufferRegion dst = arg_region(call, *a[0], "buffer");
    emit_op([&] { return FillOp::make(dst, make_int(0), true, loc); });
    return true;
  }
  if (op == "T.print") {
    // Each thread that runs it prints the value; warp_group_id / warp_id pick which warp prints
    // a whole buffer in TileLang, which Tessel does not print.
    start();
    auto a = bind_args(call, {"obj", "msg", "warp_group_id", "warp_id"}, 1);
    const Value& v = a[0]->value;
    if ((v.kind == Value::Kind::kBuffer && !var_buffers_.count(v.buffer.get())) ||
        v.kind == Value::Kind::kRegion) {
      fail(a[0]->value_at,
           "T.print of a whole buffer is not supported yet; print its elements "
           "(for i, j in T.Parallel(...): T.print(" +
               v.buffer->name + "[i, j], msg=\"" + v.buffer->name + "\"))");
    }
    Expr value = arg_expr(call, *a[0], "obj");
    std::string msg = a[1] ? arg_string(call, *a[1], "msg") : std::string();
    out.push_back(located(call.at, [&] { return PrintNode::make(value, msg, loc); }));
    return true;
  }
  if (op == "T.no_set_max_nreg" || op == "T.disable_warp_group_reg_alloc") {
    // Tells TileLang not to rebalance registers between warp groups (setmaxnreg, Hopper): Tessel
    // never emits setmaxnreg, so this is already so.
    start();
    bind_args(call, {}, 0);
    return true;
  }
  if (op == "T.sync_threads") {
    start();
    bind_args(call, {}, 0);
    out.push_back(BarrierNode::make(loc));
    return true;
  }
  if (op == "T.use_swizzle") {
    start();
    auto a = bind_args(call, {"panel_size", "order", "enable"}, 1);
    int64_t panel = arg_int(call, *a[0], "panel_size", 1, 1 << 20);
    bool column = false;
    if (a[1]) {
      std::string order = arg_string(call, *a[1], "order");
      if (order != "row" && order != "column") {
        fail(a[1]->value_at,
             "T.use_swizzle: order is \"row\" or \"column\", got \"" + order + "\"");
      }
      column = order == "column";
    }
    if (a[2] && !arg_bool(call, *a[2], "enable")) return true;
    out.push_back(located(
        call.at, [&] { return UseSwizzleNode::make(static_cast<int>(panel), column, loc); }));
    return true;
  }
  if (op == "T.im2col" || op == "T.c2d_im2col") {
    parse_im2col(call, out);
    return true;
  }
  if (parse_hopper_alias(call, out)) return true;
  if (op.rfind("T.", 0) == 0 && find_intrinsic(op.substr(2))) {
    start();
    out.push_back(parse_intrinsic(call));
    return true;
  }
  return false;
}

void Parser::parse_annotate_layout(const Token& at, std::vector<Stmt>& out) {
  // T.annotate_layout({A_shared: Layout([64, 64], lambda i, j: ...), F: Fragment(...)}): each
  // layout is a spec as `tessel layout` reads it, cut out of the source and parsed by the shared
  // layout-spec parser.
  require_kernel_body(at, "T.annotate_layout");
  count_statement(at);
  const Token open = cur_->expect_op("(", "after T.annotate_layout");
  const Token brace = cur_->peek();
  if (!cur_->accept_op("{")) {
    fail(brace, "T.annotate_layout takes one dict {buffer: layout, ...}, found " +
                    TokenCursor::describe(brace));
  }
  std::vector<AnnotateLayoutOp::Entry> entries;
  while (!cur_->at_op("}")) {
    const Token key_at = cur_->peek();
    Value key = parse_value();
    if (key.kind != Value::Kind::kBuffer) {
      fail(key_at, "T.annotate_layout: a key must be a buffer, got " + key.describe());
    }
    cur_->expect_op(":", "after the buffer in T.annotate_layout");
    const Token spec_at = cur_->peek();
    if (at_layout_maker()) {
      entries.emplace_back(key.buffer, parse_layout_maker());
      if (!cur_->accept_op(",")) break;
      continue;
    }
    // Names of the file's integer values (block_M, pad, ...) in the spec are replaced by their
    // values, except the lambda's parameters, names before '(' (layout makers) and attributes.
    int depth = 0;
    std::set<std::string> params;
    bool in_params = false, after_dot = false;
    std::vector<std::pair<size_t, std::pair<size_t, std::string>>> values;  // offset, (len, text)
    bool first_open = true;
    std::string last_name;
    while (!(depth == 0 && (cur_->at_op(",") || cur_->at_op("}"))) && !cur_->at_end()) {
      const Token& t = cur_->peek();
      if (t.kind == TokenKind::kName) last_name = t.text;
      // TileLang's own forms, which Tessel's layout specs do not take: say what to write.
      if (t.kind == TokenKind::kName && cur_->at_op("=", 1) &&
          (t.text == "forward_fn" || t.text == "forward_thread_fn" ||
           t.text == "forward_index_fn")) {
        fail(t, "T.annotate_layout: TileLang's T.Fragment/T.Layout with " + t.text +
                    "= (a map TileLang completes itself) is not supported; write the whole "
                    "map in Tessel's spec form, T.Fragment([64, 128], lambda i, j: (thread, "
                    "register)) or T.Layout([64, 64], lambda i, j: (offset,)), or leave the "
                    "buffer to layout inference (verify proves its choice)");
      }
      if (first_open && cur_->at_op("(")) {
        first_open = false;
        const Token& shape_at = cur_->peek(1);
        if ((last_name == "Fragment" || last_name == "Layout") && !cur_->at_op("[", 1)) {
          fail(shape_at,
               "T.annotate_layout: a layout spec's shape is a list of extents ([64, 128], "
               "[block_M, block_K]), got " +
                   TokenCursor::describe(shape_at) + "; write the extents out");
        }
      }
      if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
      if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
      if (t.kind == TokenKind::kName && t.text == "lambda") {
        in_params = true;
      } else if (in_params && cur_->at_op(":")) {
        in_params = false;
      } else if (t.kind == TokenKind::kName && in_params) {
        params.insert(t.text);
      } else if (t.kind == TokenKind::kName && !after_dot && !params.count(t.text) &&
                 !cur_->at_op("(", 1)) {
        const Binding* b = lookup(t.text);
        std::optional<int64_t> v = b ? b->value.as_int() : std::nullopt;
        if (v) values.push_back({offset_of(t), {t.text.size(), std::to_string(*v)}});
      }
      after_dot = cur_->at_op(".");
      cur_->next();
    }
    const Token& end = cur_->peek();
    size_t from = offset_of(spec_at), to = offset_of(end);
    if (cur_->at_end() || to <= from) fail(spec_at, "expected a layout after ':'");
    std::string spec = source_.substr(from, to - from);
    for (auto it = values.rbegin(); it != values.rend(); ++it) {
      spec.replace(it->first - from, it->second.first, it->second.second);
    }
    try {
      entries.emplace_back(key.buffer, parse_layout_spec(spec));
    } catch (const UserError& e) {
      // "column C: ..." / "line L, column C: ..." are relative to the spec: make them absolute.
      std::string m = e.what();
      m = m.substr(0, m.find('\n'));
      Token where = spec_at;
      int line = 1, column = 0;
      if (std::sscanf(m.c_str(), "line %d, column %d:", &line, &column) == 2 ||
          std::sscanf(m.c_str(), "column %d:", &column) == 1) {
        where.line = spec_at.line + line - 1;
        where.column = line == 1 ? spec_at.column + column - 1 : column;
        m = m.substr(m.find(": ") + 2);
      }
      fail(where, "T.annotate_layout: the layout of '" + key.buffer->name + "': " + m);
    }
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->accept_op("}")) unclosed(brace, "of T.annotate_layout");
  if (!cur_->accept_op(")")) unclosed(open, "of T.annotate_layout");
  end_of_simple_statement();
  SourceLoc loc = loc_of(at);
  out.push_back(
      located(at, [&] { return TileOpCallNode::make(AnnotateLayoutOp::make(entries, loc)); }));
}

size_t Parser::offset_of(const Token& t) const {
  size_t offset = 0;
  for (int line = 1; line < t.line && offset < source_.size(); ++line) {
    size_t nl = source_.find('\n', offset);
    if (nl == std::string::npos) return source_.size();
    offset = nl + 1;
  }
  return std::min(source_.size(), offset + static_cast<size_t>(std::max(t.column - 1, 0)));
}

Buffer Parser::parse_alloc(const CallArgs& call, const std::string& name, std::vector<Stmt>& out) {
  const std::string& op = call.callee;
  SourceLoc loc = loc_of(call.at);
  count_statement(call.at);
  if (op == "T.alloc_var") {
    auto a = bind_args(call, {"dtype", "init", "scope"}, 1);
    DataType dtype = arg_dtype(call, *a[0], "dtype");
    Expr init = a[1] ? arg_expr(call, *a[1], "init") : Expr();
    if (a[2] && arg_string(call, *a[2], "scope") != "local.var" &&
        arg_string(call, *a[2], "scope") != "local") {
      fail(a[2]->value_at, "T.alloc_var lives in \"local.var\"");
    }
    Buffer b = located(
        call.at, [&] { return BufferNode::make(name, {make_int(1)}, dtype, Scope::kLocal, loc); });
    out.push_back(located(call.at, [&] { return AllocNode::make(b, init, true, loc); }));
    var_buffers_.insert(b.get());
    return b;
  }
  // The shape: a tuple, or (as in the paper's Fig. 16) the extents as leading arguments.
  std::vector<Expr> shape;
  std::vector<const Arg*> rest;
  size_t k = 0;
  const std::vector<Arg>& args = call.args;
  if (!args.empty() && args[0].keyword.empty() && args[0].value.kind == Value::Kind::kExpr) {
    while (k < args.size() && args[k].keyword.empty() && args[k].value.kind == Value::Kind::kExpr) {
      shape.push_back(args[k++].value.expr);
    }
  }
  CallArgs remaining{call.callee, call.at, {}};
  if (!shape.empty()) {
    Arg shape_arg;
    shape_arg.keyword = "shape";
    shape_arg.at = shape_arg.value_at = args[0].at;
    shape_arg.value.kind = Value::Kind::kTuple;
    for (const Expr& e : shape) shape_arg.value.items.push_back(Value::of(e));
    remaining.args.push_back(shape_arg);
  }
  for (; k < args.size(); ++k) remaining.args.push_back(args[k]);
  auto a = bind_args(remaining, {"shape", "dtype", "scope"}, 1);
  shape = arg_shape(remaining, *a[0], "shape");
  Scope scope = op == "T.alloc_fragment" ? Scope::kFragment
                : op == "T.alloc_local"  ? Scope::kLocal
                                         : Scope::kShared;
  DataType dtype;
  if (a[1]) {
    dtype = arg_dtype(remaining, *a[1], "dtype");
  } else {
    // The paper writes T.alloc_shared(block_M, block_K): the dtype comes from the enclosing
    // def's `dtype` (`accum_dtype` for fragments).
    std::string fallback = scope == Scope::kFragment ? "accum_dtype" : "dtype";
    const Binding* b = lookup(fallback);
    std::optional<DataType> t;
    if (b && b->value.kind == Value::Kind::kString) t = DataType::parse(b->value.text);
    if (!t) {
      fail(call.at, op + " needs a dtype, e.g. " + op +
                        "((64, 64), \"float16\"); when it is left "
                        "out (as in the paper's Fig. 16) the dtype named `" +
                        fallback + "` is used, but no such string is defined");
    }
    dtype = *t;
  }
  if (a[2]) {
    std::string s = arg_string(remaining, *a[2], "scope");
    bool ok = (scope == Scope::kShared && (s == "shared" || s == "shared.dyn")) ||
              (scope == Scope::kFragment && s == "local.fragment") ||
              (scope == Scope::kLocal && s == "local");
    if (!ok) {
      fail(a[2]->value_at, op + ": scope \"" + s + "\" does not fit; " +
                               (scope == Scope::kShared     ? "use \"shared\" or \"shared.dyn\""
                                : scope == Scope::kFragment ? "fragments live in \"local.fragment\""
                                                            : "locals live in \"local\""));
    }
    if (s == "shared.dyn") scope = Scope::kSharedDyn;
  }
  Buffer b = located(call.at, [&] { return BufferNode::make(name, shape, dtype, scope, loc); });
  out.push_back(located(call.at, [&] { return AllocNode::make(b, Expr(), false, loc); }));
  return b;
}

Stmt Parser::parse_intrinsic(const CallArgs& call, std::optional<IntrinsicId> alias) {
  IntrinsicId id = alias ? *alias : *find_intrinsic(call.callee.substr(2));
  const IntrinsicInfo& info = intrinsic_info(id);
  std::vector<std::string> names;
  for (const IntrinsicOperand& o : info.operands) names.push_back(o.name);
  size_t required = names.size();
  bool cp_async = info.family == IntrinsicFamily::kCpAsync;
  if (cp_async) required = 2;  // src_size defaults to the bytes copied, as in the builder
  auto a = bind_args(call, names, required);
  std::vector<IntrinsicArg> args;
  for (size_t i = 0; i < names.size(); ++i) {
    const IntrinsicOperand& o = info.operands[i];
    if (!a[i]) {
      args.push_back(IntrinsicArg{Buffer(), {}, make_int(info.bytes)});
      continue;
    }
    if (!is_element_operand(o.kind)) {
      args.push_back(IntrinsicArg{Buffer(), {}, arg_expr(call, *a[i], o.name)});
      continue;
    }
    if (info.sync && a[i]->value.kind == Value::Kind::kBuffer &&
        a[i]->value.buffer->shape.size() == 1 && as_const_int(a[i]->value.buffer->shape[0]) == 1) {
      // TileLang passes a one-barrier buffer itself (T.alloc_barrier(128)) for its element.
      args.push_back(IntrinsicArg{a[i]->value.buffer, {make_int(0)}, Expr()});
      continue;
    }
    if (a[i]->value.kind != Value::Kind::kElement) {
      wrong_kind(
          call, *a[i], o.name,
          "one element of a buffer (the lane's first register or address, e.g. " +
              std::string(o.kind == OperandKind::kRegisters ? "C_regs[0]" : "A_shared[r, c]") +
              ")");
    }
    args.push_back(IntrinsicArg{a[i]->value.buffer, a[i]->value.indices, Expr()});
  }
  return located(call.at, [&] { return IntrinsicCallNode::make(id, args, loc_of(call.at)); });
}

}  // namespace tessel::kernel_parser_detail
