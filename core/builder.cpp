// The C++ kernel builder: records statements into nested frames and validates as it goes.
#include "core/builder.h"

#include "core/analyzer.h"
#include "core/expr_printer.h"
#include "core/op_annotate_layout.h"
#include "core/op_copy.h"
#include "core/op_fill.h"

namespace tessel {

Index Index::slice(Expr lo, Expr hi) {
  Index i(0);
  i.point = Expr();
  i.lo = std::move(lo);
  i.hi = std::move(hi);
  i.is_slice = true;
  return i;
}

Index Index::all() {
  Index i(0);
  i.point = Expr();
  i.is_slice = true;
  return i;
}

ElementRef::operator Expr() const {
  std::vector<Expr> idx;
  for (const Index& i : indices_) {
    if (i.is_slice) {
      user_error("'" + buffer_->name +
                 "' is read with a slice as if it were one element; "
                 "index every dimension with a single value to read an element");
    }
    idx.push_back(i.point);
  }
  return BufferLoadNode::make(buffer_, std::move(idx));
}

ElementRef& ElementRef::operator=(const Expr& value) {
  std::vector<Expr> idx;
  for (const Index& i : indices_) {
    if (i.is_slice) {
      user_error("'" + buffer_->name +
                 "' is assigned through a slice; stores write one element "
                 "(use T.copy or T.fill for a region)");
    }
    idx.push_back(i.point);
  }
  builder_->emit(StoreNode::make(buffer_, std::move(idx), value, SourceLoc{}));
  return *this;
}

BufferRegion ElementRef::region() const {
  if (indices_.size() != buffer_->ndim()) {
    user_error("region of '" + buffer_->name + "' with " + std::to_string(indices_.size()) +
               " index(es), but it has " + std::to_string(buffer_->ndim()) +
               " dimension(s); give one index or slice per dimension");
  }
  BufferRegion r{buffer_, {}, true};
  for (size_t d = 0; d < indices_.size(); ++d) {
    const Index& i = indices_[d];
    if (!i.is_slice) {
      r.ranges.push_back({i.point, make_int(1)});
      continue;
    }
    r.point_form = false;
    Expr lo = i.lo.defined() ? i.lo : make_int(0);
    Expr hi = i.hi.defined() ? i.hi : buffer_->shape[d];
    // `k * 32:k * 32 + 32` has extent 32, as the front end reads the same slice.
    Expr extent = hi - lo;
    if (!as_const_int(extent)) extent = Analyzer().simplify(extent);
    r.ranges.push_back({lo, extent});
  }
  // A region written with points only is a point-form origin; with any slice, points are
  // unit-extent dimensions.
  return r;
}

bool ElementRef::is_point() const {
  for (const Index& i : indices_) {
    if (i.is_slice) return false;
  }
  return true;
}

KernelBuilder::KernelBuilder(std::string name, SourceLoc loc) : name_(std::move(name)), loc_(loc) {
  node_.name = name_;
  node_.loc = std::move(loc);
  open_frame();
}

void KernelBuilder::open_frame() {
  frames_.emplace_back();
  frame_lets_.emplace_back();
}

Stmt KernelBuilder::close_frame() {
  std::vector<Stmt> stmts = std::move(frames_.back());
  std::vector<size_t> lets = std::move(frame_lets_.back());
  frames_.pop_back();
  frame_lets_.pop_back();
  size_t end = stmts.size();
  Stmt tail;
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
    std::vector<Stmt> body(stmts.begin() + static_cast<std::ptrdiff_t>(*it) + 1,
                           stmts.begin() + static_cast<std::ptrdiff_t>(end));
    if (tail.defined()) body.push_back(tail);
    const auto* let = stmts[*it].as<LetNode>();
    tail = LetNode::make(let->var, let->value, SeqNode::make(std::move(body)), let->loc);
    end = *it;
  }
  stmts.resize(end);
  if (tail.defined()) stmts.push_back(tail);
  return SeqNode::make(std::move(stmts));
}

Var KernelBuilder::let(std::string name, Expr value, SourceLoc loc) {
  check_launched("a let binding", loc);
  Var v(std::move(name), value.dtype());
  frame_lets_.back().push_back(frames_.back().size());
  emit(LetNode::make(v, std::move(value), Stmt(), std::move(loc)));
  return v;
}

BufferRef KernelBuilder::tensor(std::string name, std::vector<Expr> shape, DataType dtype,
                                SourceLoc loc) {
  Buffer b = BufferNode::make(std::move(name), std::move(shape), dtype, Scope::kGlobal, loc);
  node_.params.push_back(b);
  return BufferRef(this, b);
}

Var KernelBuilder::dynamic(std::string name) {
  Var v(std::move(name), DataType::i32());
  node_.dynamic_vars.push_back(v);
  return v;
}

BufferRef KernelBuilder::alloc_global(std::string name, std::vector<Expr> shape, DataType dtype,
                                      SourceLoc loc) {
  Buffer b = BufferNode::make(std::move(name), std::move(shape), dtype, Scope::kGlobal, loc);
  scratch_.push_back(b);
  return BufferRef(this, b);
}

void KernelBuilder::close_launch() {
  internal_check(frames_.size() == 1, "builder frames left open");
  KernelNode launch = node_;
  launch.body = close_frame();
  open_frame();
  launches_.push_back(std::move(launch));
}

std::vector<Var> KernelBuilder::kernel(std::vector<Expr> grid, int threads, SourceLoc loc) {
  if (launched_) close_launch();  // the next launch of a kernel with several
  launched_ = true;
  node_.loc = loc;
  static const char* names[] = {"bx", "by", "bz"};
  node_.grid = std::move(grid);
  node_.threads = threads;
  node_.thread_dims = {threads};
  node_.block_vars.clear();
  for (size_t d = 0; d < node_.grid.size() && d < 3; ++d) node_.block_vars.emplace_back(names[d]);
  node_.thread_var = Var("tx");
  return node_.block_vars;
}

std::vector<Var> KernelBuilder::kernel(std::vector<Expr> grid, std::vector<int> thread_dims,
                                       SourceLoc loc) {
  std::vector<Var> blocks = kernel(std::move(grid), 0, std::move(loc));
  if (thread_dims.size() > 1) node_.thread_var = Var("tid");  // as the file parser names it
  node_.thread_dims = std::move(thread_dims);  // Kernel::make sets threads to their product
  return blocks;
}

std::pair<Var, Var> KernelBuilder::kernel2(Expr gx, Expr gy, int threads, SourceLoc loc) {
  auto v = kernel({std::move(gx), std::move(gy)}, threads, std::move(loc));
  return {v[0], v[1]};
}

Var KernelBuilder::kernel1(Expr gx, int threads, SourceLoc loc) {
  return kernel({std::move(gx)}, threads, std::move(loc))[0];
}

Var KernelBuilder::get_thread_binding() {
  check_launched("T.get_thread_binding()", loc_);
  return node_.thread_var;
}

Expr KernelBuilder::get_thread_binding(int dim) {
  check_launched("T.get_thread_binding()", loc_);
  if (dim < 0 || dim > 2) {
    user_error("kernel '" + name_ + "': T.get_thread_binding(" + std::to_string(dim) +
               "): the dimension is 0 (x), 1 (y) or 2 (z)");
  }
  return thread_binding(node_, dim);
}

void KernelBuilder::check_launched(const char* what, const SourceLoc& loc) const {
  if (!launched_) {
    user_error("kernel '" + name_ + "': " + what + (loc.known() ? " at " + loc.str() : "") +
               " comes before T.Kernel(...); open the kernel launch first");
  }
}

BufferRef KernelBuilder::alloc(std::string name, std::vector<Expr> shape, DataType dtype,
                               Scope scope, Expr init, bool is_var, SourceLoc loc) {
  check_launched("an allocation", loc);
  Buffer b = BufferNode::make(std::move(name), std::move(shape), dtype, scope, loc);
  emit(AllocNode::make(b, std::move(init), is_var, std::move(loc)));
  return BufferRef(this, b);
}

BufferRef KernelBuilder::alloc_shared(std::string name, std::vector<Expr> shape, DataType dtype,
                                      SourceLoc loc) {
  return alloc(std::move(name), std::move(shape), dtype, Scope::kShared, Expr(), false, loc);
}
BufferRef KernelBuilder::alloc_fragment(std::string name, std::vector<Expr> shape, DataType dtype,
                                        SourceLoc loc) {
  return alloc(std::move(name), std::move(shape), dtype, Scope::kFragment, Expr(), false, loc);
}
BufferRef KernelBuilder::alloc_local(std::string name, std::vector<Expr> shape, DataType dtype,
                                     SourceLoc loc) {
  return alloc(std::move(name), std::move(shape), dtype, Scope::kLocal, Expr(), false, loc);
}
BufferRef KernelBuilder::alloc_var(std::string name, DataType dtype, Expr init, SourceLoc loc) {
  return alloc(std::move(name), {make_int(1)}, dtype, Scope::kLocal, std::move(init), true, loc);
}

void KernelBuilder::copy(TileArg src, TileArg dst, SourceLoc loc) {
  check_launched("T.copy", loc);
  emit(TileOpCallNode::make(CopyOp::make(src.region, dst.region, std::move(loc))));
}

void KernelBuilder::gemm(const Buffer& A, const Buffer& B, const Buffer& C, GemmOptions options,
                         SourceLoc loc) {
  check_launched("T.gemm", loc);
  emit(TileOpCallNode::make(GemmOp::make(A, B, C, options, std::move(loc))));
}

void KernelBuilder::reduce(ReduceKind kind, const Buffer& src, const Buffer& dst, int dim,
                           bool clear, SourceLoc loc) {
  check_launched("T.reduce", loc);
  emit(TileOpCallNode::make(ReduceOp::make(kind, src, dst, dim, clear, std::move(loc))));
}
void KernelBuilder::reduce_sum(const Buffer& s, const Buffer& d, int dim, bool clear,
                               SourceLoc loc) {
  reduce(ReduceKind::kSum, s, d, dim, clear, std::move(loc));
}
void KernelBuilder::reduce_max(const Buffer& s, const Buffer& d, int dim, bool clear,
                               SourceLoc loc) {
  reduce(ReduceKind::kMax, s, d, dim, clear, std::move(loc));
}
void KernelBuilder::reduce_min(const Buffer& s, const Buffer& d, int dim, bool clear,
                               SourceLoc loc) {
  reduce(ReduceKind::kMin, s, d, dim, clear, std::move(loc));
}
void KernelBuilder::reduce_abssum(const Buffer& s, const Buffer& d, int dim, bool clear,
                                  SourceLoc loc) {
  reduce(ReduceKind::kAbsSum, s, d, dim, clear, std::move(loc));
}
void KernelBuilder::reduce_absmax(const Buffer& s, const Buffer& d, int dim, bool clear,
                                  SourceLoc loc) {
  reduce(ReduceKind::kAbsMax, s, d, dim, clear, std::move(loc));
}

void KernelBuilder::atomic(AtomicKind kind, TileArg dst, TileArg src, SourceLoc loc) {
  check_launched("T.atomic", loc);
  emit(TileOpCallNode::make(AtomicOp::make_tile(kind, dst.region, src.region, std::move(loc))));
}
void KernelBuilder::atomic(AtomicKind kind, TileArg dst, Expr value, SourceLoc loc) {
  check_launched("T.atomic", loc);
  emit(TileOpCallNode::make(
      AtomicOp::make_scalar(kind, dst.region, std::move(value), std::move(loc))));
}
void KernelBuilder::atomic_add(TileArg dst, TileArg src, SourceLoc loc) {
  atomic(AtomicKind::kAdd, std::move(dst), std::move(src), std::move(loc));
}
void KernelBuilder::atomic_add(TileArg dst, Expr value, SourceLoc loc) {
  atomic(AtomicKind::kAdd, std::move(dst), std::move(value), std::move(loc));
}

void KernelBuilder::atomic_add(TileArg dst, const ElementRef& src, SourceLoc loc) {
  if (src.is_point()) {
    atomic(AtomicKind::kAdd, std::move(dst), src.load(), std::move(loc));
  } else {
    atomic(AtomicKind::kAdd, std::move(dst), TileArg(src), std::move(loc));
  }
}

void KernelBuilder::fill(TileArg dst, Expr value, SourceLoc loc) {
  check_launched("T.fill", loc);
  emit(TileOpCallNode::make(FillOp::make(dst.region, std::move(value), false, std::move(loc))));
}
void KernelBuilder::clear(TileArg dst, SourceLoc loc) {
  check_launched("T.clear", loc);
  emit(TileOpCallNode::make(FillOp::make(dst.region, make_int(0), true, std::move(loc))));
}

void KernelBuilder::loop(ForKind kind, std::vector<Var> vars, std::vector<Expr> extents,
                         const std::function<void()>& body, SourceLoc loc, PipelineInfo pipeline) {
  check_launched("a loop", loc);
  open_frame();
  body();
  Stmt s = close_frame();
  for (size_t d = vars.size(); d-- > 0;) {
    s = ForNode::make(vars[d], make_int(0), extents[d], kind, s, loc,
                      d == 0 ? pipeline : PipelineInfo{});
  }
  emit(s);
}

void KernelBuilder::parallel(Expr e0, const std::function<void(Var)>& body, SourceLoc loc) {
  Var i("i", loop_var_type(make_int(0), e0));
  loop(
      ForKind::kParallel, {i}, {std::move(e0)}, [&] { body(i); }, std::move(loc));
}
void KernelBuilder::parallel(Expr e0, Expr e1, const std::function<void(Var, Var)>& body,
                             SourceLoc loc) {
  Var i("i", loop_var_type(make_int(0), e0)), j("j", loop_var_type(make_int(0), e1));
  loop(
      ForKind::kParallel, {i, j}, {std::move(e0), std::move(e1)}, [&] { body(i, j); },
      std::move(loc));
}
void KernelBuilder::parallel(Expr e0, Expr e1, Expr e2,
                             const std::function<void(Var, Var, Var)>& body, SourceLoc loc) {
  Var i("i", loop_var_type(make_int(0), e0)), j("j", loop_var_type(make_int(0), e1)),
      k("k", loop_var_type(make_int(0), e2));
  loop(
      ForKind::kParallel, {i, j, k}, {std::move(e0), std::move(e1), std::move(e2)},
      [&] { body(i, j, k); }, std::move(loc));
}

void KernelBuilder::pipelined(Expr extent, int num_stages, const std::function<void(Var)>& body,
                              PipelineInfo extra, std::string var, SourceLoc loc) {
  Var k(std::move(var), loop_var_type(make_int(0), extent));
  extra.num_stages = num_stages;
  loop(
      ForKind::kPipelined, {k}, {std::move(extent)}, [&] { body(k); }, std::move(loc),
      std::move(extra));
}

void KernelBuilder::serial(Expr extent, const std::function<void(Var)>& body, std::string var,
                           SourceLoc loc) {
  Var i(std::move(var), loop_var_type(make_int(0), extent));
  loop(
      ForKind::kSerial, {i}, {std::move(extent)}, [&] { body(i); }, std::move(loc));
}
void KernelBuilder::unroll(Expr extent, const std::function<void(Var)>& body, std::string var,
                           SourceLoc loc) {
  Var i(std::move(var), loop_var_type(make_int(0), extent));
  loop(
      ForKind::kUnrolled, {i}, {std::move(extent)}, [&] { body(i); }, std::move(loc));
}
void KernelBuilder::vectorized(Expr extent, const std::function<void(Var)>& body, std::string var,
                               SourceLoc loc) {
  Var i(std::move(var), loop_var_type(make_int(0), extent));
  loop(
      ForKind::kVectorized, {i}, {std::move(extent)}, [&] { body(i); }, std::move(loc));
}

void KernelBuilder::if_then(Expr cond, const std::function<void()>& then_body,
                            const std::function<void()>& else_body, SourceLoc loc) {
  check_launched("if", loc);
  open_frame();
  then_body();
  Stmt then_case = close_frame();
  Stmt else_case;
  if (else_body) {
    open_frame();
    else_body();
    else_case = close_frame();
  }
  emit(IfNode::make(std::move(cond), then_case, else_case, std::move(loc)));
}

void KernelBuilder::sync_threads(SourceLoc loc) {
  check_launched("T.sync_threads()", loc);
  emit(BarrierNode::make(std::move(loc)));
}

void KernelBuilder::annotate_layout(
    std::vector<std::pair<Buffer, std::variant<Layout, Fragment>>> entries, SourceLoc loc) {
  check_launched("T.annotate_layout", loc);
  emit(TileOpCallNode::make(AnnotateLayoutOp::make(std::move(entries), std::move(loc))));
}

void KernelBuilder::use_swizzle(int panel_size, bool column_major, SourceLoc loc) {
  check_launched("T.use_swizzle", loc);
  emit(UseSwizzleNode::make(panel_size, column_major, std::move(loc)));
}

namespace {

/// An ElementRef as an intrinsic argument: one element of a buffer.
IntrinsicArg element_arg(const ElementRef& ref, const char* what) {
  BufferRegion r = ref.region();
  for (const Range& range : r.ranges) {
    if (as_const_int(range.extent) != 1) {
      user_error(std::string(what) + ": '" + r.buffer->name +
                 "' is passed as a slice; an "
                 "instruction operand is one element (the lane's first register or address)");
    }
  }
  IntrinsicArg arg{r.buffer, {}, Expr()};
  for (const Range& range : r.ranges) arg.indices.push_back(range.min);
  return arg;
}

IntrinsicArg value_arg(Expr e) { return IntrinsicArg{Buffer(), {}, std::move(e)}; }

}  // namespace

void KernelBuilder::intrinsic(IntrinsicId id, std::vector<IntrinsicArg> args, SourceLoc loc) {
  check_launched(("T." + intrinsic_info(id).name).c_str(), loc);
  emit(IntrinsicCallNode::make(id, std::move(args), std::move(loc)));
}

void KernelBuilder::mma_m16n8k16(const ElementRef& d, const ElementRef& a, const ElementRef& b,
                                 const ElementRef& c, SourceLoc loc) {
  IntrinsicArg aa = element_arg(a, "T.mma_m16n8k16");
  bool bf16 = aa.buffer->dtype == DataType::bf16();
  intrinsic(bf16 ? IntrinsicId::kMmaM16N8K16BF16 : IntrinsicId::kMmaM16N8K16F16,
            {element_arg(d, "T.mma_m16n8k16"), aa, element_arg(b, "T.mma_m16n8k16"),
             element_arg(c, "T.mma_m16n8k16")},
            std::move(loc));
}

void KernelBuilder::mfma(int m, const ElementRef& d, const ElementRef& a, const ElementRef& b,
                         const ElementRef& c, SourceLoc loc) {
  IntrinsicArg aa = element_arg(a, "T.mfma");
  auto id = find_matrix_intrinsic(false, m, m, m == 32 ? 8 : 16, aa.buffer->dtype);
  if (!id) {
    user_error("T.mfma" + (loc.known() ? " at " + loc.str() : std::string()) +
               ": no MFMA "
               "instruction for m = " +
               std::to_string(m) + " with " + aa.buffer->dtype.name() +
               " inputs; use m = 16 (16x16x16) or 32 (32x32x8) with float16 or bfloat16");
  }
  intrinsic(*id, {element_arg(d, "T.mfma"), aa, element_arg(b, "T.mfma"), element_arg(c, "T.mfma")},
            std::move(loc));
}

void KernelBuilder::ldmatrix(int num, bool trans, const ElementRef& dst, const ElementRef& src,
                             SourceLoc loc) {
  static const IntrinsicId plain[] = {IntrinsicId::kLdmatrixX1, IntrinsicId::kLdmatrixX2,
                                      IntrinsicId::kLdmatrixX4};
  static const IntrinsicId transposed[] = {
      IntrinsicId::kLdmatrixX1Trans, IntrinsicId::kLdmatrixX2Trans, IntrinsicId::kLdmatrixX4Trans};
  int slot = num == 1 ? 0 : num == 2 ? 1 : num == 4 ? 2 : -1;
  if (slot < 0) {
    user_error("T.ldmatrix" + (loc.known() ? " at " + loc.str() : std::string()) + ": x" +
               std::to_string(num) + " does not exist; load 1, 2 or 4 matrices");
  }
  intrinsic(trans ? transposed[slot] : plain[slot],
            {element_arg(dst, "T.ldmatrix"), element_arg(src, "T.ldmatrix")}, std::move(loc));
}

void KernelBuilder::cp_async(const ElementRef& dst, const ElementRef& src, int bytes, Expr src_size,
                             SourceLoc loc) {
  IntrinsicId id = bytes == 4   ? IntrinsicId::kCpAsync4
                   : bytes == 8 ? IntrinsicId::kCpAsync8
                                : IntrinsicId::kCpAsync16;
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    user_error("T.cp_async" + (loc.known() ? " at " + loc.str() : std::string()) + ": " +
               std::to_string(bytes) + " bytes; cp.async copies 4, 8 or 16 bytes per thread");
  }
  if (!src_size.defined()) src_size = make_int(bytes);
  intrinsic(id,
            {element_arg(dst, "T.cp_async"), element_arg(src, "T.cp_async"),
             value_arg(std::move(src_size))},
            std::move(loc));
}

void KernelBuilder::cp_async_commit_group(SourceLoc loc) {
  intrinsic(IntrinsicId::kCpAsyncCommitGroup, {}, std::move(loc));
}

void KernelBuilder::cp_async_wait_group(int n, SourceLoc loc) {
  intrinsic(IntrinsicId::kCpAsyncWaitGroup, {value_arg(make_int(n))}, std::move(loc));
}

void KernelBuilder::emit(Stmt stmt) { frames_.back().push_back(std::move(stmt)); }

Kernel KernelBuilder::finish() {
  if (!launched_) {
    user_error("kernel '" + name_ +
               "' has no T.Kernel(...) launch; open one with "
               "T.kernel(grid, threads)");
  }
  if (launches_.empty() && scratch_.empty()) {
    internal_check(frames_.size() == 1, "builder frames left open");
    node_.body = close_frame();
    open_frame();
    node_.loc = loc_;
    return Kernel::make(node_);
  }
  close_launch();
  // Each launch is a one-launch kernel over the parameters followed by the scratch.
  std::vector<Buffer> params = node_.params;
  params.insert(params.end(), scratch_.begin(), scratch_.end());
  std::vector<Kernel> launches;
  for (size_t i = 0; i < launches_.size(); ++i) {
    KernelNode launch = launches_[i];
    launch.name = name_ + "_launch" + std::to_string(i + 1);
    launch.params = params;
    launch.dynamic_vars = node_.dynamic_vars;
    launches.push_back(Kernel::make(std::move(launch)));
  }
  Kernel k = make_launch_sequence(name_, node_.params, node_.dynamic_vars, scratch_,
                                  std::move(launches), loc_);
  launches_.clear();
  return k;
}

}  // namespace tessel
