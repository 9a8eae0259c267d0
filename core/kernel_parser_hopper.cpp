// The kernel-file parser's warp-specialisation constructs (TileLang's sm90 surface): barrier
// allocation, TileLang's aliases of the mbarrier and register-count calls, and `with T.ws(g)`.
#include "core/intrinsics.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

/// Threads in a warpgroup (TileLang's T.ws and the PTX ISA's warpgroup: 4 warps of 32).
constexpr int64_t kWarpGroup = 128;

}  // namespace

Buffer Parser::parse_alloc_barrier(const CallArgs& call, const std::string& name,
                                   std::vector<Stmt>& out) {
  auto a = bind_args(call, {"arrive_count"}, 1);
  std::vector<Expr> counts;
  if (a[0]->value.kind == Value::Kind::kTuple) {
    for (size_t i = 0; i < a[0]->value.items.size(); ++i) {
      const Value& v = a[0]->value.items[i];
      if (v.kind != Value::Kind::kExpr || !v.expr.dtype().is_integral()) {
        fail(a[0]->value_at, "T.alloc_barrier: arrive_count item " + std::to_string(i) +
                                 " is not an integer; give one arrival count per barrier");
      }
      counts.push_back(v.expr);
    }
  } else {
    counts.push_back(arg_expr(call, *a[0], "arrive_count"));
  }
  if (counts.empty()) {
    fail(a[0]->value_at,
         "T.alloc_barrier: the list of arrival counts is empty; give one per "
         "barrier (T.alloc_barrier([128, 128]))");
  }
  for (const Expr& c : counts) {
    std::optional<int64_t> n = as_const_int(c);
    if (n && (*n < 1 || *n >= (int64_t{1} << 20))) {
      fail(a[0]->value_at, "T.alloc_barrier: arrive_count " + std::to_string(*n) +
                               " is out of range; a phase completes after 1 to 2^20 - 1 "
                               "arrivals (PTX ISA mbarrier.init)");
    }
  }
  const SourceLoc loc = loc_of(call.at);
  Buffer b = located(call.at, [&] {
    return BufferNode::make(name, {make_int(static_cast<int64_t>(counts.size()))}, DataType::i64(),
                            Scope::kShared, loc);
  });
  out.push_back(located(call.at, [&] { return AllocNode::make(b, Expr(), false, loc); }));
  // Thread 0 initialises every barrier; the others wait at a block barrier before using them.
  thread_binding_of(call.at, 0);  // makes sure the block has its thread index
  std::vector<Stmt> inits;
  for (size_t i = 0; i < counts.size(); ++i) {
    std::vector<IntrinsicArg> args = {IntrinsicArg{b, {make_int(static_cast<int64_t>(i))}, Expr()},
                                      IntrinsicArg{Buffer(), {}, counts[i]}};
    inits.push_back(located(call.at, [&] {
      return IntrinsicCallNode::make(IntrinsicId::kMbarrierInit, std::move(args), loc);
    }));
  }
  Expr first = Expr(node_.thread_var) == make_int(0);
  out.push_back(located(
      call.at, [&] { return IfNode::make(first, SeqNode::make(std::move(inits)), Stmt(), loc); }));
  out.push_back(located(call.at, [&] { return BarrierNode::make(loc); }));
  return b;
}

bool Parser::parse_hopper_alias(const CallArgs& call, std::vector<Stmt>& out) {
  const std::string& op = call.callee;
  auto start = [&] {
    require_kernel_body(call.at, op);
    count_statement(call.at);
  };
  if (op == "T.inc_max_nreg" || op == "T.dec_max_nreg") {
    start();
    auto a = bind_args(call, {"reg_count"}, 1);
    std::vector<IntrinsicArg> args = {
        IntrinsicArg{Buffer(), {}, arg_expr(call, *a[0], "reg_count")},
        IntrinsicArg{Buffer(), {}, make_int(op == "T.inc_max_nreg" ? 1 : 0)}};
    out.push_back(located(call.at, [&] {
      return IntrinsicCallNode::make(IntrinsicId::kSetMaxNreg, std::move(args), loc_of(call.at));
    }));
    return true;
  }
  if (op == "T.barrier_wait" || op == "T.barrier_arrive") {
    start();
    out.push_back(parse_intrinsic(call, op == "T.barrier_wait" ? IntrinsicId::kMbarrierWaitParity
                                                               : IntrinsicId::kMbarrierArrive));
    return true;
  }
  return false;
}

Expr Parser::warp_group_condition(const CallArgs& call) {
  if (call.args.empty()) {
    fail(call.at,
         "T.ws takes the warpgroup indices whose threads run the body: "
         "`with T.ws(0):` is threads 0-127, `with T.ws(1):` threads 128-255");
  }
  thread_binding_of(call.at, 0);  // makes sure the block has its thread index
  int64_t threads = 1;
  for (int d : node_.thread_dims) threads *= d;
  Expr cond;
  for (const Arg& a : call.args) {
    if (!a.keyword.empty()) fail(a.at, "T.ws takes warpgroup indices only, no keywords");
    int64_t g = arg_int(call, a, "warp_group", 0, 7);
    if ((g + 1) * kWarpGroup > threads) {
      fail(a.value_at, "T.ws(" + std::to_string(g) + ") names threads " +
                           std::to_string(g * kWarpGroup) + "-" +
                           std::to_string((g + 1) * kWarpGroup - 1) + ", but the block has " +
                           std::to_string(threads) + " threads; launch with threads=" +
                           std::to_string((g + 1) * kWarpGroup) + " or more");
    }
    Expr t = Expr(node_.thread_var);
    Expr in = t >= make_int(g * kWarpGroup) && t < make_int((g + 1) * kWarpGroup);
    cond = cond.defined() ? (cond || in) : in;
  }
  return cond;
}

}  // namespace tessel::kernel_parser_detail
