// Inverting bijective index maps: exhaustive bijection check, then an affine mixed-radix inverse
// or a GF(2)-linear inverse (XOR swizzles, MMA fragments) emitted as index expressions.
#include <algorithm>
#include <bit>

#include "core/error.h"
#include "core/layout.h"
#include "core/layout_detail.h"

namespace tessel::detail {

namespace {

/// Outputs of every input point, row-major over the input box.
using Table = std::vector<std::vector<int64_t>>;

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + idx[k];
  return flat;
}

/// Throws unless the table is a bijection of the input box onto the output box.
void require_bijection(const Table& table, const std::vector<int64_t>& in_shape,
                       const std::vector<int64_t>& out_shape, const std::string& what) {
  int64_t out_size = *box_size(out_shape);
  std::vector<int64_t> seen(static_cast<size_t>(out_size), -1);
  for (size_t p = 0; p < table.size(); ++p) {
    const std::vector<int64_t>& y = table[p];
    for (size_t d = 0; d < y.size(); ++d) {
      if (y[d] < 0 || y[d] >= out_shape[d]) {
        user_error(what + ": input " + index_string(unflatten(static_cast<int64_t>(p), in_shape)) +
                   " maps to " + index_string(y) + ", outside the output shape " +
                   shape_string(out_shape));
      }
    }
    int64_t flat = flatten(y, out_shape);
    if (seen[flat] >= 0) {
      user_error(what + ": it is not injective: inputs " +
                 index_string(unflatten(seen[flat], in_shape)) + " and " +
                 index_string(unflatten(static_cast<int64_t>(p), in_shape)) + " both map to " +
                 index_string(y));
    }
    seen[flat] = static_cast<int64_t>(p);
  }
  for (int64_t flat = 0; flat < out_size; ++flat) {
    if (seen[flat] < 0) {
      user_error(what + ": it is not surjective: output " +
                 index_string(unflatten(flat, out_shape)) + " of the output shape " +
                 shape_string(out_shape) + " is never produced (padding has no inverse)");
    }
  }
}

/// `y // div % mod * mul`, leaving out the trivial parts.
Expr digit(const Var& y, int64_t div, std::optional<int64_t> mod, int64_t mul) {
  Expr e = y;
  if (div != 1) e = floordiv(e, make_int(div));
  if (mod) e = floormod(e, make_int(*mod));
  if (mul != 1) e = e * make_int(mul);
  return e;
}

std::optional<std::vector<Expr>> affine_inverse(const Table& table,
                                                const std::vector<int64_t>& in_shape,
                                                const std::vector<int64_t>& out_shape,
                                                const std::vector<Var>& out_vars) {
  size_t n = in_shape.size(), m = out_shape.size();
  const std::vector<int64_t>& base = table[0];
  // coef[k][d]: how much output d moves when input k steps by one.
  std::vector<std::vector<int64_t>> coef(n, std::vector<int64_t>(m, 0));
  for (size_t k = 0; k < n; ++k) {
    if (in_shape[k] == 1) continue;
    std::vector<int64_t> unit(n, 0);
    unit[k] = 1;
    const std::vector<int64_t>& y = table[flatten(unit, in_shape)];
    for (size_t d = 0; d < m; ++d) coef[k][d] = y[d] - base[d];
  }
  for (size_t p = 0; p < table.size(); ++p) {
    std::vector<int64_t> x = unflatten(static_cast<int64_t>(p), in_shape);
    for (size_t d = 0; d < m; ++d) {
      int64_t v = base[d];
      for (size_t k = 0; k < n; ++k) v += coef[k][d] * x[k];
      if (v != table[p][d]) return std::nullopt;
    }
  }
  // Each input feeds exactly one output with a positive stride; each output is a mixed radix.
  std::vector<std::vector<size_t>> groups(m);
  for (size_t k = 0; k < n; ++k) {
    if (in_shape[k] == 1) continue;
    int feeds = 0;
    for (size_t d = 0; d < m; ++d) {
      if (coef[k][d] < 0) return std::nullopt;
      if (coef[k][d] > 0) {
        ++feeds;
        groups[d].push_back(k);
      }
    }
    if (feeds != 1) return std::nullopt;
  }
  std::vector<Expr> inverse(n, Expr(0));
  for (size_t d = 0; d < m; ++d) {
    if (base[d] != 0) return std::nullopt;
    auto& g = groups[d];
    std::sort(g.begin(), g.end(), [&](size_t a, size_t b) { return coef[a][d] < coef[b][d]; });
    int64_t stride = 1;
    for (size_t t = 0; t < g.size(); ++t) {
      size_t k = g[t];
      if (coef[k][d] != stride) return std::nullopt;
      bool top = t + 1 == g.size();
      inverse[k] = digit(out_vars[d], stride, top ? std::nullopt : std::optional(in_shape[k]), 1);
      stride *= in_shape[k];
    }
    if (stride != out_shape[d]) return std::nullopt;
  }
  return inverse;
}

bool is_pow2(int64_t v) { return v >= 1 && (v & (v - 1)) == 0; }
int log2_exact(int64_t v) { return std::countr_zero(static_cast<uint64_t>(v)); }

std::optional<std::vector<Expr>> gf2_inverse(const Table& table,
                                             const std::vector<int64_t>& in_shape,
                                             const std::vector<int64_t>& out_shape,
                                             const std::vector<Var>& out_vars) {
  for (int64_t e : in_shape) {
    if (!is_pow2(e)) return std::nullopt;
  }
  for (int64_t e : out_shape) {
    if (!is_pow2(e)) return std::nullopt;
  }
  size_t n = in_shape.size(), m = out_shape.size();
  // Global bit positions: input dim k bit b at in_off[k] + b; output dim d bit c at out_off[d] + c.
  std::vector<int> in_off(n + 1, 0), out_off(m + 1, 0);
  for (size_t k = 0; k < n; ++k) in_off[k + 1] = in_off[k] + log2_exact(in_shape[k]);
  for (size_t d = 0; d < m; ++d) out_off[d + 1] = out_off[d] + log2_exact(out_shape[d]);
  int bits = in_off[n];
  if (bits != out_off[m] || bits > 62) return std::nullopt;
  auto pack_out = [&](const std::vector<int64_t>& y) {
    uint64_t v = 0;
    for (size_t d = 0; d < m; ++d) v |= static_cast<uint64_t>(y[d]) << out_off[d];
    return v;
  };
  auto pack_in = [&](const std::vector<int64_t>& x) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(x[k]) << in_off[k];
    return v;
  };
  // column[j]: the packed output of the input with only global bit j set.
  std::vector<uint64_t> column(bits);
  if (pack_out(table[0]) != 0) return std::nullopt;
  for (int j = 0; j < bits; ++j) {
    size_t k = std::upper_bound(in_off.begin(), in_off.end(), j) - in_off.begin() - 1;
    std::vector<int64_t> x(n, 0);
    x[k] = int64_t{1} << (j - in_off[k]);
    column[j] = pack_out(table[flatten(x, in_shape)]);
  }
  for (size_t p = 0; p < table.size(); ++p) {
    uint64_t x = pack_in(unflatten(static_cast<int64_t>(p), in_shape)), y = 0;
    for (int j = 0; j < bits; ++j) {
      if (x >> j & 1) y ^= column[j];
    }
    if (y != pack_out(table[p])) return std::nullopt;
  }
  // Gauss-Jordan on [A | I] where row r of A (output bit r) has bit j set when column j has r.
  std::vector<uint64_t> a(bits, 0), inv(bits, 0);
  for (int r = 0; r < bits; ++r) {
    for (int j = 0; j < bits; ++j) {
      if (column[j] >> r & 1) a[r] |= uint64_t{1} << j;
    }
    inv[r] = uint64_t{1} << r;
  }
  for (int j = 0; j < bits; ++j) {
    int pivot = -1;
    for (int r = j; r < bits; ++r) {
      if (a[r] >> j & 1) {
        pivot = r;
        break;
      }
    }
    if (pivot < 0) return std::nullopt;
    std::swap(a[pivot], a[j]);
    std::swap(inv[pivot], inv[j]);
    for (int r = 0; r < bits; ++r) {
      if (r != j && (a[r] >> j & 1)) {
        a[r] ^= a[j];
        inv[r] ^= inv[j];
      }
    }
  }
  // Now input bit j = parity(inv[j] & packed output). Group by (output dim, shift) into masks.
  std::vector<Expr> inverse;
  for (size_t k = 0; k < n; ++k) {
    struct Term {
      size_t d;
      int shift;  // source bit - destination bit
      uint64_t mask;
    };
    std::vector<Term> terms;
    for (int b = 0; b < in_off[k + 1] - in_off[k]; ++b) {
      uint64_t row = inv[in_off[k] + b];
      for (size_t d = 0; d < m; ++d) {
        for (int c = 0; c < out_off[d + 1] - out_off[d]; ++c) {
          if (!(row >> (out_off[d] + c) & 1)) continue;
          int shift = c - b;
          auto it = std::find_if(terms.begin(), terms.end(),
                                 [&](const Term& t) { return t.d == d && t.shift == shift; });
          if (it == terms.end()) {
            terms.push_back({d, shift, 0});
            it = terms.end() - 1;
          }
          it->mask |= uint64_t{1} << b;
        }
      }
    }
    // Split masks into contiguous runs; each run is a digit of one output.
    std::vector<std::pair<uint64_t, Expr>> parts;
    for (const Term& t : terms) {
      uint64_t mask = t.mask;
      while (mask) {
        int lo = std::countr_zero(mask);
        int w = std::countr_one(mask >> lo);
        int src = lo + t.shift;
        bool below_top = (int64_t{1} << (src + w)) < out_shape[t.d];
        parts.emplace_back(
            ((uint64_t{1} << w) - 1) << lo,
            digit(out_vars[t.d], int64_t{1} << src,
                  below_top ? std::optional(int64_t{1} << w) : std::nullopt, int64_t{1} << lo));
        mask &= ~(((uint64_t{1} << w) - 1) << lo);
      }
    }
    bool disjoint = true;
    uint64_t covered = 0;
    for (const auto& [mask, e] : parts) {
      if (covered & mask) disjoint = false;
      covered |= mask;
    }
    Expr x;
    for (const auto& [mask, e] : parts) x = !x.defined() ? e : (disjoint ? x + e : x ^ e);
    inverse.push_back(x.defined() ? x : Expr(0));
  }
  return inverse;
}

}  // namespace

std::vector<Expr> invert_bijection(const std::vector<Var>& in_vars,
                                   const std::vector<int64_t>& in_shape,
                                   const std::vector<Expr>& forward,
                                   const std::vector<int64_t>& out_shape,
                                   const std::vector<Var>& out_vars, const std::string& what) {
  auto in_size = box_size(in_shape);
  auto out_size = box_size(out_shape);
  if (!in_size || !out_size || *in_size > kMaxExhaustivePoints ||
      *out_size > kMaxExhaustivePoints) {
    user_error(what + ": the index space is too large to check point by point (limit " +
               std::to_string(kMaxExhaustivePoints) + " points)");
  }
  Table table;
  table.reserve(static_cast<size_t>(*in_size));
  BoxEvaluator ev(in_vars);
  for_each_index(in_shape, [&](const std::vector<int64_t>& p) {
    ev.set(p);
    std::vector<int64_t> y;
    for (const Expr& e : forward) y.push_back(ev.eval(e));
    table.push_back(std::move(y));
  });
  require_bijection(table, in_shape, out_shape, what);
  if (auto inv = affine_inverse(table, in_shape, out_shape, out_vars)) return *inv;
  if (auto inv = gf2_inverse(table, in_shape, out_shape, out_vars)) return *inv;
  user_error(what +
             ": it is a bijection but neither affine in mixed radix nor linear over GF(2) "
             "on power-of-two extents, so no closed-form inverse is known");
}

}  // namespace tessel::detail
