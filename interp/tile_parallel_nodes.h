// The pieces of a compiled T.Parallel nest (interp/tile_parallel.h): the frame a nest runs in and
// the compiled expression nodes, each a closure over slot-indexed variables and buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/expr.h"
#include "interp/block_state.h"
#include "interp/element_access.h"
#include "interp/run_control.h"

namespace tessel::tile_parallel {

using element_access::elem_kind;
using element_access::ElemKind;
using element_access::f16_bits_row;
using element_access::load_elem;
using element_access::round_f16;
using element_access::store_elem;

/// What one run of a compiled nest reads and writes: the block and the thread whose context the
/// nest runs in, one slot per variable the nest reads or binds (with whether it holds a value, as
/// the thread's variable map would), and the storage of each buffer it touches.
struct Frame {
  BlockState& block;
  int thread;
  StepCounter& steps;
  Value* slots;
  uint8_t* bound;     ///< per slot: 1 when the slot holds a value
  uint8_t* assigned;  ///< per slot: 1 when the nest bound it (written back at the end)
  HostTensor* const* tensors;
  /// Loop-invariant sub-expressions are cached (see Memo in tile_parallel_expr.cpp): a slot's
  /// version is the tick at which it was last bound; `run` numbers the runs of the cache.
  uint64_t* version;
  uint64_t tick;
  uint64_t run;
  /// Counts the statements entered in this run: a sub-expression that occurs several times in one
  /// statement is evaluated once per value of (run, statement, tick) (Reuse in
  /// tile_parallel_expr.cpp).
  uint64_t statement = 0;
};

/// The value in `slot` of variable `var`; a user error when the nest reads it where it is not
/// bound (as the generic evaluator's variable lookup).
inline Value read_slot(const Frame& f, int slot, const VarNode* var) {
  if (!f.bound[slot]) {
    user_error("kernel '" + f.block.kernel()->name + "': variable '" + var->name +
               "' is used outside the scope that defines it");
  }
  return f.slots[slot];
}

/// The iterations of an innermost loop evaluated together: its variable's slot and the values
/// lo .. lo + n - 1 it takes. A 2-d row (outer_slot set) is several iterations of the loop
/// around it as well (Loop's rows over a 2-d nest): iteration k binds that loop's variable to
/// outer_lo + k / inner_n and the innermost's to lo + k % inner_n.
struct Row {
  int slot;
  int64_t lo;
  int64_t n;
  int outer_slot = -1;  ///< -1: the innermost loop's iterations alone
  int64_t outer_lo = 0;
  int64_t inner_n = 0;

  /// The innermost loop's iterations in one pass, and the passes.
  int64_t inner() const { return outer_slot < 0 ? n : inner_n; }
  int64_t outer_count() const { return outer_slot < 0 ? 1 : n / inner_n; }
  /// The statements the row's iterations enter: a store each, and in a 2-d row the innermost
  /// loop itself once a pass.
  int64_t steps() const { return outer_slot < 0 ? n : n + n / inner_n; }
};

/// When `slot` is one of the row's variables: out[k] = make(its value at iteration k) for every
/// k < row.n, and true. False, writing nothing, for any other variable.
template <typename T, typename Make>
inline bool row_variable(const Row& row, int slot, T* out, Make&& make) {
  if (slot != row.slot && slot != row.outer_slot) return false;
  const int64_t inner = row.inner();
  for (int64_t o = 0; o < row.outer_count(); ++o) {
    T* pass = out + o * inner;
    if (slot == row.slot) {
      for (int64_t i = 0; i < inner; ++i) pass[i] = make(row.lo + i);
    } else {
      std::fill(pass, pass + inner, make(row.outer_lo + o));
    }
  }
  return true;
}

/// Binds variable `slot` to v as an iteration of a row does (the store binds the row's last
/// iteration for good).
inline void bind_iteration(Frame& f, int slot, int64_t v) {
  f.slots[slot] = Value::of_int(v);
  f.version[slot] = ++f.tick;
  f.bound[slot] = 1;
}

/// A compiled expression. eval returns exactly what the generic evaluator (scalar_eval.cpp)
/// returns for the same expression in the same state, errors included.
class Node {
 public:
  virtual ~Node() = default;
  virtual Value eval(Frame& f) const = 0;
  /// out[k] = eval with the row's variable bound to lo + k, for every k < n: by default eval
  /// itself with the variable bound in turn, as the loop binds it; nodes override it to compute
  /// the row one operation at a time. Requires: the expression reads no element that an
  /// iteration of the row stores before it (the row's store has it checked). A user error may
  /// come from any iteration, not necessarily the first in loop order: the caller then runs the
  /// iterations one by one, which raises the generic path's error.
  virtual void eval_row(Frame& f, const Row& row, Value* out) const;
  /// The row as plain arrays: out[k] = eval_row's out[k].f (eval_row_f) or .i (eval_row_i), with
  /// the same errors. By default through eval_row; a node overrides the one of its own type
  /// (floats, integers) with loops over plain arrays, which the compiler vectorises, and derives
  /// eval_row and the other from it.
  virtual void eval_row_f(Frame& f, const Row& row, double* out) const;
  virtual void eval_row_i(Frame& f, const Row& row, int64_t* out) const;

 protected:
  mutable std::vector<Value> values_;  ///< the defaults' row of Values
};

/// `buffer` with room for n elements (a node's scratch row; each worker compiles its own nodes).
template <typename T>
inline T* row_buffer(std::vector<T>& buffer, int64_t n) {
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
  return buffer.data();
}
using NodePtr = std::unique_ptr<const Node>;

/// The access whose indices an expression is part of, for division-by-zero messages.
struct IndexContext {
  const char* access = nullptr;  ///< "load of", "store to"; null outside an index
  const BufferNode* buffer = nullptr;
  const std::vector<Expr>* indices = nullptr;
};

struct ReuseCache;  // tile_parallel_expr.cpp

/// Numbers the variables and buffers of one nest while it is compiled.
class Tables {
 public:
  int slot(const VarNode* v);
  int buffer(const Buffer& b);
  const std::vector<const VarNode*>& vars() const { return vars_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }

  // Where a sub-expression is invariant in the innermost loop around it (compile_expr then caches
  // its value): the loop depth of the statement being compiled (0: outside every loop of the
  // nest), the deepest loop depth at which each variable is bound in the nest, the buffers the
  // nest stores to (a load of those is never cached), and whether caching is on.
  int depth = 0;
  std::unordered_map<const VarNode*, int> depth_of;
  std::unordered_set<const BufferNode*> stored;
  bool memo = true;
  /// Whether a finite-domain sub-expression may become a lookup table (compile_table); off
  /// inside a table's own expression.
  bool tabulate = true;
  /// The sub-expressions of kMinReuse to kMaxReuse nodes that occur more than once in one store
  /// of the nest, up to structural equality (fp4's decoded field occurs seven times in one
  /// weight), with their count; and the value cache the occurrences of each share.
  struct StructuralHash {
    size_t operator()(const Expr& e) const { return structural_hash(e); }
  };
  struct StructuralEqual {
    bool operator()(const Expr& a, const Expr& b) const { return structural_equal(a, b); }
  };
  static constexpr uint64_t kMinReuse = 3, kMaxReuse = 256;
  std::unordered_map<Expr, int, StructuralHash, StructuralEqual> uses;
  std::unordered_map<Expr, std::shared_ptr<ReuseCache>, StructuralHash, StructuralEqual> reuse;
  int enclosing_uses = 1;  ///< the count of the repeated sub-expression being compiled (1: none)

 private:
  std::unordered_map<const VarNode*, int> slot_of_;
  std::unordered_map<const BufferNode*, int> buffer_of_;
  std::vector<const VarNode*> vars_;
  std::vector<Buffer> buffers_;
};

/// The compiled form of `e`, or null when `e` holds something only the generic evaluator runs
/// (a warp shuffle, a load of rank above 8, a vector dtype).
NodePtr compile_expr(const Expr& e, Tables& tables, const IndexContext& ctx);

/// A lookup table for `e` when its value is decided by one 8-bit load and at most one remainder by
/// a small literal, through at least three operations (tile_parallel_table.cpp); null otherwise.
NodePtr compile_table(const Expr& e, Tables& tables, const IndexContext& ctx);

/// The compiled indices of a load or store (`ctx` names it in out-of-bounds errors); false when
/// one of them cannot be compiled.
bool compile_indices(const std::vector<Expr>& indices, Tables& tables, const IndexContext& ctx,
                     std::vector<NodePtr>& out);

/// The slots of `indices` when every index is a variable (acc[i, j]): a load or store then reads
/// them straight from the frame instead of through a compiled node each. Empty otherwise.
std::vector<std::pair<int, const VarNode*>> variable_indices(const std::vector<Expr>& indices,
                                                             Tables& tables);

/// Where the iterations of `row` access a buffer whose indices are all variables (see
/// variable_indices): the flat position of iteration k is first + k * step, when every index of
/// every iteration lies inside `shape`; nullopt otherwise (some iteration is out of bounds, or
/// a 2-d row's positions are not one stride: the caller then takes the checked path, which
/// raises the error at that iteration). Variables other than the row's are read from the frame
/// (a user error where unbound).
struct RowAccess {
  int64_t first, step;
};
inline std::optional<RowAccess> row_access(const Frame& f, const Row& row,
                                           const std::vector<std::pair<int, const VarNode*>>& vars,
                                           const std::vector<int64_t>& shape) {
  if (vars.size() != shape.size()) return std::nullopt;
  int64_t first = 0, step = 0, outer_step = 0;
  for (size_t d = 0; d < vars.size(); ++d) {
    first *= shape[d];
    step *= shape[d];
    outer_step *= shape[d];
    if (vars[d].first == row.slot) {
      if (row.lo < 0 || row.lo + row.inner() > shape[d]) return std::nullopt;
      first += row.lo;
      step += 1;
    } else if (vars[d].first == row.outer_slot) {
      if (row.outer_lo < 0 || row.outer_lo + row.outer_count() > shape[d]) return std::nullopt;
      first += row.outer_lo;
      outer_step += 1;
    } else {
      const int64_t i = read_slot(f, vars[d].first, vars[d].second).i;
      if (i < 0 || i >= shape[d]) return std::nullopt;
      first += i;
    }
  }
  if (row.outer_slot >= 0 && outer_step != step * row.inner_n) return std::nullopt;
  return RowAccess{first, step};
}

/// The indices of an access for the frame's bindings into idx: each index's compiled node, or,
/// where every index is a variable (variable_indices, non-empty), the variables' slots directly.
inline void eval_indices(Frame& f, const std::vector<NodePtr>& indices,
                         const std::vector<std::pair<int, const VarNode*>>& vars, int64_t* idx) {
  if (vars.empty()) {
    for (size_t d = 0; d < indices.size(); ++d) idx[d] = indices[d]->eval(f).i;
  } else {
    for (size_t d = 0; d < vars.size(); ++d) idx[d] = read_slot(f, vars[d].first, vars[d].second).i;
  }
}

/// The same over a row: rows[d * row.n + k] is index d at the row's iteration k.
inline void eval_index_rows(Frame& f, const Row& row, const std::vector<NodePtr>& indices,
                            const std::vector<std::pair<int, const VarNode*>>& vars,
                            int64_t* rows) {
  for (size_t d = 0; d < indices.size(); ++d) {
    int64_t* r = rows + d * row.n;
    if (vars.empty()) {
      indices[d]->eval_row_i(f, row, r);
    } else if (!row_variable(row, vars[d].first, r, [](int64_t v) { return v; })) {
      std::fill(r, r + row.n, read_slot(f, vars[d].first, vars[d].second).i);
    }
  }
}

/// "kernel 'K', block (1, 0), thread 3 (at file:line)" for runtime errors.
std::string thread_where(const BlockState& block, int thread);

}  // namespace tessel::tile_parallel
