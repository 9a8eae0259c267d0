// Internal helpers shared by layout.cpp, fragment.cpp and layout_inverse.cpp (not a public API).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/expr.h"
#include "core/int_eval.h"

namespace tessel::detail {

/// The largest box evaluated point by point (inverse, equality, condense).
inline constexpr int64_t kMaxExhaustivePoints = int64_t{1} << 22;
/// The largest box evaluated point by point only to bound an expression the analyzer could not.
inline constexpr int64_t kMaxBoundFallbackPoints = int64_t{1} << 20;

/// Evaluates expressions at points of a box of variables, reusing one environment.
class BoxEvaluator {
 public:
  explicit BoxEvaluator(std::vector<Var> vars);
  void set(const std::vector<int64_t>& point);
  void set(size_t k, int64_t value);
  int64_t eval(const Expr& e) const { return eval_int(e, env_); }

 private:
  std::vector<Var> vars_;
  IntEnv env_;
};

/// Product of the extents; nullopt on overflow past 2^62.
std::optional<int64_t> box_size(const std::vector<int64_t>& shape);

/// Fresh iter vars with the default names for `rank`.
std::vector<Var> fresh_iter_vars(size_t rank);

/// Inclusive [min, max] of `e` over the box (vars[k] in [0, shape[k])): the analyzer's bound, or
/// exact evaluation when the analyzer leaves an end unbounded and the box is small. nullopt when
/// neither works.
std::optional<std::pair<int64_t, int64_t>> bound_in_box(const Expr& e, const std::vector<Var>& vars,
                                                        const std::vector<int64_t>& shape);

/// Why an index expression with bound `b` over the box is not a storage index, or nullopt: "can
/// be negative (down to -1)", "overflows int32: ..." when the exact value is in range but a
/// narrower-than-64-bit operation wraps, or "reaches N" past 2^62 (sizes would overflow).
std::optional<std::string> index_bound_problem(const Expr& e, const std::vector<Var>& vars,
                                               const std::vector<int64_t>& shape,
                                               std::pair<int64_t, int64_t> b);

/// The analyzer's simplification of `e` with vars[k] bound to [0, shape[k]).
Expr simplify_in_box(const Expr& e, const std::vector<Var>& vars,
                     const std::vector<int64_t>& shape);

/// Why the parts do not form a valid layout, or nullopt; fills `out_shape` with the output
/// extents (analyzer bound max + 1).
std::optional<std::string> validate_layout(const std::vector<Var>& vars,
                                           const std::vector<int64_t>& shape,
                                           const std::vector<Expr>& outputs,
                                           std::vector<int64_t>* out_shape);

/// "[64, 64]".
std::string shape_string(const std::vector<int64_t>& shape);
/// "(3, 8)".
std::string index_string(const std::vector<int64_t>& index);

/// Inverts the map `in_vars` (box `in_shape`) -> `forward` (box `out_shape`): returns one
/// expression per input over `out_vars`. Throws UserError (prefixed by `what`) when the map is not
/// a bijection of the boxes (naming two colliding inputs or a missed output), when the box is too
/// large to check, or when the map is neither affine in mixed radix nor GF(2)-linear.
std::vector<Expr> invert_bijection(const std::vector<Var>& in_vars,
                                   const std::vector<int64_t>& in_shape,
                                   const std::vector<Expr>& forward,
                                   const std::vector<int64_t>& out_shape,
                                   const std::vector<Var>& out_vars, const std::string& what);

}  // namespace tessel::detail
