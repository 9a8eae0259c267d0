// Compiled T.Parallel nests: the statements of a nest as closures, and the per-worker cache that
// binds a nest's variables and buffers once per run and writes its variables back after it.
#include "interp/tile_parallel.h"

#include <algorithm>

#include "core/expr_functor.h"
#include "core/stmt_functor.h"
#include "interp/scalar_eval.h"
#include "interp/tile_parallel_nodes.h"

namespace tessel {

namespace tile_parallel {

namespace {

/// A compiled statement. exec counts the statement as a step and records its source location,
/// as the generic interpreter does for every statement it executes.
class Statement {
 public:
  explicit Statement(const StmtNode* s) : s_(s) {}
  virtual ~Statement() = default;
  virtual void exec(Frame& f) const = 0;
  /// Runs every iteration of the innermost loop `row` whose body this is, as the loop would
  /// (binding its variable, counting steps, raising the same errors); false, having changed
  /// nothing but frame bindings the loop makes again, when it cannot (the loop then runs the
  /// iterations one by one).
  virtual bool run_row(Frame&, const Row&) const { return false; }

 protected:
  void enter(Frame& f) const {
    ++f.statement;
    if (s_->loc.known()) f.block.set_current_loc(s_->loc);
    f.steps.step([&] {
      return "kernel '" + f.block.kernel()->name + "', " + f.block.block_name() +
             (s_->loc.known() ? " (at " + s_->loc.str() + ")" : "");
    });
  }
  /// enter() for n executions at once, when no stop can fall among them (true; false: the
  /// caller enters each execution).
  bool enter_all(Frame& f, int64_t n) const {
    if (!f.steps.steps_within_batch(n)) return false;
    f.statement += static_cast<uint64_t>(n);
    if (s_->loc.known()) f.block.set_current_loc(s_->loc);
    return true;
  }
  const StmtNode* s_;
};
using StatementPtr = std::unique_ptr<const Statement>;

inline void bind(Frame& f, int slot, Value v) {
  f.slots[slot] = v;
  f.version[slot] = ++f.tick;
  f.bound[slot] = 1;
  f.assigned[slot] = 1;
}

/// The frame as the loops over `row` leave it: each variable bound to its last value.
inline void bind_last(Frame& f, const Row& row) {
  f.tick += static_cast<uint64_t>(row.n - 1);
  if (row.outer_slot >= 0)
    bind(f, row.outer_slot, Value::of_int(row.outer_lo + row.outer_count() - 1));
  bind(f, row.slot, Value::of_int(row.lo + row.inner() - 1));
}

class Seq final : public Statement {
 public:
  Seq(const StmtNode* s, std::vector<StatementPtr> body) : Statement(s), body_(std::move(body)) {}
  void exec(Frame& f) const override {
    enter(f);
    for (const StatementPtr& c : body_) c->exec(f);
  }

 private:
  std::vector<StatementPtr> body_;
};

}  // namespace

/// A loop of the nest; the outermost one is the program (its own step is counted by the caller).
class Loop final : public Statement {
 public:
  /// `row`: the body may run the iterations as one row (see row_safe). `two_d`: the body is a
  /// loop whose iterations run as rows together with several of this loop's (see collapses).
  Loop(const ForNode* s, int slot, NodePtr min, NodePtr extent, StatementPtr body, bool row,
       bool two_d)
      : Statement(s),
        slot_(slot),
        min_(std::move(min)),
        extent_(std::move(extent)),
        body_(std::move(body)),
        row_(row),
        inner_(two_d ? static_cast<const Loop*>(body_.get()) : nullptr) {}
  void exec(Frame& f) const override {
    enter(f);
    run(f);
  }
  static constexpr int64_t kRowLength = 1024;
  void run(Frame& f) const {
    const int64_t lo = min_->eval(f).i;
    const int64_t n = extent_->eval(f).i;
    int64_t it = inner_ && n > 1 ? run_2d(f, lo, n) : 0;
    // Rows of at most kRowLength iterations (a long serial loop needs no long buffers); from the
    // first row that cannot run as one, the iterations run one by one.
    while (row_ && n - it > 1) {
      const int64_t m = std::min(kRowLength, n - it);
      if (!body_->run_row(f, Row{slot_, lo + it, m})) break;
      it += m;
    }
    for (; it < n; ++it) {
      bind(f, slot_, Value::of_int(lo + it));
      body_->exec(f);
    }
  }

 private:
  /// Runs this loop's iterations lo .. lo + n - 1 with the body loop's as 2-d rows of at most
  /// kRowLength iterations (the body loop's bounds do not read this loop's variable: evaluated
  /// once); returns how many of this loop's iterations ran, the rest to run one by one.
  int64_t run_2d(Frame& f, int64_t lo, int64_t n) const {
    int64_t inner_lo = 0, inner_n = 0;
    try {
      inner_lo = inner_->min_->eval(f).i;
      inner_n = inner_->extent_->eval(f).i;
    } catch (const UserError&) {
      return 0;  // the body loop raises it where it evaluates them
    }
    if (inner_n < 1 || kRowLength / inner_n < 2) return 0;
    int64_t it = 0;
    while (it < n) {
      const int64_t m = std::min(kRowLength / inner_n, n - it);
      // Each pass enters the body loop before its store (which records its own location).
      if (inner_->s_->loc.known()) f.block.set_current_loc(inner_->s_->loc);
      if (!inner_->body_->run_row(
              f, Row{inner_->slot_, inner_lo, m * inner_n, slot_, lo + it, inner_n})) {
        break;
      }
      it += m;
    }
    return it;
  }

  int slot_;
  NodePtr min_, extent_;
  StatementPtr body_;
  bool row_;
  const Loop* inner_;  ///< the body loop when the two run as 2-d rows
};

namespace {

class If final : public Statement {
 public:
  If(const StmtNode* s, NodePtr cond, StatementPtr then_case, StatementPtr else_case)
      : Statement(s),
        cond_(std::move(cond)),
        then_(std::move(then_case)),
        else_(std::move(else_case)) {}
  void exec(Frame& f) const override {
    enter(f);
    if (cond_->eval(f).i) {
      then_->exec(f);
    } else if (else_) {
      else_->exec(f);
    }
  }

 private:
  NodePtr cond_;
  StatementPtr then_, else_;
};

class Let final : public Statement {
 public:
  Let(const StmtNode* s, int slot, NodePtr value, StatementPtr body)
      : Statement(s), slot_(slot), value_(std::move(value)), body_(std::move(body)) {}
  void exec(Frame& f) const override {
    enter(f);
    bind(f, slot_, value_->eval(f));
    body_->exec(f);
  }

 private:
  int slot_;
  NodePtr value_;
  StatementPtr body_;
};

/// A statement that does nothing inside a nest (a barrier, a swizzle hint): counted only.
class Nothing final : public Statement {
 public:
  using Statement::Statement;
  void exec(Frame& f) const override { enter(f); }
};

class Store final : public Statement {
 public:
  static constexpr size_t kMaxRank = 8;
  /// `loaded`: the buffers (table numbers) the indices and the value load.
  Store(const StoreNode* s, int buffer, std::vector<NodePtr> indices,
        std::vector<std::pair<int, const VarNode*>> var_indices, NodePtr value,
        std::vector<int> loaded)
      : Statement(s),
        op_(s),
        buffer_(buffer),
        kind_(elem_kind(s->buffer->dtype)),
        value_float_(s->value.dtype().is_float()),
        indices_(std::move(indices)),
        var_indices_(std::move(var_indices)),
        value_(std::move(value)),
        loaded_(std::move(loaded)) {}
  void exec(Frame& f) const override {
    enter(f);
    int64_t idx[kMaxRank];
    eval_indices(f, indices_, var_indices_, idx);
    store(f, idx, value_->eval(f));
  }

  /// The values and indices of every iteration first (nothing is stored yet: the value reads no
  /// element an earlier iteration stores, see row_safe), then the stores in loop order, each
  /// after its iteration's step, and the loop variable's last binding (nothing between two
  /// stores reads it; an error or a stop discards the frame). A user error while computing the rows
  /// stores nothing and hands the row back to the loop, whose one-by-one run raises the generic
  /// error at its iteration; an out-of-bounds store raises at its iteration, after the earlier
  /// stores.
  bool run_row(Frame& f, const Row& row) const override {
    for (int b : loaded_) {
      if (b != buffer_ && f.tensors[b] == f.tensors[buffer_])
        return false;  // two names, one storage
    }
    const size_t rank = indices_.size();
    const int64_t n = row.n;
    // The values as doubles (a float value's .f, an integer's .i converted, as store() reads
    // them); an integer row stays integers until a store needs doubles (a store of integers
    // into an integer buffer does not).
    double* values = row_buffer(values_, n);
    const int64_t* ints = nullptr;
    try {
      if (value_float_) {
        value_->eval_row_f(f, row, values);
      } else {
        int64_t* i = row_buffer(ints_, n);
        value_->eval_row_i(f, row, i);
        ints = i;
      }
    } catch (const UserError&) {
      return false;
    }
    auto as_doubles = [&] {
      if (ints) {
        for (int64_t k = 0; k < n; ++k) values[k] = static_cast<double>(ints[k]);
        ints = nullptr;
      }
      return values;
    };
    HostTensor& t = *f.tensors[buffer_];
    const bool two_d = row.outer_slot >= 0;
    if (!var_indices_.empty()) {  // acc[i, j]: one stride along the row when all of it is inside
      if (auto a = row_access(f, row, var_indices_, t.shape())) {
        // The stores are in bounds: each iteration's step counts before its store, so where no
        // stop can come among them they may all count first (a 2-d row only so).
        if (enter_all(f, row.steps())) {
          if (!ints || a->step != 1 ||
              !element_access::store_int_row(kind_, t.data(), a->first, ints, n)) {
            store_all(t, a->first, a->step, as_doubles(), n);
          }
        } else if (two_d) {
          return false;
        } else {
          const double* v = as_doubles();
          for (int64_t k = 0; k < n; ++k) {
            enter(f);
            store_elem(kind_, t, a->first + k * a->step, v[k]);
          }
        }
        bind_last(f, row);
        return true;
      }
    }
    int64_t* rows = row_buffer(rows_, static_cast<int64_t>(rank) * n);
    try {
      eval_index_rows(f, row, indices_, var_indices_, rows);
    } catch (const UserError&) {
      return false;
    }
    as_doubles();
    if (two_d) return store_scattered(f, row, t, rows, values);
    int64_t idx[kMaxRank];
    for (int64_t k = 0; k < n; ++k) {
      enter(f);
      for (size_t d = 0; d < rank; ++d) idx[d] = rows[d * n + k];
      store(f, idx, values[k]);
    }
    bind_last(f, row);
    return true;
  }

 private:
  /// A 2-d row's stores at the positions of the index rows `rows` (rows[d * n + k]), all at
  /// once: true. False, storing and counting nothing, when one is out of bounds or a stop could
  /// fall among them (the loop then runs the iterations, which raises the error where it comes).
  bool store_scattered(Frame& f, const Row& row, HostTensor& t, const int64_t* rows,
                       const double* values) const {
    const std::vector<int64_t>& shape = t.shape();
    const int64_t n = row.n;
    if (shape.size() != indices_.size()) return false;
    uint64_t* flat = row_buffer(flat_, n);
    std::fill(flat, flat + n, 0);
    uint64_t outside = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t* r = rows + d * n;
      const uint64_t extent = static_cast<uint64_t>(shape[d]);
      for (int64_t k = 0; k < n; ++k) {
        outside |= static_cast<uint64_t>(static_cast<uint64_t>(r[k]) >= extent);
        flat[k] = flat[k] * extent + static_cast<uint64_t>(r[k]);
      }
    }
    if (outside || !enter_all(f, row.steps())) return false;
    uint8_t* data = t.data();
    if (kind_ == ElemKind::kF16) {
      uint16_t* bits = row_buffer(bits_, n);
      f16_bits_row(values, n, bits);
      for (int64_t k = 0; k < n; ++k) std::memcpy(data + flat[k] * 2, bits + k, 2);
    } else {
      for (int64_t k = 0; k < n; ++k)
        store_elem(kind_, t, static_cast<int64_t>(flat[k]), values[k]);
    }
    bind_last(f, row);
    return true;
  }

  /// values[k] at element first + k * step of `t` for k < n (all in bounds), the element kind
  /// tested once: f16 through f16_bits_row, which vectorises.
  void store_all(HostTensor& t, int64_t first, int64_t step, const double* values,
                 int64_t n) const {
    uint8_t* data = t.data();
    if (kind_ == ElemKind::kF16) {
      uint16_t* bits = row_buffer(bits_, n);
      f16_bits_row(values, n, bits);
      if (step == 1) {
        std::memcpy(data + first * 2, bits, static_cast<size_t>(n) * 2);
      } else {
        for (int64_t k = 0; k < n; ++k) std::memcpy(data + (first + k * step) * 2, bits + k, 2);
      }
    } else if (kind_ == ElemKind::kF32 && step == 1) {  // vectorises
      for (int64_t k = 0; k < n; ++k) {
        const float v = static_cast<float>(values[k]);
        std::memcpy(data + (first + k) * 4, &v, 4);
      }
    } else if (kind_ == ElemKind::kF32) {
      for (int64_t k = 0; k < n; ++k) {
        const float v = static_cast<float>(values[k]);
        std::memcpy(data + (first + k * step) * 4, &v, 4);
      }
    } else if (step != 1 || !element_access::store_int_row(kind_, data, first, values, n)) {
      for (int64_t k = 0; k < n; ++k) store_elem(kind_, t, first + k * step, values[k]);
    }
  }

  /// Writes `v` (the value as store_elem takes it) at `idx`, or raises the generic path's
  /// out-of-bounds error.
  void store(Frame& f, const int64_t* idx, double v) const {
    const size_t rank = indices_.size();
    HostTensor& t = *f.tensors[buffer_];
    const std::vector<int64_t>& shape = t.shape();
    int64_t flat = 0;
    bool inside = rank == shape.size();
    for (size_t d = 0; inside && d < rank; ++d) {
      inside = idx[d] >= 0 && idx[d] < shape[d];
      flat = flat * shape[d] + idx[d];
    }
    if (!inside) {
      flat = checked_flat_index(f.block, f.thread, op_->buffer, t,
                                std::vector<int64_t>(idx, idx + rank), "store to");
    }
    store_elem(kind_, t, flat, v);
  }
  void store(Frame& f, const int64_t* idx, Value v) const {
    store(f, idx, value_float_ ? v.f : static_cast<double>(v.i));
  }

  const StoreNode* op_;
  int buffer_;
  ElemKind kind_;
  bool value_float_;
  std::vector<NodePtr> indices_;
  std::vector<std::pair<int, const VarNode*>> var_indices_;  ///< variable_indices
  NodePtr value_;
  std::vector<int> loaded_;
  mutable std::vector<int64_t> rows_;   ///< run_row's index rows
  mutable std::vector<int64_t> ints_;   ///< run_row's integer values
  mutable std::vector<uint64_t> flat_;  ///< a 2-d row's flat positions
  mutable std::vector<double> values_;
  mutable std::vector<uint16_t> bits_;
};

StatementPtr compile_stmt(const Stmt& s, Tables& tables);

/// Records that `var` is bound at the current loop depth (for the invariance of expressions).
void bound_here(const Var& var, Tables& tables) {
  int& d = tables.depth_of[static_cast<const VarNode*>(var.get())];
  d = std::max(d, tables.depth);
}

/// Whether the iterations of `loop` may run as one row (Statement::run_row): its body is one
/// store, one of whose indices is the loop's variable (so no two iterations store to one
/// element), and every load of the stored buffer is in the value at the store's own indices
/// (so it reads the element its iteration stores, which no earlier iteration stored).
bool row_safe(const ForNode* loop) {
  const auto* store = loop->body.as<StoreNode>();
  if (!store) return false;
  const BufferNode* stored = store->buffer.get();
  bool distinct = false;
  for (const Expr& i : store->indices) distinct = distinct || i.same_as(loop->var);
  if (!distinct) return false;
  bool safe = true;
  for (const Expr& i : store->indices) {
    pre_order_visit(i, [&](const Expr& x) {
      if (const auto* load = x.as<BufferLoadNode>()) safe = safe && load->buffer.get() != stored;
    });
  }
  pre_order_visit(store->value, [&](const Expr& x) {
    const auto* load = x.as<BufferLoadNode>();
    if (!load || load->buffer.get() != stored) return;
    bool same = load->indices.size() == store->indices.size();
    for (size_t d = 0; same && d < load->indices.size(); ++d)
      same = structural_equal(load->indices[d], store->indices[d]);
    safe = safe && same;
  });
  return safe;
}

/// Whether several iterations of `loop` may run together with its body loop's as one 2-d row:
/// the body is a loop whose iterations run as a row (row_safe), whose bounds do not read
/// `loop`'s variable, and whose store has `loop`'s variable as an index too (so no two
/// iterations of the pair store to one element).
bool collapses(const ForNode* loop) {
  const auto* inner = loop->body.as<ForNode>();
  if (!inner || !row_safe(inner)) return false;
  bool reads = false;
  for (const Expr* bound : {&inner->min, &inner->extent}) {
    pre_order_visit(*bound, [&](const Expr& x) { reads = reads || x.same_as(loop->var); });
  }
  bool indexed = false;
  for (const Expr& i : inner->body.as<StoreNode>()->indices)
    indexed = indexed || i.same_as(loop->var);
  return !reads && indexed;
}

std::unique_ptr<Loop> compile_loop(const ForNode* op, Tables& tables) {
  NodePtr min = compile_expr(op->min, tables, {}), extent = compile_expr(op->extent, tables, {});
  ++tables.depth;
  bound_here(op->var, tables);
  StatementPtr body = compile_stmt(op->body, tables);
  --tables.depth;
  if (!min || !extent || !body) return nullptr;
  const int slot = tables.slot(static_cast<const VarNode*>(op->var.get()));
  return std::make_unique<Loop>(op, slot, std::move(min), std::move(extent), std::move(body),
                                row_safe(op), collapses(op));
}

StatementPtr compile_stmt(const Stmt& s, Tables& tables) {
  switch (s.kind()) {
    case StmtKind::kSeq: {
      std::vector<StatementPtr> body;
      for (const Stmt& c : s.as<SeqNode>()->stmts) {
        body.push_back(compile_stmt(c, tables));
        if (!body.back()) return nullptr;
      }
      return std::make_unique<Seq>(s.get(), std::move(body));
    }
    case StmtKind::kFor:
      return compile_loop(s.as<ForNode>(), tables);
    case StmtKind::kIf: {
      const auto* op = s.as<IfNode>();
      NodePtr cond = compile_expr(op->cond, tables, {});
      StatementPtr then_case = compile_stmt(op->then_case, tables), else_case;
      if (op->else_case.defined() && !(else_case = compile_stmt(op->else_case, tables)))
        return nullptr;
      if (!cond || !then_case) return nullptr;
      return std::make_unique<If>(s.get(), std::move(cond), std::move(then_case),
                                  std::move(else_case));
    }
    case StmtKind::kLet: {
      const auto* op = s.as<LetNode>();
      NodePtr value = compile_expr(op->value, tables, {});
      bound_here(op->var, tables);
      StatementPtr body = compile_stmt(op->body, tables);
      if (!value || !body) return nullptr;
      const int slot = tables.slot(static_cast<const VarNode*>(op->var.get()));
      return std::make_unique<Let>(s.get(), slot, std::move(value), std::move(body));
    }
    case StmtKind::kStore: {
      const auto* op = s.as<StoreNode>();
      if (op->indices.size() > Store::kMaxRank || op->buffer->dtype.lanes != 1) return nullptr;
      IndexContext ctx{"store to", op->buffer.get(), &op->indices};
      std::vector<NodePtr> indices;
      if (!compile_indices(op->indices, tables, ctx, indices)) return nullptr;
      NodePtr value = compile_expr(op->value, tables, {});
      if (!value) return nullptr;
      std::vector<int> loaded;
      auto note_loads = [&](const Expr& e) {
        pre_order_visit(e, [&](const Expr& x) {
          if (const auto* load = x.as<BufferLoadNode>())
            loaded.push_back(tables.buffer(load->buffer));
        });
      };
      for (const Expr& i : op->indices) note_loads(i);
      note_loads(op->value);
      return std::make_unique<Store>(op, tables.buffer(op->buffer), std::move(indices),
                                     variable_indices(op->indices, tables), std::move(value),
                                     std::move(loaded));
    }
    case StmtKind::kBarrier:
    case StmtKind::kUseSwizzle:
      return std::make_unique<Nothing>(s.get());
    default:  // tile operators, allocations, prints, intrinsics: the generic path runs them
      return nullptr;
  }
}

}  // namespace

/// One compiled nest and the variables and buffers it reads.
class Program {
 public:
  explicit Program(const ForNode* loop) {
    for_each_stmt(loop->body, [&](const Stmt& s) {
      if (const auto* store = s.as<StoreNode>()) tables.stored.insert(store->buffer.get());
    });
    // The sub-expressions that occur more than once in one store (its indices and value).
    for_each_stmt(loop->body, [&](const Stmt& s) {
      const auto* store = s.as<StoreNode>();
      if (!store) return;
      decltype(tables.uses) mine;
      auto count = [&](const Expr& e) {
        pre_order_visit(e, [&](const Expr& x) {
          if (x.tree_size() >= Tables::kMinReuse && x.tree_size() <= Tables::kMaxReuse) ++mine[x];
        });
      };
      for (const Expr& i : store->indices) count(i);
      count(store->value);
      for (const auto& [x, n] : mine) {
        if (n > 1) tables.uses[x] = n;
      }
    });
    root = compile_loop(loop, tables);
  }
  Tables tables;
  std::unique_ptr<Loop> root;  ///< null when the nest cannot be compiled
};

}  // namespace tile_parallel

bool parallel_nest_compiles(const ForNode* loop) {
  return tile_parallel::Program(loop).root != nullptr;
}

ParallelCache::ParallelCache() = default;
ParallelCache::~ParallelCache() = default;

bool ParallelCache::run(const ForNode* loop, BlockState& block, int thread, StepCounter& steps) {
  auto it = programs_.find(loop);
  if (it == programs_.end()) {
    auto program = std::make_unique<tile_parallel::Program>(loop);
    it = programs_.emplace(loop, program->root ? std::move(program) : nullptr).first;
  }
  const tile_parallel::Program* p = it->second.get();
  if (!p) return false;
  const auto& buffers = p->tables.buffers();
  tensors_.resize(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    tensors_[b] = block.find_storage(buffers[b], thread);
    if (!tensors_[b] || tensors_[b]->dtype() != buffers[b]->dtype) return false;
  }
  const auto& vars = p->tables.vars();
  auto& map = block.thread(thread).vars;
  slots_.assign(vars.size(), Value{});
  bound_.assign(vars.size(), 0);
  assigned_.assign(vars.size(), 0);
  for (size_t v = 0; v < vars.size(); ++v) {
    const Value* found = block.find_var(vars[v], thread);
    if (!found) continue;
    slots_[v] = *found;
    bound_[v] = 1;
  }
  version_.assign(vars.size(), 0);
  tile_parallel::Frame frame{
      block,           thread,          steps, slots_.data(), bound_.data(), assigned_.data(),
      tensors_.data(), version_.data(), 0,     ++runs_};
  p->root->run(frame);
  for (size_t v = 0; v < vars.size(); ++v) {
    if (assigned_[v]) map[vars[v]] = slots_[v];
  }
  return true;
}

}  // namespace tessel
