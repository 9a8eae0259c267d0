// Layout and Fragment: the index maps of the paper's §4.1 (memory layouts and register partitions).
//
// ## Which way the map goes
//
// A `Layout` maps the index a program writes, `A[i, j]`, to the index where the element is stored:
// `f : Z^n -> Z^m`, given as `forward_index` expressions over `iter_vars` (one per input
// dimension, each ranging over [0, extent)). The map points from the *logical* index to the
// *physical* one because that is the direction code needs: lowering rewrites every access
// `A[i, j]` into `A_phys[f(i, j)]`, the bank model evaluates `f` per lane, and Z3 proves
// properties of `f` for all inputs. The reverse direction is `inverse()`, defined only where `f`
// is a bijection onto its output box.
//
// The output shape is not given by the user: it is read off the expressions, as the paper does —
// the analyzer bounds each `forward_index[d]` over the iter-var ranges, and the extent is
// `max + 1` (outputs are never negative); it is computed once, at construction. A layout need
// not be a bijection: padding leaves holes in the output (non-surjective), and the verify/
// prover reports collisions (non-injective).
//
// Example 1 — `padded(4, 4, 1)`: `Layout([4, 4], lambda i, j: i * 5 + j)`, output shape [19]
// (the largest offset is 3 * 5 + 3 = 18):
//
//     i\j | 0  1  2  3
//     ----+------------        offsets 4, 9 and 14 are holes: the layout is
//      0  | 0  1  2  3         injective, not surjective; row i starts at bank 5·i
//      1  | 5  6  7  8         (4-byte elements), so a column read hits 4 banks.
//      2  | 10 11 12 13
//      3  | 15 16 17 18
//
// A `Fragment` maps an index to `(thread, local)`: which thread of the block holds the element
// and at which position of that thread's local register array. `forward_thread` may also depend
// on a replicate variable `rep` in [0, replicate): with replicate = R every element lives in R
// threads (a bias vector read by every column-thread of an accumulator, Fig. 7 of the paper).
//
// Example 2 — `mma_m16n8k16_c(f32)`: `Fragment([16, 8], lambda i, j: (i % 8 * 4 + j // 2,
// i // 8 * 2 + j % 2), replicate=1)`, 32 threads, 4 registers each:
//
//     i\j |   0      1      2      3    ...  7        T5 R2 = element (9, 2):
//     ----+---------------------------------------    lane 5: g = 5 >> 2 = 1, t = 5 % 4 = 1;
//      0  | T0R0   T0R1   T1R0   T1R1  ... T3R1      register 2: row g + 8 = 9,
//      1  | T4R0   T4R1   T5R0   T5R1  ... T7R1      col 2t = 2.
//      8  | T0R2   T0R3   T1R2   T1R3  ... T3R3
//      9  | T4R2   T4R3   T5R2   T5R3  ... T7R3
//
// ## Operations
//
// - evaluation: `map(index)`, `map_fragment(index, rep)` (exact, Python integer semantics);
// - `inverse()` (bijective layouts only: affine mixed-radix maps and GF(2)-linear maps on
//   power-of-two boxes, which covers XOR swizzles and every MMA fragment);
// - `then(next)`: composition, first this layout then `next` (also into a Fragment);
// - `reshape(shape)`: the same map seen through a row-major re-indexing of the input;
// - Fragment primitives of Fig. 6: `repeat(repeats, on_thread, lower_dim_first)` (tile the index
//   space; the copies go to new registers, or with `on_thread` to new threads),
//   `repeat_on_thread`, `replicate(n)` (n times more threads, each copy holding everything),
//   `condense_rep_var()` (drop the part of `rep` that does not change the thread);
// - equality: `structurally_equal` after alpha-renaming the iter vars, and `equal_by_evaluation`
//   for small domains (two spellings of one map).
//
// ## Invariants (checked by `check_invariants()`, enforced by `make`)
//
// - every extent (input dims, replicate) is >= 1 and the input box has at most 2^40 points;
// - iter vars are distinct integer vars; forward expressions mention no other variable (a
//   Fragment's `forward_thread` may also mention its replicate var), contain no float arithmetic,
//   buffer load or call;
// - every output expression is bounded by the analyzer and never negative over the input box.
//
// ## Compared with CuTe layouts and Triton linear layouts
//
// CuTe writes a layout as nested (shape : stride) pairs — an affine map in mixed radix — and adds
// non-affine behaviour by composing with a `Swizzle<B,M,S>` functor; its thread-value layouts
// (TV layouts) go the other way, from (thread, value) to the logical coordinate. Triton's linear
// layouts are matrices over GF(2) from the bits of (register, lane, warp) to the bits of the
// tensor index: exact and closed under composition and inversion, but power-of-two only. A Tessel
// layout is an arbitrary integer expression, so affine, padded, XOR-swizzled and non-power-of-two
// maps share one representation; the price is that algebraic facts (bijectivity, inverse) are
// not free: `inverse()` recognises the affine and GF(2) cases, and verify/ proves the rest with
// Z3. A Fragment goes from the logical index to (thread, local), the opposite of a TV layout;
// `Fragment::inverse()` gives the TV direction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/expr.h"

namespace tessel {

struct LayoutNode;
struct FragmentNode;
class Fragment;

/// A map from an n-d logical index (iter vars with extents) to an m-d storage index.
/// Value semantics: copies share one immutable node.
class Layout {
 public:
  /// An undefined layout (defined() is false); only assignment and defined() are valid on it.
  Layout() = default;
  /// Requires: one iter var per input extent; see the invariants in the file comment.
  /// Throws UserError naming the broken invariant and showing the layout.
  static Layout make(std::vector<Var> iter_vars, std::vector<int64_t> input_shape,
                     std::vector<Expr> forward_index);
  /// As `make`, but returns nullopt instead of throwing.
  static std::optional<Layout> try_make(std::vector<Var> iter_vars,
                                        std::vector<int64_t> input_shape,
                                        std::vector<Expr> forward_index);
  /// Builds the layout from a function of fresh iter vars named i, j, k, l (i0, i1, ... for
  /// rank > 4). Example: `Layout::from_fn({64, 64}, [](const std::vector<Var>& v) {
  ///   return std::vector<Expr>{v[0] * 64 + v[1]}; })`.
  static Layout from_fn(std::vector<int64_t> input_shape,
                        const std::function<std::vector<Expr>(const std::vector<Var>&)>& fn);

  /// Row-major (C order) linearisation of `shape`: output [prod(shape)].
  static Layout row_major(std::vector<int64_t> shape);
  /// Column-major (Fortran order) linearisation of `shape`.
  static Layout column_major(std::vector<int64_t> shape);

  /// Requires: the layout is defined (not default-constructed).
  const std::vector<Var>& iter_vars() const;
  const std::vector<int64_t>& input_shape() const;
  const std::vector<Expr>& forward_index() const;
  /// Extent of each output dimension: analyzer bound max + 1 (exhaustive evaluation when the
  /// analyzer cannot bound an expression and the domain is small).
  const std::vector<int64_t>& output_shape() const;
  size_t input_rank() const { return input_shape().size(); }
  size_t output_rank() const { return forward_index().size(); }
  /// Number of points of the input box.
  int64_t input_size() const;
  /// Number of points of the output box.
  int64_t output_size() const;

  /// The storage index of `index`. Requires: index.size() == input_rank() (user error
  /// otherwise); values outside the box are evaluated as written (no check).
  std::vector<int64_t> map(const std::vector<int64_t>& index) const;
  /// The forward expressions with the iter vars replaced by `index` (symbolic application).
  std::vector<Expr> forward(const std::vector<Expr>& index) const;

  /// The inverse map, from the output box back to the input box.
  /// Requires: the layout is a bijection between its input box and its output box (user error
  /// naming two colliding indices or a missing output otherwise) and is affine in mixed radix or
  /// GF(2)-linear on power-of-two extents (user error otherwise).
  /// Postcondition: inverse().map(map(x)) == x for every x in the input box.
  [[nodiscard]] Layout inverse() const;
  /// x -> next(this(x)). Requires: output_shape() == next.input_shape() (user error otherwise).
  [[nodiscard]] Layout then(const Layout& next) const;
  /// x -> frag(this(x)): a re-indexing followed by a fragment. Requires: output_shape() ==
  /// frag.input_shape().
  [[nodiscard]] Fragment then(const Fragment& frag) const;
  /// The same storage map seen through `shape`: new index -> row-major offset -> old index.
  /// Requires: prod(shape) == input_size() (user error otherwise).
  [[nodiscard]] Layout reshape(std::vector<int64_t> shape) const;

  /// Same input shape and structurally equal forward expressions after renaming other's iter
  /// vars to ours.
  bool structurally_equal(const Layout& other) const;
  friend bool operator==(const Layout& a, const Layout& b) { return a.structurally_equal(b); }

  /// `Layout([64, 64], lambda i, j: i * 64 + j)`; several outputs print as a tuple
  /// `lambda i, j: (i // 8, j)`. parse_layout_spec reads this text back.
  std::string to_string() const;
  /// nullopt when the invariants hold, else a description of the first broken one.
  std::optional<std::string> check_invariants() const;

  bool defined() const { return node_ != nullptr; }
  const LayoutNode* get() const { return node_.get(); }

 private:
  friend class Fragment;
  explicit Layout(std::shared_ptr<const LayoutNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const LayoutNode> node_;
};

/// A map from an n-d logical index to (thread, local register index), with a replication
/// extent: the element at `index` lives in thread `forward_thread(index, rep)` for every rep in
/// [0, replicate), at local position `forward_index(index)` (the same for every replica).
class Fragment {
 public:
  /// An undefined fragment (defined() is false).
  Fragment() = default;
  /// Requires: the Layout invariants for `iter_vars`/`input_shape`/`local_index`; replicate >= 1;
  /// `forward_thread` mentions only the iter vars and `replicate_var`, is never negative.
  static Fragment make(std::vector<Var> iter_vars, std::vector<int64_t> input_shape,
                       Expr forward_thread, Expr local_index, int64_t replicate = 1,
                       Var replicate_var = Var());
  static std::optional<Fragment> try_make(std::vector<Var> iter_vars,
                                          std::vector<int64_t> input_shape, Expr forward_thread,
                                          Expr local_index, int64_t replicate = 1,
                                          Var replicate_var = Var());
  /// From a function of fresh iter vars and the replicate var, returning (thread, local).
  static Fragment from_fn(
      std::vector<int64_t> input_shape,
      const std::function<std::pair<Expr, Expr>(const std::vector<Var>&, const Var& rep)>& fn,
      int64_t replicate = 1);
  /// Every thread in [0, threads) holds the whole tensor, row-major in its registers
  /// (forward_thread = rep, replicate = threads).
  static Fragment fully_replicated(std::vector<int64_t> shape, int64_t threads);

  const std::vector<Var>& iter_vars() const;
  const std::vector<int64_t>& input_shape() const;
  /// The local register index as a one-element list (mirrors Layout::forward_index).
  const std::vector<Expr>& forward_index() const;
  /// The local register index expression.
  const Expr& local_index() const;
  /// The thread expression, over iter_vars() and replicate_var().
  const Expr& forward_thread() const;
  /// The variable ranging over [0, replicate()) in forward_thread(). Always defined (unused
  /// when replicate() == 1).
  const Var& replicate_var() const;
  int64_t replicate() const;
  /// Number of threads: analyzer bound of forward_thread over all iter vars and rep, max + 1.
  int64_t thread_extent() const;
  /// Registers per thread: bound of local_index, max + 1 (= output_shape()[0]).
  int64_t local_extent() const;
  /// [local_extent()], like Layout::output_shape.
  const std::vector<int64_t>& output_shape() const;
  size_t input_rank() const { return input_shape().size(); }
  int64_t input_size() const;

  /// (thread, local) of `index` for replica `rep`. Requires: index.size() == input_rank(),
  /// 0 <= rep < replicate() (user error otherwise).
  std::pair<int64_t, int64_t> map_fragment(const std::vector<int64_t>& index,
                                           int64_t rep = 0) const;
  /// The local index part alone, as a one-element vector (Layout-like evaluation).
  std::vector<int64_t> map(const std::vector<int64_t>& index) const;
  /// (thread, local) expressions with the iter vars replaced by `index` and the replicate var by
  /// `rep` (0 when undefined).
  std::pair<Expr, Expr> forward(const std::vector<Expr>& index, Expr rep = Expr()) const;

  /// The local-index part as a Layout (input box -> [local_extent()]).
  Layout local_layout() const;

  /// Tiles the index space `repeats[d]` times along each dimension d: index x of the new shape
  /// is copy `x // input_shape` of base point `x % input_shape`. Copies are numbered row-major
  /// over the repeat grid when `lower_dim_first` (last dimension fastest), column-major
  /// otherwise. Copy c goes to registers `local + c * local_extent()` (same threads), or with
  /// `on_thread` to threads `thread + c * thread_extent()` (same registers).
  /// Requires: repeats.size() == input_rank(), every repeat >= 1.
  [[nodiscard]] Fragment repeat(const std::vector<int64_t>& repeats, bool on_thread = false,
                                bool lower_dim_first = true) const;
  /// repeat(repeats, true, lower_dim_first).
  [[nodiscard]] Fragment repeat_on_thread(const std::vector<int64_t>& repeats,
                                          bool lower_dim_first = true) const;
  /// `n` times as many threads, each new group holding a full copy: replicate becomes
  /// replicate() * n, thread(x, rep) = old_thread(x, rep % R) + thread_extent() * (rep // R).
  [[nodiscard]] Fragment replicate(int64_t n) const;
  /// Shrinks the replicate extent to the part of `rep` that forward_thread actually uses: when
  /// the thread depends on rep only through `(rep // d) % m`, the new replicate is m and
  /// rep' = (rep // d) % m. Unused replication (thread independent of rep) gives replicate 1.
  [[nodiscard]] Fragment condense_rep_var() const;
  /// The map (thread, local) -> index (plus rep as the last output when replicate() > 1), a
  /// Layout with input shape [thread_extent(), local_extent()].
  /// Requires: (index, rep) -> (thread, local) is a bijection onto that box (user error
  /// otherwise); same recognised forms as Layout::inverse.
  [[nodiscard]] Layout inverse() const;
  /// The same fragment seen through a row-major reshape of its input. Requires: prod(shape) ==
  /// input_size().
  [[nodiscard]] Fragment reshape(std::vector<int64_t> shape) const;

  /// Same input shape, replicate, and structurally equal thread and local expressions after
  /// renaming other's iter vars and replicate var to ours.
  bool structurally_equal(const Fragment& other) const;
  friend bool operator==(const Fragment& a, const Fragment& b) { return a.structurally_equal(b); }

  /// `Fragment([16, 8], lambda i, j: (i % 8 * 4 + j // 2, i // 8 * 2 + j % 2), replicate=1)`;
  /// with replicate > 1 the lambda takes the replicate var last: `lambda i, rep: (...)`.
  std::string to_string() const;
  std::optional<std::string> check_invariants() const;

  bool defined() const { return node_ != nullptr; }
  const FragmentNode* get() const { return node_.get(); }

 private:
  explicit Fragment(std::shared_ptr<const FragmentNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const FragmentNode> node_;
};

/// True when both layouts have one input shape and agree on every point of the input box.
/// Requires: input_size() <= max_points (user error otherwise).
bool equal_by_evaluation(const Layout& a, const Layout& b, int64_t max_points = int64_t{1} << 22);
/// True when `a` and `b` put every index at the same element of their storage: the same input
/// shape and storage size, and equal output indices once each is flattened row-major over its
/// output shape (a layout into (j // 32, i // 8, k) and one into a flat offset can be equal).
bool equal_offsets_by_evaluation(const Layout& a, const Layout& b,
                                 int64_t max_points = int64_t{1} << 22);
/// True when both fragments have one input shape and replicate and agree on every (index, rep).
bool equal_by_evaluation(const Fragment& a, const Fragment& b,
                         int64_t max_points = int64_t{1} << 22);

/// Calls fn(index) for every point of the box `shape` in row-major order.
void for_each_index(const std::vector<int64_t>& shape,
                    const std::function<void(const std::vector<int64_t>&)>& fn);

/// The default iter var names for rank n: i, j, k, l (i0, i1, ... for rank > 4).
std::vector<std::string> default_iter_var_names(size_t rank);

}  // namespace tessel
