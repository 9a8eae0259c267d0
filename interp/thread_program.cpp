// Compiles a kernel's statements and expressions into the thread-level interpreter's form.
#include "interp/thread_program.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <unordered_map>

#include "core/expr_functor.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

/// State shared by the expression and statement compilers.
struct CompileState {
  ThreadProgram& prog;
  std::unordered_map<const VarNode*, int> slots;
  std::unordered_map<const BufferNode*, int> buffers;
  std::string statement;  ///< the statement being compiled, as printed (first line)
  struct Context {
    std::string loc;
    std::string within;
  };
  std::vector<Context> context;  ///< the nearest known location, innermost last
  int statement_id = -1;         ///< the statement being compiled, numbered in compile order
  int statements = 0;
  std::vector<int> statement_of;  ///< per node of prog.expr_pool: its statement_id

  const std::string& kernel_name() const { return prog.kernel->name; }

  int slot_of(const Var& v) {
    auto [it, inserted] = slots.emplace(static_cast<const VarNode*>(v.get()), prog.num_slots);
    if (inserted) ++prog.num_slots;
    return it->second;
  }

  int buffer_id(const Buffer& b, const char* use) {
    auto it = buffers.find(b.get());
    if (it == buffers.end()) {
      user_error("kernel '" + kernel_name() + "': '" + b->name + "' is " + use + " in `" +
                 statement +
                 "` but it is neither a parameter of the kernel nor allocated "
                 "before this statement; pass it in the signature or allocate it (T.alloc_*) "
                 "first");
    }
    return it->second;
  }

  int add_site(std::string access, std::string buffer) {
    sim::Site site{std::move(access), std::move(buffer), statement, "", ""};
    if (!context.empty()) {
      site.loc = context.back().loc;
      site.within = context.back().within;
    }
    prog.sites.push_back(std::move(site));
    return static_cast<int>(prog.sites.size()) - 1;
  }

  CExpr* new_expr(XOp op, DataType dtype) {
    prog.expr_pool.push_back(std::make_unique<CExpr>());
    statement_of.push_back(statement_id);
    CExpr* e = prog.expr_pool.back().get();
    e->op = op;
    e->dtype = dtype;
    e->is_float = dtype.is_float();
    if (dtype.is_float()) {
      e->rounding = dtype == DataType::f64()   ? Rounding::kNone
                    : dtype == DataType::f32() ? Rounding::kF32
                                               : Rounding::kOther;
    } else {
      e->rounding = dtype == DataType::i64()   ? Rounding::kNone
                    : dtype == DataType::i32() ? Rounding::kI32
                                               : Rounding::kOther;
    }
    return e;
  }

  CStmt* new_stmt(SOp op) {
    prog.stmt_pool.push_back(std::make_unique<CStmt>());
    CStmt* s = prog.stmt_pool.back().get();
    s->op = op;
    return s;
  }
};

class ExprCompiler : public ExprFunctor<const CExpr*> {
 public:
  explicit ExprCompiler(CompileState& st) : st_(st) {}
  const CExpr* compile(const Expr& e) { return e.defined() ? visit(e) : nullptr; }

 protected:
  const CExpr* visit_IntImm(const IntImmNode* op, const Expr&) override {
    CExpr* e = st_.new_expr(XOp::kImm, op->dtype);
    for (int64_t& v : e->imm.i) v = op->value;
    return e;
  }
  const CExpr* visit_FloatImm(const FloatImmNode* op, const Expr&) override {
    CExpr* e = st_.new_expr(XOp::kImm, op->dtype);
    for (double& v : e->imm.f) v = op->value;
    return e;
  }
  const CExpr* visit_Var(const VarNode* op, const Expr&) override {
    auto it = st_.slots.find(op);
    if (it == st_.slots.end()) {
      user_error("kernel '" + st_.kernel_name() + "': variable '" + op->name + "' is used in `" +
                 st_.statement +
                 "` outside the scope that defines it; define it (a loop, a "
                 "let, T.dynamic) around its uses");
    }
    CExpr* e = st_.new_expr(XOp::kVar, op->dtype);
    e->slot = it->second;
    return e;
  }
  const CExpr* visit_Not(const NotNode* op, const Expr& x) override {
    return unary(XOp::kNot, op->a, x);
  }
  const CExpr* visit_Cast(const CastNode* op, const Expr& x) override {
    return unary(XOp::kCast, op->value, x);
  }
  const CExpr* visit_Select(const SelectNode* op, const Expr& x) override {
    CExpr* e = st_.new_expr(XOp::kSelect, x.dtype());
    e->a = visit(op->cond);
    e->b = visit(op->t);
    e->c = visit(op->f);
    return e;
  }
  const CExpr* visit_BufferLoad(const BufferLoadNode* op, const Expr& x) override {
    CExpr* e = st_.new_expr(XOp::kLoad, x.dtype());
    e->buffer = st_.buffer_id(op->buffer, "read");
    for (const Expr& i : op->indices) e->indices.push_back(visit(i));
    e->site = st_.add_site("load", op->buffer->name);
    e->source = x;
    return e;
  }
  const CExpr* visit_Call(const CallNode* op, const Expr& x) override {
    CExpr* e = st_.new_expr(is_shuffle(op->op) ? XOp::kShuffle : XOp::kCall, x.dtype());
    e->builtin = op->op;
    e->a = visit(op->args[0]);
    e->operand_dtype = op->args[0].dtype();
    e->operand_float = e->operand_dtype.is_float();
    if (op->args.size() > 1) e->b = visit(op->args[1]);
    if (is_shuffle(op->op)) e->site = st_.add_site(std::string("T.") + builtin_name(op->op), "");
    return e;
  }
#define TESSEL_BINARY_(name, ...)                                           \
  const CExpr* visit_##name(const name##Node* op, const Expr& x) override { \
    return binary(XOp::k##name, op->a, op->b, x);                           \
  }
  TESSEL_BINARY_NODES(TESSEL_BINARY_)
  TESSEL_COMPARE_NODES(TESSEL_BINARY_)
#undef TESSEL_BINARY_

 private:
  const CExpr* unary(XOp xop, const Expr& a, const Expr& x) {
    CExpr* e = st_.new_expr(xop, x.dtype());
    e->a = visit(a);
    e->operand_dtype = a.dtype();
    e->operand_float = a.dtype().is_float();
    return e;
  }
  const CExpr* binary(XOp xop, const Expr& a, const Expr& b, const Expr& x) {
    CExpr* e = st_.new_expr(xop, x.dtype());
    e->a = visit(a);
    e->b = visit(b);
    e->operand_dtype = a.dtype();
    e->operand_float = a.dtype().is_float();
    if (xop == XOp::kDiv || xop == XOp::kFloorDiv || xop == XOp::kFloorMod) e->source = x;
    return e;
  }

  CompileState& st_;
};

/// The first line of a statement as printed, without indentation.
std::string first_line(const Stmt& s) {
  std::string text = print_stmt(s);
  size_t start = text.find_first_not_of(' ');
  size_t end = text.find('\n');
  if (start == std::string::npos) return "";
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class StmtCompiler : public StmtFunctor<const CStmt*> {
 public:
  explicit StmtCompiler(CompileState& st) : st_(st), exprs_(st) {}

  const CStmt* compile(const Stmt& s) {
    std::string saved = st_.statement;
    const int saved_id = st_.statement_id;
    st_.statement = first_line(s);
    st_.statement_id = st_.statements++;
    const CStmt* c = visit(s);
    st_.statement = saved;
    st_.statement_id = saved_id;
    return c;
  }

 protected:
  const CStmt* visit_Seq(const SeqNode* op, const Stmt&) override {
    CStmt* c = st_.new_stmt(SOp::kSeq);
    for (const Stmt& s : op->stmts) add_child(c, compile(s));
    return c;
  }
  const CStmt* visit_For(const ForNode* op, const Stmt& s) override {
    if (op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kPipelined) {
      not_thread_level(std::string("the T.") + for_kind_name(op->for_kind) + " loop over '" +
                           op->var.name() + "'",
                       s->loc);
    }
    CStmt* c = st_.new_stmt(SOp::kFor);
    LocScope scope(st_, s->loc, "for");
    c->a = exprs_.compile(op->min);
    c->b = exprs_.compile(op->extent);
    c->slot = st_.slot_of(op->var);
    add_child(c, compile(op->body));
    std::optional<int64_t> extent = as_const_int(op->extent);
    if (op->for_kind == ForKind::kVectorized && extent && *extent >= 2 && *extent <= kMaxVector &&
        !c->has_barrier && !calls_intrinsic(c->body[0])) {
      c->vector = static_cast<int>(*extent);
    }
    return c;
  }
  const CStmt* visit_If(const IfNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kIf);
    LocScope scope(st_, s->loc, "if");
    c->a = exprs_.compile(op->cond);
    add_child(c, compile(op->then_case));
    if (op->else_case.defined()) add_child(c, compile(op->else_case));
    return c;
  }
  const CStmt* visit_Store(const StoreNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kStore);
    LocScope scope(st_, s->loc, "");
    c->buffer = st_.buffer_id(op->buffer, "written");
    st_.prog.buffers[c->buffer].written = true;
    for (const Expr& i : op->indices) c->indices.push_back(exprs_.compile(i));
    c->source_indices = op->indices;
    c->a = exprs_.compile(op->value);
    c->site = st_.add_site("store", op->buffer->name);
    return c;
  }
  const CStmt* visit_Alloc(const AllocNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kAlloc);
    LocScope scope(st_, s->loc, "");
    const Buffer& b = op->buffer;
    auto it = st_.buffers.find(b.get());
    if (it == st_.buffers.end()) {
      CBuffer cb;
      cb.buffer = b;
      cb.space = (b->scope == tessel::Scope::kShared || b->scope == tessel::Scope::kSharedDyn)
                     ? sim::Space::kShared
                     : sim::Space::kLocal;
      for (const Expr& e : b->shape) cb.shape.push_back(exprs_.compile(e));
      st_.prog.buffers.push_back(std::move(cb));
      it = st_.buffers.emplace(b.get(), static_cast<int>(st_.prog.buffers.size()) - 1).first;
    }
    c->buffer = it->second;
    c->is_var = op->is_var;
    c->a = exprs_.compile(op->init);
    if (c->a) c->site = st_.add_site("init", b->name);
    return c;
  }
  const CStmt* visit_Let(const LetNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kLet);
    LocScope scope(st_, s->loc, "");
    c->a = exprs_.compile(op->value);
    c->slot = st_.slot_of(op->var);
    add_child(c, compile(op->body));
    return c;
  }
  const CStmt* visit_Barrier(const BarrierNode*, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kBarrier);
    LocScope scope(st_, s->loc, "");
    c->site = st_.add_site("T.sync_threads()", "");
    c->has_barrier = true;
    return c;
  }
  const CStmt* visit_TileOpCall(const TileOpCallNode* op, const Stmt& s) override {
    not_thread_level("T." + op->op->name() + " (a tile operator)", s->loc);
  }
  const CStmt* visit_Print(const PrintNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kPrint);
    LocScope scope(st_, s->loc, "");
    c->a = exprs_.compile(op->value);
    c->print = op;
    return c;
  }
  const CStmt* visit_UseSwizzle(const UseSwizzleNode*, const Stmt&) override {
    return st_.new_stmt(SOp::kNop);  // block rasterisation changes only the order of blocks
  }
  const CStmt* visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
    CStmt* c = st_.new_stmt(SOp::kIntrinsic);
    LocScope scope(st_, s->loc, "");
    const IntrinsicInfo& info = intrinsic_info(op->intrinsic);
    c->intrinsic = &info;
    c->site = st_.add_site("T." + info.name, "");
    c->has_barrier = info.blocking;  // the warp may suspend there
    for (size_t i = 0; i < op->args.size(); ++i) {
      const IntrinsicArg& a = op->args[i];
      CArg arg;
      if (a.buffer.defined()) {
        const IntrinsicOperand& o = info.operands[i];
        arg.buffer = st_.buffer_id(a.buffer, o.written ? "written" : "read");
        if (o.written) st_.prog.buffers[arg.buffer].written = true;
        for (const Expr& e : a.indices) arg.indices.push_back(exprs_.compile(e));
        arg.site = st_.add_site(info.name + " " + o.name, a.buffer->name);
      } else {
        arg.value = exprs_.compile(a.value);
      }
      c->args.push_back(std::move(arg));
    }
    st_.prog.uses_intrinsics = true;
    return c;
  }

 private:
  /// Pushes a known location for the statements and sites compiled inside its lifetime.
  class LocScope {
   public:
    LocScope(CompileState& st, const SourceLoc& loc, const char* within)
        : st_(st), pushed_(loc.known()) {
      if (pushed_) st_.context.push_back({loc.str(), within});
    }
    ~LocScope() {
      if (pushed_) st_.context.pop_back();
    }

   private:
    CompileState& st_;
    bool pushed_;
  };

  /// The most iterations a T.vectorized loop may have to become vector requests: 16 bytes of
  /// 8-bit elements.
  static constexpr int64_t kMaxVector = 16;

  static bool calls_intrinsic(const CStmt* s) {
    if (s->op == SOp::kIntrinsic) return true;
    for (const CStmt* c : s->body) {
      if (calls_intrinsic(c)) return true;
    }
    return false;
  }

  static void add_child(CStmt* parent, const CStmt* child) {
    parent->body.push_back(child);
    parent->has_barrier = parent->has_barrier || child->has_barrier;
  }

  [[noreturn]] void not_thread_level(const std::string& what, const SourceLoc& loc) {
    user_error("kernel '" + st_.kernel_name() + "': " + what +
               (loc.known() ? " at " + loc.str() : "") +
               " is tile-level IR. The thread-level interpreter runs thread-level IR "
               "(T.get_thread_binding(), indexed loads and stores, T.sync_threads(), warp "
               "shuffles, serial loops, ifs and the instructions of the intrinsic table); lower "
               "the kernel first (core/passes.h lower_kernel, or `tessel lower`; `tessel run "
               "--level thread` does it for you)");
  }

  CompileState& st_;
  ExprCompiler exprs_;
};

/// Marks the uniform expressions (CExpr::uniform), the thread-invariant ones' cache slots
/// (CExpr::cache) and each tree's node count. A variable is uniform when each of its definitions
/// (a loop's bounds, a let's value) is — found by iterating to a fixed point, since a variable may
/// be defined more than once; the block index and symbolic sizes are, the thread index is not.
/// Thread-invariant trees use the thread, block and symbolic-size variables only (which no
/// statement redefines) and none of the nodes whose lanes may visit different operands.
/// Linear in the nodes per pass: the pool holds every node before its operands (the compiler
/// creates a node, then its operands), so walking it backwards meets operands first.
void mark_uniform(ThreadProgram& prog) {
  const size_t n = prog.expr_pool.size();
  std::unordered_map<const CExpr*, size_t> pos;
  for (size_t i = 0; i < n; ++i) pos.emplace(prog.expr_pool[i].get(), i);
  auto operands = [](const CExpr* e) { return std::array<const CExpr*, 3>{e->a, e->b, e->c}; };
  for (size_t i = 0; i < n; ++i) {
    for (const CExpr* o : operands(prog.expr_pool[i].get())) {
      internal_check(!o || pos.at(o) > i, "thread program: an operand compiled before its node");
    }
  }
  // flag[i] for every node from the leaves' verdicts up; `leaf` says a kVar's, `stop` the ops
  // that are never flagged.
  auto bottom_up = [&](std::vector<char>& flag, auto&& leaf, auto&& stop) {
    flag.assign(n, 0);
    for (size_t i = n; i-- > 0;) {
      const CExpr* e = prog.expr_pool[i].get();
      bool f = e->op == XOp::kImm ? true : e->op == XOp::kVar ? leaf(e->slot) : !stop(e->op);
      if (e->op != XOp::kImm && e->op != XOp::kVar) {
        for (const CExpr* o : operands(e)) f = f && (!o || flag[pos.at(o)]);
      }
      flag[i] = f;
    }
  };
  auto flag_of = [&](const std::vector<char>& flag, const CExpr* e) {
    return !e || flag[pos.at(e)] != 0;
  };

  std::vector<char> slot_uniform(static_cast<size_t>(prog.num_slots), 1);
  slot_uniform[prog.thread_slot] = 0;
  std::vector<char> uniform;
  auto not_uniform_op = [](XOp op) { return op == XOp::kLoad || op == XOp::kShuffle; };
  for (bool changed = true; changed;) {
    bottom_up(
        uniform, [&](int slot) { return slot_uniform[slot] != 0; }, not_uniform_op);
    changed = false;
    std::function<void(const CStmt*)> walk = [&](const CStmt* s) {
      if ((s->op == SOp::kFor || s->op == SOp::kLet) && slot_uniform[s->slot] &&
          !(flag_of(uniform, s->a) && flag_of(uniform, s->b))) {
        slot_uniform[s->slot] = 0;
        changed = true;
      }
      for (const CStmt* c : s->body) walk(c);
    };
    walk(prog.body);
  }

  std::vector<char> slot_fixed(static_cast<size_t>(prog.num_slots), 0);
  slot_fixed[prog.thread_slot] = 1;
  for (int slot : prog.block_slots) slot_fixed[slot] = 1;
  for (const auto& d : prog.dynamic_slots) slot_fixed[d.first] = 1;
  std::function<void(const CStmt*)> unfix = [&](const CStmt* s) {
    if (s->op == SOp::kFor || s->op == SOp::kLet) slot_fixed[s->slot] = 0;
    for (const CStmt* c : s->body) unfix(c);
  };
  unfix(prog.body);
  std::vector<char> invariant;
  bottom_up(
      invariant, [&](int slot) { return slot_fixed[slot] != 0; },
      [](XOp op) {
        return op == XOp::kLoad || op == XOp::kShuffle || op == XOp::kSelect || op == XOp::kAnd ||
               op == XOp::kOr;
      });

  std::vector<char> parent_invariant(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const CExpr* o : operands(prog.expr_pool[i].get())) {
      if (o) parent_invariant[pos.at(o)] = invariant[i];
    }
  }
  for (size_t i = n; i-- > 0;) {
    CExpr* e = prog.expr_pool[i].get();
    e->uniform = uniform[i] != 0;
    e->nodes = 1;
    for (const CExpr* o : operands(e)) e->nodes += o ? o->nodes : 0;
  }
  for (size_t i = 0; i < n; ++i) {
    CExpr* e = prog.expr_pool[i].get();
    if (invariant[i] && !parent_invariant[i] && !e->uniform && e->op != XOp::kImm &&
        e->op != XOp::kVar) {
      e->cache = prog.num_cached++;
    }
  }
}

/// Marks the trees a statement spells more than once (CExpr::reuse; `statement_of`: each node's
/// statement). Structural classes are found operands first (the pool holds every node before its
/// operands): two nodes are one class when their operation, dtypes, builtin, variable or constant
/// and their operands' classes are equal. Only arithmetic on variables and constants has a
/// class, so a class's value depends on the registers alone; the `select`, `and` and `or` that
/// evaluate an operand in some lanes only are left out, so a tree's lane-operations are its
/// nodes in every lane. A tree spelled once in each of several statements gets no slot: a loop
/// counter or let usually changes between them, and keeping its value would cost a copy.
void mark_reused(ThreadProgram& prog, const std::vector<int>& statement_of) {
  const size_t n = prog.expr_pool.size();
  std::unordered_map<const CExpr*, int> class_of;  // -1: no class
  std::map<std::vector<int64_t>, int> classes;
  std::map<std::pair<int, int>, int> members;  // per (class, statement)
  auto class_at = [&](const CExpr* o) { return o ? class_of.at(o) : -2; };
  for (size_t i = n; i-- > 0;) {
    const CExpr* e = prog.expr_pool[i].get();
    const std::array<int, 3> ops{class_at(e->a), class_at(e->b), class_at(e->c)};
    const bool arithmetic = e->op != XOp::kLoad && e->op != XOp::kShuffle &&
                            e->op != XOp::kSelect && e->op != XOp::kAnd && e->op != XOp::kOr;
    if (!arithmetic || std::find(ops.begin(), ops.end(), -1) != ops.end()) {
      class_of[e] = -1;
      continue;
    }
    std::vector<int64_t> key = {static_cast<int64_t>(e->op),
                                static_cast<int64_t>(e->dtype.code),
                                e->dtype.bits,
                                e->dtype.lanes,
                                static_cast<int64_t>(e->operand_dtype.code),
                                e->operand_dtype.bits,
                                e->operand_dtype.lanes,
                                static_cast<int64_t>(e->builtin),
                                e->slot,
                                ops[0],
                                ops[1],
                                ops[2]};
    if (e->op == XOp::kImm) key.push_back(e->imm.i[0]);  // the same bits in every lane
    auto it = classes.emplace(std::move(key), static_cast<int>(classes.size())).first;
    ++members[{it->second, statement_of[i]}];
    class_of[e] = it->second;
  }
  // Constants, variables and cached trees have cheaper shortcuts of their own.
  std::vector<int> slot(classes.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    CExpr* e = prog.expr_pool[i].get();
    const int c = class_of.at(e);
    if (c < 0 || members.at({c, statement_of[i]}) < 2 || e->op == XOp::kImm || e->op == XOp::kVar ||
        e->cache >= 0) {
      continue;
    }
    if (slot[c] < 0) slot[c] = prog.num_reused++;
    e->reuse = slot[c];
  }
}

}  // namespace

std::unique_ptr<ThreadProgram> compile_thread_program(const Kernel& kernel, bool reuse) {
  auto prog = std::make_unique<ThreadProgram>();
  prog->kernel = kernel;
  CompileState st{*prog, {}, {}, "", {}, -1, 0, {}};
  if (kernel->loc.known()) st.context.push_back({kernel->loc.str(), "kernel"});
  prog->thread_slot = st.slot_of(kernel->thread_var);
  for (const Var& v : kernel->block_vars) prog->block_slots.push_back(st.slot_of(v));
  for (const Var& v : kernel->dynamic_vars) {
    prog->dynamic_slots.emplace_back(st.slot_of(v), static_cast<const VarNode*>(v.get()));
  }
  for (size_t p = 0; p < kernel->params.size(); ++p) {
    CBuffer cb;
    cb.buffer = kernel->params[p];
    cb.space = sim::Space::kGlobal;
    cb.param = static_cast<int>(p);
    prog->buffers.push_back(std::move(cb));
    st.buffers.emplace(kernel->params[p].get(), static_cast<int>(p));
  }
  prog->num_globals = static_cast<int>(kernel->params.size());
  prog->body = StmtCompiler(st).compile(kernel->body);
  mark_uniform(*prog);
  if (reuse) mark_reused(*prog, st.statement_of);
  return prog;
}

}  // namespace tessel
