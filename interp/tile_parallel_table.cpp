// Lookup tables for the sub-expressions of a compiled T.Parallel nest whose value is decided by
// one 8-bit load and at most one remainder by a small constant: a dequantising kernel's decode of
// a packed field, `decode(B_local[i, j // 2], j % 2)`, or NF4's `lut[decode(...)]` through a
// small buffer of code values. The value of every input pair is computed once by the generic
// evaluator; each element is then a lookup.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "core/expr_functor.h"
#include "interp/scalar_eval.h"
#include "interp/tile_parallel_nodes.h"

namespace tessel::tile_parallel {

namespace {

/// The inputs of a finite-domain sub-expression: a load of an 8-bit integer buffer (`byte`) and
/// optionally one remainder `a % c` with a literal 1 <= c <= kMaxRemainder (`pos`), each
/// possibly occurring several times (structurally equal); and the small buffers it loads from at
/// indices of those inputs (`lookups`: NF4's table of code values), which the nest does not store.
struct Domain {
  Expr byte, pos;
  std::vector<Buffer> lookups;
  int ops = 0;  ///< operations outside the inputs
  bool ok = true;
};
constexpr int64_t kMaxRemainder = 16;
constexpr int64_t kByteValues = 256;
/// The most elements of a lookup buffer: its bytes are compared with the table's at every row.
constexpr int64_t kMaxLookup = 256;

bool is_byte_load(const Expr& e) {
  const DataType t = e.dtype();
  return e.kind() == ExprKind::kBufferLoad && t.lanes == 1 && (t.is_int() || t.is_uint()) &&
         t.bits == 8;
}

/// The divisor of `e` when it is a remainder by a literal 1 .. kMaxRemainder, else 0.
int64_t small_remainder(const Expr& e) {
  const auto* mod = e.as<FloorModNode>();
  const auto* c = mod ? mod->b.as<IntImmNode>() : nullptr;
  return c && c->value >= 1 && c->value <= kMaxRemainder ? c->value : 0;
}

/// Records `input` as the domain's byte or pos; false when it holds a different one already.
bool same_input(Expr& slot, const Expr& input) {
  if (slot.defined() && !structural_equal(slot, input)) return false;
  slot = input;
  return true;
}

/// Whether `e` loads from a buffer of at most kMaxLookup scalar elements that `tables`' nest does
/// not store to.
bool is_lookup(const Expr& e, const Tables& tables) {
  const auto* load = e.as<BufferLoadNode>();
  if (!load) return false;
  const BufferNode* b = load->buffer.get();
  const std::optional<int64_t> size = b->const_size();
  return b->dtype.lanes == 1 && size && *size <= kMaxLookup && !tables.stored.count(b);
}

/// Walks `e` outside its inputs: anything that reads a variable, another buffer (but a lookup's),
/// another lane or a vector makes the value depend on more than the domain.
void scan(const Expr& e, const Tables& tables, Domain& d) {
  if (!d.ok) return;
  if (e.dtype().lanes != 1) {
    d.ok = false;
  } else if (is_byte_load(e)) {
    d.ok = same_input(d.byte, e);
  } else if (small_remainder(e)) {
    d.ok = same_input(d.pos, e);
  } else if (is_lookup(e, tables)) {
    const auto* load = e.as<BufferLoadNode>();
    ++d.ops;
    if (std::none_of(d.lookups.begin(), d.lookups.end(),
                     [&](const Buffer& b) { return b.get() == load->buffer.get(); })) {
      d.lookups.push_back(load->buffer);
    }
    for (const Expr& i : load->indices) scan(i, tables, d);
  } else if (e.kind() == ExprKind::kVar || e.kind() == ExprKind::kBufferLoad ||
             (e.kind() == ExprKind::kCall && is_shuffle(e.as<CallNode>()->op))) {
    d.ok = false;
  } else if (e.kind() != ExprKind::kIntImm && e.kind() != ExprKind::kFloatImm) {
    ++d.ops;
    for (const Expr& c : expr_children(e)) scan(c, tables, d);
  }
}

/// `e` with its inputs replaced by the variables `byte` and `pos`.
class ReplaceInputs final : public ExprMutator {
 public:
  ReplaceInputs(const Domain& d, Var byte, Var pos) : d_(d), byte_(byte), pos_(pos) {}

 protected:
  Expr visit_BufferLoad(const BufferLoadNode* op, const Expr& e) override {
    return structural_equal(e, d_.byte) ? byte_ : ExprMutator::visit_BufferLoad(op, e);
  }
  Expr visit_FloorMod(const FloorModNode* op, const Expr& e) override {
    if (d_.pos.defined() && structural_equal(e, d_.pos)) return pos_;
    return ExprMutator::visit_FloorMod(op, e);
  }

 private:
  const Domain& d_;
  Var byte_, pos_;
};

/// A finite-domain sub-expression: eval and rows whose table cannot be built run `original`, the
/// expression compiled as usual; other rows evaluate the inputs' rows and look the values up.
/// The table holds, for each byte b and remainder p, the Value the generic evaluator gives the
/// expression with the inputs replaced by variables bound to b and p: exactly what it gives the
/// expression itself where the inputs take those values and the lookup buffers hold what they
/// held when the table was built. It is built on the first row, in the block and thread of that
/// row, and again on a row that finds a lookup buffer's bytes changed (kMaxBuilds times at most;
/// then `original` runs); an error for any pair (a division by the byte, a lookup out of bounds)
/// leaves the node to `original`, which raises it only where an iteration meets it.
class Table final : public Node {
 public:
  Table(NodePtr original, NodePtr byte, NodePtr pos, Expr replaced, Var byte_var, Var pos_var,
        int64_t byte_lo, int64_t pos_count, std::vector<int> lookups)
      : original_(std::move(original)),
        byte_(std::move(byte)),
        pos_(std::move(pos)),
        replaced_(std::move(replaced)),
        byte_var_(std::move(byte_var)),
        pos_var_(std::move(pos_var)),
        byte_lo_(byte_lo),
        pos_count_(pos_count),
        lookups_(std::move(lookups)) {}

  Value eval(Frame& f) const override { return original_->eval(f); }
  void eval_row(Frame& f, const Row& row, Value* out) const override {
    if (!built(f)) return original_->eval_row(f, row, out);
    look_up(f, row, out, values_);
  }
  void eval_row_f(Frame& f, const Row& row, double* out) const override {
    if (!built(f)) return original_->eval_row_f(f, row, out);
    look_up(f, row, out, floats_);
  }
  void eval_row_i(Frame& f, const Row& row, int64_t* out) const override {
    if (!built(f)) return original_->eval_row_i(f, row, out);
    look_up(f, row, out, ints_);
  }

 private:
  enum class State { kUnbuilt, kBuilt, kRefused };
  static constexpr int kMaxBuilds = 16;

  bool built(Frame& f) const {
    for (int id : lookups_) {
      if (!f.tensors[id]) return false;  // not allocated here: `original` says so
    }
    if (state_ == State::kBuilt && !lookups_unchanged(f)) {
      state_ = State::kUnbuilt;
      if (builds_ == kMaxBuilds) refuse();
    }
    if (state_ == State::kUnbuilt) build(f);
    return state_ == State::kBuilt;
  }

  static size_t bytes_of(const HostTensor& t) {
    return static_cast<size_t>(t.dtype().storage_bytes(t.size()));
  }

  /// Whether the lookup buffers hold the bytes they held when the table was built.
  bool lookups_unchanged(Frame& f) const {
    size_t at = 0;
    for (int id : lookups_) {
      const HostTensor& t = *f.tensors[id];
      const size_t n = bytes_of(t);
      if (at + n > snapshot_.size() || std::memcmp(snapshot_.data() + at, t.data(), n) != 0) {
        return false;
      }
      at += n;
    }
    return at == snapshot_.size();
  }

  /// `original` runs from now on; the table's storage goes.
  void refuse() const {
    state_ = State::kRefused;
    values_ = {};
    floats_ = {};
    ints_ = {};
    snapshot_ = {};
  }

  void build(Frame& f) const {
    state_ = State::kRefused;
    ++builds_;
    snapshot_.clear();
    for (int id : lookups_) {
      const HostTensor& t = *f.tensors[id];
      snapshot_.insert(snapshot_.end(), t.data(), t.data() + bytes_of(t));
    }
    auto& vars = f.block.thread(f.thread).vars;
    const VarNode *byte = byte_var_.as<VarNode>(), *pos = pos_var_.as<VarNode>();
    const size_t size = static_cast<size_t>(kByteValues * pos_count_);
    values_.resize(size);
    bool complete = true;
    try {
      for (int64_t p = 0; p < pos_count_; ++p) {
        vars[pos] = Value::of_int(p);
        for (int64_t b = 0; b < kByteValues; ++b) {
          vars[byte] = Value::of_int(byte_lo_ + b);
          values_[static_cast<size_t>(p * kByteValues + b)] =
              eval_scalar(replaced_, f.block, f.thread);
        }
      }
    } catch (const UserError&) {
      complete = false;  // original_ raises it where an iteration meets it
    }
    vars.erase(byte);
    vars.erase(pos);
    if (!complete) return refuse();
    floats_.resize(size);
    ints_.resize(size);
    for (size_t k = 0; k < size; ++k) {
      floats_[k] = values_[k].f;
      ints_[k] = values_[k].i;
    }
    state_ = State::kBuilt;
  }

  template <typename T>
  void look_up(Frame& f, const Row& row, T* out, const std::vector<T>& table) const {
    const int64_t n = row.n;
    int64_t* at = row_buffer(at_, n);
    byte_->eval_row_i(f, row, at);
    const int64_t* p = nullptr;
    if (pos_) {
      int64_t* r = row_buffer(pos_row_, n);
      pos_->eval_row_i(f, row, r);
      p = r;
    }
    // Locals, not members: a store through at (int64_t*) may alias them, which would keep the
    // loop scalar.
    const uint64_t size = table.size();
    const int64_t lo = byte_lo_;
    uint64_t outside = 0;
    for (int64_t k = 0; k < n; ++k) {
      at[k] += (p ? p[k] * kByteValues : 0) - lo;
      outside |= static_cast<uint64_t>(static_cast<uint64_t>(at[k]) >= size);
    }
    internal_check(outside == 0, "a byte or remainder outside its table");
    for (int64_t k = 0; k < n; ++k) out[k] = table[static_cast<size_t>(at[k])];
  }

  NodePtr original_, byte_, pos_;
  Expr replaced_;
  Var byte_var_, pos_var_;
  int64_t byte_lo_, pos_count_;
  std::vector<int> lookups_;  ///< the lookup buffers' frame tensors
  mutable State state_ = State::kUnbuilt;
  mutable int builds_ = 0;
  mutable std::vector<uint8_t> snapshot_;  ///< the lookup buffers' bytes the table was built with
  mutable std::vector<Value> values_;
  mutable std::vector<double> floats_;
  mutable std::vector<int64_t> ints_;
  mutable std::vector<int64_t> at_, pos_row_;
};

}  // namespace

NodePtr compile_table(const Expr& e, Tables& tables, const IndexContext& ctx) {
  if (!tables.tabulate) return nullptr;
  Domain d;
  scan(e, tables, d);
  // Three operations at least: a cast or a shift alone is cheaper than a lookup.
  if (!d.ok || !d.byte.defined() || d.ops < 3) return nullptr;
  tables.tabulate = false;  // nothing to tabulate inside a table's own expression
  NodePtr original = compile_expr(e, tables, ctx);
  // The inputs are evaluated once a row, by the table alone: a cache of their rows for other
  // occurrences (Reuse) or from row to row (RowMemo, for the remainder) would only copy them.
  const int enclosing = tables.enclosing_uses;
  tables.enclosing_uses = std::numeric_limits<int>::max();
  NodePtr byte = compile_expr(d.byte, tables, ctx), pos;
  if (d.pos.defined()) {
    const bool memo = tables.memo;
    tables.memo = false;
    pos = compile_expr(d.pos, tables, ctx);
    tables.memo = memo;
  }
  tables.enclosing_uses = enclosing;
  tables.tabulate = true;
  if (!original || !byte || (d.pos.defined() && !pos)) return nullptr;
  const DataType byte_type = d.byte.dtype();
  Var byte_var("table_byte", byte_type), pos_var("table_pos", DataType::i64());
  if (d.pos.defined()) pos_var = Var("table_pos", d.pos.dtype());
  Expr replaced = ReplaceInputs(d, byte_var, pos_var).mutate(e);
  const int64_t byte_lo = byte_type.is_int() ? -(int64_t{1} << (byte_type.bits - 1)) : 0;
  const int64_t pos_count = d.pos.defined() ? small_remainder(d.pos) : 1;
  std::vector<int> lookups;
  for (const Buffer& b : d.lookups) lookups.push_back(tables.buffer(b));
  return std::make_unique<Table>(std::move(original), std::move(byte), std::move(pos),
                                 std::move(replaced), std::move(byte_var), std::move(pos_var),
                                 byte_lo, pos_count, std::move(lookups));
}

}  // namespace tessel::tile_parallel
