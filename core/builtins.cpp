// The built-in scalar functions and warp shuffles: names, arity and result types.
#include "core/error.h"
#include "core/expr.h"

namespace tessel {

const char* builtin_name(Builtin op) {
  switch (op) {
#define TESSEL_NAME_(id, name) \
  case Builtin::id:            \
    return name;
    TESSEL_BUILTINS(TESSEL_NAME_)
#undef TESSEL_NAME_
  }
  return "?";
}

bool is_shuffle(Builtin op) {
  return op == Builtin::kShflXor || op == Builtin::kShflDown || op == Builtin::kShflUp;
}

Expr CallNode::make(Builtin op, std::vector<Expr> args) {
  size_t arity = (op == Builtin::kPow || is_shuffle(op)) ? 2 : 1;
  std::string name = std::string("T.") + builtin_name(op);
  if (args.size() != arity) {
    user_error(name + " takes " + std::to_string(arity) + " argument" + (arity > 1 ? "s" : "") +
               ", got " + std::to_string(args.size()));
  }
  for (const Expr& a : args) internal_check(a.defined(), "undefined argument of a builtin call");
  DataType type = args[0].dtype();
  if (is_shuffle(op)) {
    if (!args[1].dtype().is_integral()) {
      user_error(name + ": the lane offset/mask must be an integer, got " +
                 args[1].dtype().name());
    }
  } else if (op == Builtin::kAbs) {
    // abs keeps integer types.
  } else if (!type.is_float()) {
    type = DataType::f32();
    for (Expr& a : args) a = cast(type, a);
  } else if (op == Builtin::kPow) {
    args[1] = cast(type, args[1]);
  }
  return Expr(std::make_shared<const CallNode>(type, op, std::move(args)));
}

}  // namespace tessel
