// Calls in the kernel parser's evaluator: what a callee value does when called (TileLang's
// functions, casts by dtype name, converters), the Python built-ins and library functions real
// kernel files use to compute constants (float, int, len, min, max, math.*, tilelang.cdiv,
// DataType(dtype).bits), and methods of strings.
#include <cmath>
#include <limits>

#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

/// The Python built-ins bound in every kernel file (shadowable like any name).
const char* const kPythonBuiltins[] = {"float", "int",   "bool",  "str",  "len",   "min",  "max",
                                       "abs",   "round", "tuple", "list", "range", "print"};

/// The last component of a dotted name.
std::string last_part(const std::string& dotted) {
  size_t dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

bool is_cdiv(const std::string& name) {
  return name == "tilelang.cdiv" || name == "tilelang.math.cdiv" || name == "T.cdiv" ||
         name == "tilelang.utils.cdiv";
}

/// `DataType` imported from tvm or tilelang (tvm.DataType, tvm.runtime.DataType, T.dtype).
bool is_datatype(const std::string& name) {
  return (last_part(name) == "DataType" &&
          (name.rfind("tvm.", 0) == 0 || name.rfind("tilelang.", 0) == 0)) ||
         name == "T.dtype";
}

}  // namespace

void bind_python_builtins(NameScope& scope) {
  for (const char* name : kPythonBuiltins) {
    scope.names[name] = Binding{Value::module(name), {}, false};
  }
}

Value Parser::eval_call(const Value& callee, const Token& at) {
  using K = Value::Kind;
  if (no_eval_) {
    parse_call_args("the call", at);
    return Value::none();
  }
  switch (callee.kind) {
    case K::kConvertMaker:
      return make_converter(parse_call_args("_tir_packed_to_unsigned_convert", at));
    case K::kConverter:
      return Value::of(convert_call(callee, at));
    case K::kMacro:
      fail(at, "T.macro '" + callee.macro->name + "' is a statement: call it on a line of its own");
    case K::kString: {
      auto dtype = DataType::parse(callee.text);
      if (!dtype) fail(at, callee.describe() + " cannot be called");
      CallArgs call = parse_call_args(callee.text, at);
      auto a = bind_args(call, {"value"}, 1);
      Expr x = arg_expr(call, *a[0], "value");
      return Value::of(located(at, [&] { return cast(*dtype, x); }));
    }
    case K::kModule:
      return call_function(callee.text, at);
    case K::kKernel:
      fail(at, "'" + callee.text +
                   "' makes a kernel; calling it from kernel code is not supported (Tessel reads "
                   "one kernel function at a time: pick it with --kernel)");
    case K::kHost:
      fail(at, "cannot call " + callee.text +
                   ": Tessel does not run host code; the helpers of kernels are @T.macro "
                   "functions, which it inlines");
    default:
      fail(at, callee.describe() + " cannot be called");
  }
}

Value Parser::call_function(const std::string& name, const Token& at) {
  if (name == "T.get_thread_bindings" || name == "T.get_block_bindings") {
    bind_args(parse_call_args(name, at), {}, 0);
    Value all;
    all.kind = Value::Kind::kTuple;
    for (int d = 0; d < 3; ++d) {
      all.items.push_back(Value::of(name == "T.get_thread_bindings" ? thread_binding_of(at, d)
                                                                    : block_binding_of(at, d)));
    }
    return all;
  }
  if (auto why = refusal_of(name)) fail(at, *why);
  if ((name == "T.Tensor" || name == "T.Buffer") && context_ == Context::kKernelBody) {
    return make_view(parse_call_args(name, at));
  }
  if ((name == "T.Tensor" || name == "T.Buffer") && context_ == Context::kPostLaunch) {
    fail(at, name +
                 "(shape, dtype, buf.data) as a value is a view of another buffer's storage, "
                 "which Tessel supports inside the T.Kernel body only");
  }
  if (name == "T.const") return make_consts(parse_call_args(name, at));
  if (name == "T.empty") {
    fail(at,
         "T.empty(...) makes an output tensor: assign it to a name on a line of its own "
         "(C = T.empty((M, N), dtype)), before the T.Kernel launch");
  }
  if (auto e = expression_call(name, at)) return Value::of(*e);
  if (auto v = python_call(name, at)) return *v;
  if (name == "T.alloc_global") {
    fail(at,
         "T.alloc_global(shape, dtype) makes global scratch: assign it to a name on a line of its "
         "own in the kernel function's body, before the T.Kernel launch that uses it");
  }
  if (name.rfind("T.alloc_", 0) == 0) {
    fail(at, name +
                 " is not supported; the allocations Tessel has are T.alloc_shared, "
                 "T.alloc_fragment, T.alloc_local and T.alloc_var");
  }
  if (name.rfind("T.", 0) == 0 && !is_builtin_function(name)) {
    fail(at, name +
                 " is not a function Tessel supports in expressions; the functions are T.cast, "
                 "T.ceildiv, T.min, T.max, T.clamp, T.if_then_else, T.floordiv, T.floormod, "
                 "T.infinity, T.max_value, T.min_value, T.exp, T.exp2, T.log, T.sqrt, T.rsqrt, "
                 "T.abs and the other math functions, and casts such as T.float16(x)");
  }
  CallArgs call = parse_call_args(name, at);
  std::vector<Expr> args;
  for (const Arg& a : call.args) {
    if (!a.keyword.empty()) {
      fail(a.at, name + " takes no keyword arguments here ('" + a.keyword + "')");
    }
    args.push_back(arg_expr(call, a, "argument " + std::to_string(args.size() + 1)));
  }
  std::optional<Expr> result;
  try {
    result = call_builtin_function(name, args);
  } catch (const UserError& e) {
    fail(at, e.what());
  }
  if (result) return Value::of(*result);
  size_t dot = name.find('.');
  if (dot != std::string::npos && name.rfind("tilelang", 0) != 0) {
    fail(at, "'" + name + "' belongs to host code (module " + name.substr(0, dot) +
                 "), which Tessel does not run");
  }
  fail(at, "unknown function '" + name + "'");
}

std::optional<Value> Parser::python_call(const std::string& name, const Token& at) {
  const bool builtin = std::find(std::begin(kPythonBuiltins), std::end(kPythonBuiltins), name) !=
                       std::end(kPythonBuiltins);
  bool math = name.rfind("math.", 0) == 0;
  if (!builtin && !math && !is_cdiv(name) && !is_datatype(name)) return std::nullopt;
  CallArgs call = parse_call_args(name, at);
  auto positional = [&](size_t lo, size_t hi) {
    for (const Arg& a : call.args) {
      if (!a.keyword.empty()) fail(a.at, name + "() takes no keyword argument '" + a.keyword + "'");
    }
    if (call.args.size() < lo || call.args.size() > hi) {
      fail(at,
           name + "() takes " +
               (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
               " argument" + (hi == 1 ? "" : "s") + ", got " + std::to_string(call.args.size()));
    }
  };
  auto number = [&](size_t i) { return numeric(call.args[i].value, call.args[i].value_at); };
  auto constant_float = [&](size_t i) -> std::optional<double> {
    Value v = number(i);
    if (auto c = py_int(v)) return static_cast<double>(*c);
    if (py_float(v)) return v.expr.as<FloatImmNode>()->value;
    return std::nullopt;
  };
  if (name == "print") return Value::none();  // host output: no effect on the kernel
  if (name == "float" || name == "int" || name == "bool") {
    positional(0, 1);
    if (call.args.empty()) return name == "float" ? py_float_value(0) : py_bool(false);
    Value v = number(0);
    if (name == "bool") {
      auto t = py_truth(v);
      if (!t)
        return Value::of(located(at, [&] { return v.expr != make_const(v.expr.dtype(), 0); }));
      return py_bool(*t);
    }
    if (v.kind == Value::Kind::kString) {
      const std::string& s = v.text;
      try {
        size_t used = 0;
        if (name == "int") {
          long long i = std::stoll(s, &used, 10);
          if (used == s.size()) return Value::of(make_int(i));
        } else {
          double d = std::stod(s, &used);
          if (used == s.size()) return py_float_value(d);
        }
      } catch (const std::exception&) {
      }
      fail(call.args[0].value_at, name + "(): \"" + s + "\" is not a number");
    }
    if (auto c = py_int(v))
      return name == "float" ? py_float_value(static_cast<double>(*c)) : Value::of(make_int(*c));
    if (py_float(v)) {
      double d = v.expr.as<FloatImmNode>()->value;
      if (name == "float") return v;
      if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) {
        fail(call.args[0].value_at, "int(): " + to_string(v.expr) + " has no 64-bit integer value");
      }
      return Value::of(make_int(static_cast<int64_t>(std::trunc(d))));
    }
    if (v.kind == Value::Kind::kExpr) {
      DataType t = name == "float" ? DataType::f32() : DataType::i32();
      return Value::of(located(at, [&] { return cast(t, v.expr); }));
    }
    fail(call.args[0].value_at, name + "() needs a number or a string, got " + v.describe());
  }
  if (name == "str") {
    positional(1, 1);
    Value v = call.args[0].value;
    if (v.kind == Value::Kind::kString) return v;
    if (auto c = py_int(v)) {
      if (v.expr.dtype().is_bool()) return Value::string(*c ? "True" : "False");
      return Value::string(std::to_string(*c));
    }
    if (v.kind == Value::Kind::kNone) return Value::string("None");
    fail(call.args[0].value_at, "str() of " + v.describe() + " is not supported");
  }
  if (name == "len") {
    positional(1, 1);
    const Value& v = call.args[0].value;
    if (v.kind == Value::Kind::kTuple)
      return Value::of(make_int(static_cast<int64_t>(v.items.size())));
    if (v.kind == Value::Kind::kString)
      return Value::of(make_int(static_cast<int64_t>(v.text.size())));
    if (v.kind == Value::Kind::kBuffer) {
      if (v.buffer->ndim() == 0) fail(call.args[0].value_at, "len() of a 0-d buffer");
      return Value::of(v.buffer->shape[0]);
    }
    fail(call.args[0].value_at, "len() needs a tuple, a list or a string, got " + v.describe());
  }
  if (name == "tuple" || name == "list") {
    positional(0, 1);
    Value r;
    r.kind = Value::Kind::kTuple;
    r.is_list = name == "list";
    if (call.args.empty()) return r;
    const Value& v = call.args[0].value;
    if (v.kind == Value::Kind::kTuple) {
      r.items = v.items;
      return r;
    }
    if (v.kind == Value::Kind::kString) {
      for (char ch : v.text) r.items.push_back(Value::string(std::string(1, ch)));
      return r;
    }
    fail(call.args[0].value_at, name + "() needs a tuple, a list or a string, got " + v.describe());
  }
  if (name == "range") {
    positional(1, 3);
    int64_t lo = 0, hi = 0, step = 1;
    std::vector<int64_t> v;
    for (size_t i = 0; i < call.args.size(); ++i) {
      auto c = py_int(number(i));
      if (!c)
        fail(call.args[i].value_at,
             "range() as a value needs constant integers; a loop is `for i in range(n):`");
      v.push_back(*c);
    }
    if (v.size() == 1) hi = v[0];
    if (v.size() >= 2) lo = v[0], hi = v[1];
    if (v.size() == 3) step = v[2];
    if (step == 0) fail(call.args[2].value_at, "range() step must not be zero");
    Value r;
    r.kind = Value::Kind::kTuple;
    r.is_list = true;
    for (int64_t k = lo; step > 0 ? k < hi : k > hi; k += step) {
      if (r.items.size() >= (1u << 16)) fail(at, "range() as a value is limited to 65536 items");
      r.items.push_back(Value::of(make_int(k)));
    }
    return r;
  }
  if (name == "min" || name == "max") {
    if (call.args.empty()) fail(at, name + "() needs at least one argument");
    std::vector<Value> items;
    if (call.args.size() == 1 && call.args[0].value.kind == Value::Kind::kTuple) {
      items = call.args[0].value.items;
    } else {
      for (size_t i = 0; i < call.args.size(); ++i) {
        if (!call.args[i].keyword.empty())
          fail(call.args[i].at, name + "(): keyword arguments are not supported");
        items.push_back(number(i));
      }
    }
    if (items.empty()) fail(at, name + "() of an empty sequence");
    Value best = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      const Value& x = items[i];
      Value less = located_syntax(at, [&] { return py_compare("<", x, best); });
      auto t = py_truth(less);
      if (t) {
        if (*t == (name == "min")) best = x;
        continue;
      }
      Expr a = to_expr(best, at, name + "()"), b = to_expr(x, at, name + "()");
      best = Value::of(
          located(at, [&] { return name == "min" ? tessel::min(a, b) : tessel::max(a, b); }));
    }
    return best;
  }
  if (name == "abs") {
    positional(1, 1);
    Value v = number(0);
    if (auto c = py_int(v)) {
      if (*c == std::numeric_limits<int64_t>::min()) fail(at, "abs() does not fit in 64 bits");
      return Value::of(make_int(*c < 0 ? -*c : *c));
    }
    if (py_float(v)) return py_float_value(std::fabs(v.expr.as<FloatImmNode>()->value));
    return Value::of(located(at, [&] { return tessel::abs(to_expr(v, at, "abs()")); }));
  }
  if (name == "round") {
    positional(1, 1);
    auto d = constant_float(0);
    if (!d) fail(call.args[0].value_at, "round() needs a constant number");
    return Value::of(make_int(static_cast<int64_t>(std::nearbyint(*d))));
  }
  if (is_cdiv(name)) {
    positional(2, 2);
    Value a = number(0), b = number(1);
    auto x = py_int(a), y = py_int(b);
    if (x && y) {
      if (*y == 0) fail(call.args[1].value_at, name + ": division by zero");
      return located_syntax(at, [&] {
        return py_negate(
            py_binary("//", py_negate(Value::of(make_int(*x))), Value::of(make_int(*y))));
      });
    }
    Expr ea = to_expr(a, call.args[0].value_at, name), eb = to_expr(b, call.args[1].value_at, name);
    return Value::of(located(at, [&] { return ceildiv(ea, eb); }));
  }
  if (is_datatype(name)) {
    positional(1, 1);
    const Arg& a = call.args[0];
    return Value::string(arg_dtype(call, a, "dtype").name());
  }
  // math.*: constants only (they compute compile-time values such as a softmax scale).
  std::string fn = name.substr(5);
  if (fn == "ceil" || fn == "floor" || fn == "sqrt" || fn == "log2" || fn == "log" || fn == "exp" ||
      fn == "log10" || fn == "isqrt" || fn == "trunc") {
    positional(1, 1);
    auto d = constant_float(0);
    if (!d) {
      fail(call.args[0].value_at, name + "() needs a constant number (use T." + fn +
                                      " for a value computed in the kernel)");
    }
    if ((fn == "sqrt" || fn == "isqrt") && *d < 0) fail(at, name + "() of a negative number");
    if ((fn == "log" || fn == "log2" || fn == "log10") && *d <= 0)
      fail(at, name + "() of a number that is not positive");
    if (fn == "ceil") return Value::of(make_int(static_cast<int64_t>(std::ceil(*d))));
    if (fn == "floor") return Value::of(make_int(static_cast<int64_t>(std::floor(*d))));
    if (fn == "trunc") return Value::of(make_int(static_cast<int64_t>(std::trunc(*d))));
    if (fn == "isqrt") return Value::of(make_int(static_cast<int64_t>(std::floor(std::sqrt(*d)))));
    double r = fn == "sqrt"    ? std::sqrt(*d)
               : fn == "log2"  ? std::log2(*d)
               : fn == "log"   ? std::log(*d)
               : fn == "log10" ? std::log10(*d)
                               : std::exp(*d);
    return py_float_value(r);
  }
  if (fn == "pow") {
    positional(2, 2);
    auto x = constant_float(0), y = constant_float(1);
    if (!x || !y) fail(at, "math.pow() needs constant numbers");
    return py_float_value(std::pow(*x, *y));
  }
  fail(at, name +
               " is not a function Tessel evaluates; of the math module it has ceil, floor, "
               "trunc, sqrt, isqrt, log, log2, log10, exp, pow, pi, e and inf");
}

Value Parser::eval_method(const Value& base, const Token& method) {
  const Token at = cur_->peek();
  CallArgs call = parse_call_args(method.text, at);
  if (no_eval_) return Value::none();
  if (auto v = value_method(base, method, call)) return *v;
  const std::string& m = method.text;
  if (base.kind == Value::Kind::kString) {
    auto one_string = [&](const std::string& what) {
      if (call.args.size() != 1 || !call.args[0].keyword.empty() ||
          call.args[0].value.kind != Value::Kind::kString) {
        fail(at, "str." + m + "() takes " + what);
      }
      return call.args[0].value.text;
    };
    if (m == "join") {
      if (call.args.size() != 1 || call.args[0].value.kind != Value::Kind::kTuple) {
        fail(at, "str.join() takes one list or tuple of strings");
      }
      std::string s;
      for (size_t i = 0; i < call.args[0].value.items.size(); ++i) {
        const Value& item = call.args[0].value.items[i];
        if (item.kind != Value::Kind::kString) {
          fail(call.args[0].value_at, "str.join(): item " + std::to_string(i) + " is " +
                                          item.describe() + ", not a string");
        }
        s += (i ? base.text : "") + item.text;
      }
      return Value::string(s);
    }
    if (m == "startswith") return py_bool(base.text.rfind(one_string("one string"), 0) == 0);
    if (m == "endswith") {
      std::string suffix = one_string("one string");
      return py_bool(base.text.size() >= suffix.size() &&
                     base.text.compare(base.text.size() - suffix.size(), suffix.size(), suffix) ==
                         0);
    }
    if (m == "upper" || m == "lower") {
      if (!call.args.empty()) fail(at, "str." + m + "() takes no arguments");
      std::string s = base.text;
      for (char& ch : s) ch = static_cast<char>(m == "upper" ? std::toupper(ch) : std::tolower(ch));
      return Value::string(s);
    }
    if (m == "replace") {
      if (call.args.size() != 2 || call.args[0].value.kind != Value::Kind::kString ||
          call.args[1].value.kind != Value::Kind::kString || call.args[0].value.text.empty()) {
        fail(at, "str.replace() takes two strings, the first not empty");
      }
      std::string s, from = call.args[0].value.text, to = call.args[1].value.text;
      for (size_t p = 0; p < base.text.size();) {
        if (base.text.compare(p, from.size(), from) == 0) {
          s += to;
          p += from.size();
        } else {
          s += base.text[p++];
        }
      }
      return Value::string(s);
    }
    fail(method, "str." + m +
                     "() is not supported; strings have join, startswith, endswith, "
                     "upper, lower and replace");
  }
  if (base.kind == Value::Kind::kTuple && (m == "index" || m == "count")) {
    if (call.args.size() != 1) fail(at, m + "() takes one argument");
    int64_t found = -1, count = 0;
    for (size_t i = 0; i < base.items.size(); ++i) {
      auto eq =
          py_truth(located_syntax(at, [&] { return py_equal(base.items[i], call.args[0].value); }));
      if (!eq) fail(at, m + "() needs constant items");
      if (*eq) {
        ++count;
        if (found < 0) found = static_cast<int64_t>(i);
      }
    }
    if (m == "count") return Value::of(make_int(count));
    if (found < 0) fail(at, call.args[0].value.describe() + " is not in " + base.describe());
    return Value::of(make_int(found));
  }
  fail(method, base.describe() + " has no method '" + m + "' Tessel supports");
}

}  // namespace tessel::kernel_parser_detail
