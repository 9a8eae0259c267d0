// Fresh constants for non-linear products, constrained by exact linear facts (McCormick
// relaxations, bounds, and monotonicity across copies).
#include "verify/product_lemmas.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace tessel {

namespace {

/// Bits added to every lemma's terms: a lemma sums at most three terms, each no larger in
/// magnitude than a corner product (which fits the proof width), so two bits would do.
constexpr int kSpare = 4;

class LemmaBuilder {
 public:
  LemmaBuilder(z3::context& ctx, int width)
      : ctx_(ctx), width_(width), lemmas_(ctx.bool_val(true)) {}

  z3::expr wide(const z3::expr& e) const { return z3::sext(e, kSpare); }
  z3::expr lit(int64_t v) const { return ctx_.bv_val(v, static_cast<unsigned>(width_ + kSpare)); }
  void add(const z3::expr& lemma) { lemmas_ = lemmas_ && lemma; }
  const z3::expr& lemmas() const { return lemmas_; }

  /// Bounds and the four McCormick inequalities of P = a * b.
  void single(const ProductTerm& r, const z3::expr& p) {
    z3::expr a = wide(r.a), b = wide(r.b), pw = wide(p);
    if (r.product_bound.bounded()) {
      add(z3::sge(pw, lit(r.product_bound.min)) && z3::sle(pw, lit(r.product_bound.max)));
    }
    if (!r.a_bound.bounded() || !r.b_bound.bounded()) return;
    int64_t al = r.a_bound.min, ah = r.a_bound.max, bl = r.b_bound.min, bh = r.b_bound.max;
    // Each inequality sums three terms no larger than the largest corner product; skip the
    // relaxation if that could pass the lemma width (a tightened product bound can make the
    // corners larger than anything the proof width was chosen for).
    __int128 corner = 0;
    for (__int128 x : {static_cast<__int128>(al), static_cast<__int128>(ah)}) {
      for (__int128 y : {static_cast<__int128>(bl), static_cast<__int128>(bh)}) {
        __int128 p = x * y;
        corner = std::max(corner, p < 0 ? -p : p);
      }
    }
    if (3 * corner >= (static_cast<__int128>(1) << (width_ + kSpare - 1))) return;
    // (a - al)(b - bl) >= 0 and (ah - a)(bh - b) >= 0: lower bounds.
    add(z3::sge(pw, a * lit(bl) + b * lit(al) - lit(al) * lit(bl)));
    add(z3::sge(pw, a * lit(bh) + b * lit(ah) - lit(ah) * lit(bh)));
    // (a - al)(bh - b) >= 0 and (ah - a)(b - bl) >= 0: upper bounds.
    add(z3::sle(pw, a * lit(bh) + b * lit(al) - lit(al) * lit(bh)));
    add(z3::sle(pw, a * lit(bl) + b * lit(ah) - lit(ah) * lit(bl)));
  }

  /// Monotonicity between two copies of one product, varying operand `x`, agreeing operand `y`.
  void pair(const z3::expr& x1, const z3::expr& y1, const z3::expr& p1, const z3::expr& x2,
            const z3::expr& y2, const z3::expr& p2) {
    z3::expr X1 = wide(x1), Y1 = wide(y1), P1 = wide(p1), X2 = wide(x2), P2 = wide(p2);
    z3::expr agree = y1 == y2;
    // P2 - P1 = (x2 - x1) * y with x2 - x1 >= 1: at least y when y >= 0, at most y when y <= 0.
    add(z3::implies(agree && z3::slt(x1, x2) && z3::sge(Y1, lit(0)), z3::sle(P1 + Y1, P2)));
    add(z3::implies(agree && z3::slt(x1, x2) && z3::sle(Y1, lit(0)), z3::sle(P2, P1 + Y1)));
    add(z3::implies(agree && x1 == x2, p1 == p2));
  }

 private:
  z3::context& ctx_;
  int width_;
  z3::expr lemmas_;
};

}  // namespace

z3::expr abstract_products(z3::context& ctx, const z3::expr& formula,
                           const std::vector<ProductTerm>& products, int width) {
  z3::expr_vector from(ctx), to(ctx);
  std::unordered_map<unsigned, z3::expr> fresh;  // product term id -> its constant
  LemmaBuilder lemmas(ctx, width);
  for (const ProductTerm& r : products) {
    unsigned id = Z3_get_ast_id(ctx, r.product);
    if (fresh.count(id)) continue;
    z3::expr p =
        ctx.bv_const(("P!" + std::to_string(fresh.size())).c_str(), static_cast<unsigned>(width));
    fresh.emplace(id, p);
    from.push_back(r.product);
    to.push_back(p);
    lemmas.single(r, p);
  }
  for (const ProductTerm& r1 : products) {
    for (const ProductTerm& r2 : products) {
      if (r1.node != r2.node || r1.copy == r2.copy) continue;
      const z3::expr& p1 = fresh.at(Z3_get_ast_id(ctx, r1.product));
      const z3::expr& p2 = fresh.at(Z3_get_ast_id(ctx, r2.product));
      lemmas.pair(r1.a, r1.b, p1, r2.a, r2.b, p2);  // a varies, b agrees
      lemmas.pair(r1.b, r1.a, p1, r2.b, r2.a, p2);  // b varies, a agrees
    }
  }
  z3::expr all = formula && lemmas.lemmas();
  return all.substitute(from, to);
}

}  // namespace tessel
