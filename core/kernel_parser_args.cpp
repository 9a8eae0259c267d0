// Calls in the kernel-file parser: the functions expressions may call (T.cast, T.ceildiv,
// T.dynamic, the packed-to-unsigned converter, ...), call arguments with keywords, and typed
// access to them with errors naming the argument and what it must be.
#include <cctype>
#include <limits>

#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

/// Calls of T that are statements (or declarations), never values.
bool is_statement_function(const std::string& norm) {
  static const char* kNames[] = {"T.copy",
                                 "T.gemm",
                                 "T.fill",
                                 "T.clear",
                                 "T.reduce_sum",
                                 "T.reduce_max",
                                 "T.reduce_min",
                                 "T.reduce_abssum",
                                 "T.reduce_absmax",
                                 "T.atomic_add",
                                 "T.atomic_max",
                                 "T.atomic_min",
                                 "T.sync_threads",
                                 "T.use_swizzle",
                                 "T.alloc_shared",
                                 "T.alloc_fragment",
                                 "T.alloc_local",
                                 "T.alloc_var",
                                 "T.alloc_global",
                                 "T.Kernel",
                                 "T.Tensor",
                                 "T.Buffer",
                                 "T.Parallel",
                                 "T.Pipelined",
                                 "T.serial",
                                 "T.unroll",
                                 "T.vectorized",
                                 "T.grid",
                                 "T.annotate_layout",
                                 "T.cumsum",
                                 "T.cummax",
                                 "T.barrier_wait",
                                 "T.barrier_arrive",
                                 "T.inc_max_nreg",
                                 "T.dec_max_nreg",
                                 "T.no_set_max_nreg",
                                 "T.disable_warp_group_reg_alloc",
                                 "T.tma_copy"};
  for (const char* n : kNames) {
    if (norm == n) return true;
  }
  return norm.rfind("T.", 0) == 0 && find_intrinsic(norm.substr(2)).has_value();
}

}  // namespace

// ---- Functions in expressions -------------------------------------------------------------------

std::optional<Expr> Parser::expression_call(const std::string& norm, const Token& at) {
  auto args = [&](std::vector<std::string> names, size_t required) {
    CallArgs call = parse_call_args(norm, at);
    std::vector<const Arg*> bound = bind_args(call, names, required);
    return std::make_pair(std::move(call), std::move(bound));
  };
  if (norm == "T.cast" || norm == "T.Cast") {
    bool tvm_order = norm == "T.Cast";
    auto [call, a] = args(tvm_order ? std::vector<std::string>{"dtype", "value"}
                                    : std::vector<std::string>{"value", "dtype"},
                          2);
    const Arg& value = *a[tvm_order ? 1 : 0];
    const Arg& dtype = *a[tvm_order ? 0 : 1];
    DataType t = arg_dtype(call, dtype, "dtype");
    Expr x = arg_expr(call, value, "value");
    return located(at, [&] { return cast(t, x); });
  }
  if (norm == "T.ceildiv") {
    auto [call, a] = args({"a", "b"}, 2);
    Expr x = arg_expr(call, *a[0], "a"), y = arg_expr(call, *a[1], "b");
    if (!x.dtype().is_integral() || !y.dtype().is_integral()) {
      fail(at, "T.ceildiv divides integers, got " + x.dtype().name() + " and " + y.dtype().name());
    }
    return located(at, [&] { return ceildiv(x, y); });
  }
  if (norm == "T.clamp") {
    // TileLang's clamp: T.min(T.max(x, lo), hi) (hi wins when lo > hi).
    auto [call, a] = args({"dst", "min_val", "max_val"}, 3);
    Expr x = arg_expr(call, *a[0], "dst"), lo = arg_expr(call, *a[1], "min_val"),
         hi = arg_expr(call, *a[2], "max_val");
    return located(at, [&] { return tessel::min(tessel::max(x, lo), hi); });
  }
  if (norm == "T.infinity" || norm == "T.max_value" || norm == "T.min_value") {
    auto [call, a] = args({"dtype"}, 1);
    DataType t = arg_dtype(call, *a[0], "dtype");
    if (norm == "T.infinity") {
      if (!t.is_float()) fail(a[0]->value_at, "T.infinity needs a float type, got " + t.name());
      return FloatImmNode::make(t, std::numeric_limits<double>::infinity());
    }
    return make_const(t, norm == "T.max_value" ? max_value(t) : min_value(t));
  }
  if (norm == "T.get_thread_binding") {
    auto [call, a] = args({"dim"}, 0);
    return thread_binding_of(at, a[0] ? static_cast<int>(arg_int(call, *a[0], "dim", 0, 2)) : 0);
  }
  if (norm == "T.get_block_binding") {
    auto [call, a] = args({"dim"}, 0);
    return block_binding_of(at, a[0] ? static_cast<int>(arg_int(call, *a[0], "dim", 0, 2)) : 0);
  }
  if (norm == "T.linear_thread_index") {
    args({}, 0);
    thread_binding_of(at, 0);
    return node_.thread_var;
  }
  if (norm == "T.dynamic" || norm == "T.symbolic") {
    auto [call, a] = args({"name", "dtype"}, 1);
    std::string name = arg_string(call, *a[0], "name");
    bool identifier = !name.empty() && !is_keyword(name) && name != "T" &&
                      (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char ch : name)
      identifier = identifier && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!identifier) {
      fail(a[0]->value_at, norm + ": \"" + name +
                               "\" is not a valid name for a symbolic dimension; "
                               "use an identifier such as \"N\"");
    }
    DataType t = a[1] ? arg_dtype(call, *a[1], "dtype") : DataType::i32();
    if (!t.is_int())
      fail(a[1]->value_at, norm + ": a symbolic dimension is an integer, got " + t.name());
    return dynamic_var(name, t);
  }
  if (is_statement_function(norm)) {
    fail(at, norm + " is a statement, not a value: write it on a line of its own" +
                 (norm.rfind("T.alloc_", 0) == 0 ? " as X = " + norm + "(...)" : std::string()));
  }
  return std::nullopt;
}

std::optional<Value> Parser::value_method(const Value& base, const Token& method,
                                          const CallArgs& call) {
  if (method.text == "astype") {
    // `x.astype(dtype)`: a cast, as T.cast(x, dtype).
    Value x = numeric(base, method);
    if (x.kind != Value::Kind::kExpr) {
      fail(method, base.describe() +
                       " has no method 'astype'; it casts a number or an "
                       "expression (A[i, j].astype(\"float32\"))");
    }
    auto a = bind_args(call, {"dtype"}, 1);
    DataType t = arg_dtype(call, *a[0], "dtype");
    return Value::of(located(method, [&] { return cast(t, x.expr); }));
  }
  return std::nullopt;
}

Value Parser::make_converter(const CallArgs& maker) const {
  auto a = bind_args(maker, {"storage_type", "storage_nbit"}, 0);
  std::string type = a[0] ? arg_string(maker, *a[0], "storage_type") : "uint";
  int64_t bits = a[1] ? arg_int(maker, *a[1], "storage_nbit", 8, 32) : 8;
  auto storage = DataType::parse(type + std::to_string(bits));
  if ((type != "int" && type != "uint") || (bits != 8 && bits != 16 && bits != 32) || !storage) {
    fail(maker.at,
         "_tir_packed_to_unsigned_convert packs into \"int\" or \"uint\" storage of 8, "
         "16 or 32 bits, got \"" +
             type + "\", " + std::to_string(bits));
  }
  Value conv;
  conv.kind = Value::Kind::kConverter;
  conv.storage = *storage;
  return conv;
}

Expr Parser::convert_call(const Value& converter, const Token& at) {
  CallArgs call = parse_call_args("_tir_packed_to_unsigned_convert(...)", at);
  auto a = bind_args(call, {"nbit", "val", "pos", "dtype"}, 4);
  DataType storage = converter.storage;
  int64_t nbit = arg_int(call, *a[0], "nbit", 1, storage.bits);
  Expr val = arg_expr(call, *a[1], "val");
  Expr pos = arg_expr(call, *a[2], "pos");
  DataType dtype = arg_dtype(call, *a[3], "dtype");
  if (val.dtype() != storage) {
    fail(a[1]->value_at,
         "_tir_packed_to_unsigned_convert(\"" + std::string(storage.is_int() ? "int" : "uint") +
             "\", " + std::to_string(storage.bits) + "): val is " + val.dtype().name() + " (`" +
             to_string(val) + "`) but the storage type is " + storage.name() +
             "; pass an element of the packed " + storage.name() + " buffer");
  }
  if (!pos.dtype().is_integral()) {
    fail(a[2]->value_at,
         "_tir_packed_to_unsigned_convert: pos must be an integer, got " + pos.dtype().name());
  }
  // ((val >> (pos * nbit)) & ((1 << nbit) - 1)) as `dtype`, the shift and mask in the storage
  // type: TVM's definition of the converter.
  return located(at, [&] {
    Expr shift = cast(storage, pos * make_int(nbit));
    Expr mask = IntImmNode::make(storage, (int64_t{1} << nbit) - 1);
    return cast(dtype, (val >> shift) & mask);
  });
}

// ---- Calls and arguments ----------------------------------------------------------------------

CallArgs Parser::parse_call_args(const std::string& callee, const Token& at) {
  CallArgs call{callee, at, {}};
  const Token open = cur_->expect_op("(", "after " + callee);
  bool keywords = false;
  while (!cur_->at_op(")")) {
    Arg arg;
    arg.at = cur_->peek();
    if (cur_->at_op("*") || cur_->at_op("**")) {
      fail(arg.at, "star arguments (*args, **kwargs) are not supported; pass arguments one by one");
    }
    if (arg.at.kind == TokenKind::kName && cur_->at_op("=", 1)) {
      arg.keyword = arg.at.text;
      cur_->next();
      cur_->next();
      keywords = true;
    } else if (keywords) {
      fail(arg.at, "a positional argument follows a keyword argument");
    }
    arg.value_at = cur_->peek();
    if (arg.keyword == "loop_layout" || arg.keyword == "annotations") {
      // Hints to TileLang's layout inference and code generation (a T.Fragment with lambdas,
      // a dict): skipped unread, as a callee that takes them ignores them.
      int depth = 0;
      while (!cur_->at_end() && !(depth == 0 && (cur_->at_op(",") || cur_->at_op(")")))) {
        if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
        cur_->next();
      }
    } else {
      arg.value = parse_value();
    }
    call.args.push_back(std::move(arg));
    if (!cur_->accept_op(",")) break;
  }
  if (!cur_->at_op(")")) unclosed(open, "of " + callee);
  cur_->next();
  return call;
}

std::vector<const Arg*> Parser::bind_args(const CallArgs& call,
                                          const std::vector<std::string>& names,
                                          size_t required) const {
  std::vector<const Arg*> bound(names.size(), nullptr);
  std::string list = names.empty() ? "no arguments" : join(names);
  size_t positional = 0, given = 0;
  for (const Arg& a : call.args) given += a.keyword.empty();
  for (const Arg& a : call.args) {
    size_t slot = 0;
    if (a.keyword.empty()) {
      if (positional >= names.size()) {
        fail(a.at, call.callee + " takes " + (required == names.size() ? "" : "at most ") +
                       plural(names.size(), "argument") + " (" + list + "), got " +
                       std::to_string(given));
      }
      slot = positional++;
    } else {
      auto it = std::find(names.begin(), names.end(), a.keyword);
      if (it == names.end()) {
        fail(a.at, call.callee + " has no argument '" + a.keyword + "'; its arguments are " + list);
      }
      slot = static_cast<size_t>(it - names.begin());
    }
    if (bound[slot]) fail(a.at, call.callee + " got argument '" + names[slot] + "' twice");
    bound[slot] = &a;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!bound[i]) {
      fail(call.at, call.callee + " needs argument '" + names[i] + "' (it takes " + list +
                        (required < names.size()
                             ? "; the first " + std::to_string(required) + " are required"
                             : std::string()) +
                        "), got " + plural(call.args.size(), "argument"));
    }
  }
  return bound;
}

void Parser::wrong_kind(const CallArgs& call, const Arg& arg, const std::string& param,
                        const std::string& wanted) const {
  fail(arg.value_at, call.callee + ": argument '" + param + "' must be " + wanted + ", got " +
                         arg.value.describe());
}

void Parser::refuse_view(const CallArgs& call, const Arg& arg) const {
  bool buffer = arg.value.kind == Value::Kind::kBuffer || arg.value.kind == Value::Kind::kRegion ||
                arg.value.kind == Value::Kind::kElement;
  if (buffer && view_base(arg.value.buffer)) {
    fail(arg.value_at, call.callee + ": '" + arg.value.buffer->name +
                           "' is a view (T.Tensor(shape, dtype, A.data)); views can be indexed "
                           "and copied with T.copy, other tile operators take the tensor "
                           "itself or a T.copy of the view into shared memory");
  }
}

Buffer Parser::arg_buffer(const CallArgs& call, const Arg& arg, const std::string& param) const {
  refuse_view(call, arg);
  if (arg.value.kind == Value::Kind::kBuffer) return arg.value.buffer;
  if (arg.value.kind == Value::Kind::kRegion && arg.value.region.is_full()) return arg.value.buffer;
  wrong_kind(call, arg, param, "a whole buffer (" + call.callee + " works on whole tiles)");
}

BufferRegion Parser::arg_region(const CallArgs& call, const Arg& arg,
                                const std::string& param) const {
  if (call.callee != "T.copy") refuse_view(call, arg);
  switch (arg.value.kind) {
    case Value::Kind::kBuffer:
      return BufferRegion::full(arg.value.buffer);
    case Value::Kind::kRegion:
    case Value::Kind::kElement:
      return arg.value.region;
    default:
      wrong_kind(call, arg, param, "a buffer or a region of one (A, A[i, j], A[0:16, :])");
  }
}

Expr Parser::arg_expr(const CallArgs& call, const Arg& arg, const std::string& param) const {
  const Value& v = arg.value;
  if (v.kind == Value::Kind::kExpr || v.kind == Value::Kind::kElement ||
      (v.kind == Value::Kind::kBuffer && var_buffers_.count(v.buffer.get()))) {
    return to_expr(v, arg.value_at, call.callee + ": argument '" + param + "'");
  }
  wrong_kind(call, arg, param, "a number or an expression");
}

int64_t Parser::arg_int(const CallArgs& call, const Arg& arg, const std::string& param, int64_t lo,
                        int64_t hi) const {
  auto c = arg.value.as_int();
  if (!c) wrong_kind(call, arg, param, "a constant integer");
  if (*c < lo || *c > hi) {
    fail(arg.value_at, call.callee + ": argument '" + param + "' must be between " +
                           std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                           std::to_string(*c));
  }
  return *c;
}

bool Parser::arg_bool(const CallArgs& call, const Arg& arg, const std::string& param) const {
  if (arg.value.kind == Value::Kind::kExpr) {
    auto c = as_const_int(arg.value.expr);
    if (c && (arg.value.expr.dtype().is_bool() || *c == 0 || *c == 1)) return *c != 0;
  }
  wrong_kind(call, arg, param, "True or False");
}

DataType Parser::arg_dtype(const CallArgs& call, const Arg& arg, const std::string& param) const {
  if (arg.value.kind != Value::Kind::kString) {
    wrong_kind(call, arg, param, "a data type such as \"float16\"");
  }
  auto t = DataType::parse(arg.value.text);
  if (!t) {
    fail(arg.value_at, call.callee + ": \"" + arg.value.text +
                           "\" is not a data type; use one of " + DataType::accepted_names());
  }
  return *t;
}

std::string Parser::arg_string(const CallArgs& call, const Arg& arg,
                               const std::string& param) const {
  if (arg.value.kind != Value::Kind::kString) wrong_kind(call, arg, param, "a string");
  return arg.value.text;
}

std::vector<int> Parser::arg_int_list(const CallArgs& call, const Arg& arg,
                                      const std::string& param) const {
  if (arg.value.kind != Value::Kind::kTuple) wrong_kind(call, arg, param, "a list of integers");
  std::vector<int> out;
  for (const Value& item : arg.value.items) {
    auto c = item.as_int();
    if (!c || *c < -1000000 || *c > 1000000) {
      wrong_kind(call, arg, param, "a list of constant integers");
    }
    out.push_back(static_cast<int>(*c));
  }
  return out;
}

std::vector<Expr> Parser::arg_shape(const CallArgs& call, const Arg& arg,
                                    const std::string& param) const {
  if (arg.value.kind == Value::Kind::kExpr) return {arg.value.expr};
  if (arg.value.kind != Value::Kind::kTuple) {
    wrong_kind(call, arg, param, "a shape: a tuple of integers such as (block_M, block_K)");
  }
  std::vector<Expr> shape;
  for (const Value& item : arg.value.items) {
    if (item.kind != Value::Kind::kExpr) {
      wrong_kind(call, arg, param, "a shape: a tuple of integers such as (block_M, block_K)");
    }
    shape.push_back(item.expr);
  }
  return shape;
}

}  // namespace tessel::kernel_parser_detail
