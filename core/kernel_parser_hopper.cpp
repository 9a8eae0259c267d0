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
  if (op == "T.tma_copy") {
    start();
    parse_tma_copy(call, out);
    return true;
  }
  if (op == "T.tma_store_arrive") {
    start();
    bind_args(call, {}, 0);
    out.push_back(located(call.at, [&] {
      return IntrinsicCallNode::make(IntrinsicId::kTmaStoreArrive, {}, loc_of(call.at));
    }));
    return true;
  }
  if (op == "T.tma_store_wait") {
    // TileLang: tma_store_wait(count=0, read=True). Tessel always waits for the stores to
    // complete (cp.async.bulk.wait_group, without .read), which orders both their shared reads
    // and their global writes, so `read` changes nothing.
    start();
    auto a = bind_args(call, {"count", "read"}, 0);
    int64_t n = a[0] ? arg_int(call, *a[0], "count", 0, 63) : 0;
    if (a[1]) arg_bool(call, *a[1], "read");
    std::vector<IntrinsicArg> args = {IntrinsicArg{Buffer(), {}, make_int(n)}};
    out.push_back(located(call.at, [&] {
      return IntrinsicCallNode::make(IntrinsicId::kTmaStoreWait, std::move(args), loc_of(call.at));
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

void Parser::parse_tma_copy(const CallArgs& call, std::vector<Stmt>& out) {
  auto a = bind_args(call, {"src", "dst", "barrier", "eviction_policy", "annotations"}, 2);
  BufferRegion src = arg_region(call, *a[0], "src"), dst = arg_region(call, *a[1], "dst");
  auto is_shared = [](const BufferRegion& r) {
    return r.buffer->scope == Scope::kShared || r.buffer->scope == Scope::kSharedDyn;
  };
  const bool store = is_shared(src) && dst.buffer->scope == Scope::kGlobal;
  if (!store && !(src.buffer->scope == Scope::kGlobal && is_shared(dst))) {
    fail(call.at,
         "T.tma_copy copies a global region into shared memory (a TMA load) or a shared "
         "region into global memory (a TMA store); for other copies write T.copy");
  }
  if (!store && !a[2]) {
    fail(call.at,
         "T.tma_copy needs barrier=bar: the mbarrier the copy completes its bytes on "
         "(wait for it with T.barrier_wait(bar, parity))");
  }
  if (store && a[2]) {
    fail(a[2]->value_at,
         "T.tma_copy: a TMA store (shared to global) completes in the thread's bulk group, "
         "not on an mbarrier; drop barrier= and wait with T.tma_store_wait()");
  }
  // The global side fixes the box: its region's extents (or, for an origin, the shared
  // side's, right-aligned).
  const BufferRegion& global = store ? dst : src;
  const BufferRegion& shared = store ? src : dst;
  const Arg& global_arg = *a[store ? 1 : 0];
  const Arg& shared_arg = *a[store ? 0 : 1];
  const int rank = static_cast<int>(global.buffer->shape.size());
  if (rank < 1 || rank > 5) {
    fail(global_arg.value_at, "T.tma_copy: '" + global.buffer->name + "' has " +
                                  std::to_string(rank) + " dimensions; TMA copies boxes of 1 to 5");
  }
  std::vector<int64_t> box(rank, 1);
  std::vector<Expr> shared_ext = shared.squeezed_extents();
  for (int d = 0; d < rank; ++d) {
    Expr e = global.point_form ? Expr() : global.ranges[d].extent;
    if (global.point_form) {
      int k = static_cast<int>(shared_ext.size()) - (rank - d);
      e = k >= 0 ? shared_ext[k] : make_int(1);
    }
    std::optional<int64_t> n = as_const_int(e);
    if (!n) {
      fail(global_arg.value_at, "T.tma_copy: the box extent in dimension " + std::to_string(d) +
                                    " is not a constant; a TMA tensor map fixes the box");
    }
    box[d] = *n;
  }
  std::vector<int64_t> squeezed_box, squeezed_shared;
  for (int64_t b : box) {
    if (b != 1) squeezed_box.push_back(b);
  }
  for (const Expr& e : shared_ext) squeezed_shared.push_back(as_const_int(e).value_or(-1));
  if (squeezed_box != squeezed_shared) {
    fail(shared_arg.value_at,
         "T.tma_copy: the " + std::string(store ? "source" : "destination") + " region of '" +
             shared.buffer->name + "' does not have the box's shape; give it the " +
             (store ? "destination" : "source") + " region's extents (unit dimensions aside)");
  }
  if (store) {
    parse_tma_store(call, shared, global, box, out);
    return;
  }
  IntrinsicArg bar;
  const Value& bv = a[2]->value;
  if (bv.kind == Value::Kind::kElement) {
    bar = IntrinsicArg{bv.buffer, bv.indices, Expr()};
  } else if (bv.kind == Value::Kind::kBuffer && bv.buffer->shape.size() == 1 &&
             as_const_int(bv.buffer->shape[0]) == 1) {
    bar = IntrinsicArg{bv.buffer, {make_int(0)}, Expr()};
  } else {
    fail(a[2]->value_at, "T.tma_copy: barrier= is one mbarrier (bars[i] of T.alloc_barrier)");
  }
  std::vector<Expr> src_origin, dst_origin;
  for (const Range& r : src.ranges) src_origin.push_back(r.min);
  for (const Range& r : dst.ranges) dst_origin.push_back(r.min);
  int64_t elements = 1;
  for (int64_t b : box) elements *= b;
  const SourceLoc loc = loc_of(call.at);
  std::vector<IntrinsicArg> expect = {
      bar, IntrinsicArg{Buffer(), {}, make_int(src.buffer->dtype.storage_bytes(elements))}};
  std::vector<IntrinsicArg> copy = {IntrinsicArg{dst.buffer, dst_origin, Expr()},
                                    IntrinsicArg{src.buffer, src_origin, Expr()}, bar};
  for (int64_t b : box) copy.push_back(IntrinsicArg{Buffer(), {}, make_int(b)});
  copy.push_back(IntrinsicArg{Buffer(), {}, make_int(0)});  // swizzle: flatten_buffers picks it
  static constexpr IntrinsicId kLoads[] = {IntrinsicId::kTmaLoad1D, IntrinsicId::kTmaLoad2D,
                                           IntrinsicId::kTmaLoad3D, IntrinsicId::kTmaLoad4D,
                                           IntrinsicId::kTmaLoad5D};
  std::vector<Stmt> body;
  body.push_back(located(call.at, [&] {
    return IntrinsicCallNode::make(IntrinsicId::kMbarrierExpectTx, std::move(expect), loc);
  }));
  body.push_back(located(
      call.at, [&] { return IntrinsicCallNode::make(kLoads[rank - 1], std::move(copy), loc); }));
  thread_binding_of(call.at, 0);
  Expr leader = Expr(node_.thread_var) == make_int(ws_first_thread_);
  out.push_back(located(
      call.at, [&] { return IfNode::make(leader, SeqNode::make(std::move(body)), Stmt(), loc); }));
}

void Parser::parse_tma_store(const CallArgs& call, const BufferRegion& src, const BufferRegion& dst,
                             const std::vector<int64_t>& box, std::vector<Stmt>& out) {
  // TileLang's split-phase store: the first thread of the group issues the store and closes its
  // bulk group (tma_store + tma_store_arrive); the user waits with T.tma_store_wait(). Every
  // thread of the group first fences its shared writes for the async proxy; insert_barriers
  // puts the T.sync_threads() the store needs after the writes (outside T.ws branches, where
  // the user's barriers order them).
  const SourceLoc loc = loc_of(call.at);
  std::vector<IntrinsicArg> args;
  std::vector<Expr> dst_origin, src_origin;
  for (const Range& r : dst.ranges) dst_origin.push_back(r.min);
  for (const Range& r : src.ranges) src_origin.push_back(r.min);
  args.push_back(IntrinsicArg{dst.buffer, dst_origin, Expr()});
  args.push_back(IntrinsicArg{src.buffer, src_origin, Expr()});
  for (int64_t b : box) args.push_back(IntrinsicArg{Buffer(), {}, make_int(b)});
  args.push_back(IntrinsicArg{Buffer(), {}, make_int(0)});  // swizzle: flatten_buffers picks it
  static constexpr IntrinsicId kStores[] = {IntrinsicId::kTmaStore1D, IntrinsicId::kTmaStore2D,
                                            IntrinsicId::kTmaStore3D, IntrinsicId::kTmaStore4D,
                                            IntrinsicId::kTmaStore5D};
  const size_t rank = box.size();
  out.push_back(located(
      call.at, [&] { return IntrinsicCallNode::make(IntrinsicId::kFenceProxyAsync, {}, loc); }));
  std::vector<Stmt> body;
  body.push_back(located(
      call.at, [&] { return IntrinsicCallNode::make(kStores[rank - 1], std::move(args), loc); }));
  body.push_back(located(
      call.at, [&] { return IntrinsicCallNode::make(IntrinsicId::kTmaStoreArrive, {}, loc); }));
  thread_binding_of(call.at, 0);
  Expr leader = Expr(node_.thread_var) == make_int(ws_first_thread_);
  out.push_back(located(
      call.at, [&] { return IfNode::make(leader, SeqNode::make(std::move(body)), Stmt(), loc); }));
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
