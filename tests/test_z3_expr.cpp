// The Z3 translation of index expressions: Python floor semantics, widths that cannot wrap, and a
// demonstration that a too-narrow width would have produced false proofs.
#include <doctest/doctest.h>
#include <z3++.h>

#include "core/bank_rules.h"
#include "core/error.h"
#include "core/int_eval.h"
#include "core/layout.h"
#include "verify/bank_proofs.h"
#include "verify/layout_proofs.h"
#include "verify/proof_session.h"
#include "verify/z3_expr.h"

using namespace tessel;

namespace {

/// Evaluates one expression with Z3 at many points: translated once over the points' ranges,
/// then each point is a push / fix the variables / check / read back / pop.
class Z3Evaluator {
 public:
  Z3Evaluator(const Expr& e, const std::vector<std::pair<Var, IntBound>>& ranges)
      : bounds_(domain(ranges)),
        tr_(ctx_, bounds_, bounds_.width_for({e})),
        solver_(ctx_),
        term_(tr_.bv(e)) {
    solver_.add(tr_.side_condition());
  }
  int64_t at(const std::vector<std::pair<Var, int64_t>>& values) {
    solver_.push();
    for (const auto& [v, x] : values) solver_.add(tr_.var(v) == tr_.constant(x));
    REQUIRE(solver_.check() == z3::sat);
    int64_t r = z3_signed_value(solver_.get_model().eval(term_, true));
    solver_.pop();
    return r;
  }

 private:
  static VarDomain domain(const std::vector<std::pair<Var, IntBound>>& ranges) {
    VarDomain d;
    d.ranges = ranges;
    return d;
  }
  IndexBounds bounds_;
  z3::context ctx_;
  Z3ExprTranslator tr_;
  z3::solver solver_;
  z3::expr term_;
};

int64_t exact(const Expr& e, const std::vector<std::pair<Var, int64_t>>& values) {
  IntEnv env;
  for (const auto& [v, x] : values) env[v.operator->()] = x;
  return eval_int(e, env);
}

}  // namespace

TEST_SUITE("z3 translation") {
  TEST_CASE("floordiv and floormod follow Python for every sign, constant or symbolic divisor") {
    Var a("a"), b("b");
    IntBound ra{-9, 9}, rb{-4, 8};
    // Symbolic divisor: bvsmod and an exact bvsdiv.
    Z3Evaluator div(floordiv(a, b), {{a, ra}, {b, rb}}), mod(floormod(a, b), {{a, ra}, {b, rb}});
    for (int64_t y : {-4, -3, -1, 1, 2, 3, 5, 8}) {
      // Constant divisor: shift and mask for powers of two, a quotient/remainder pair otherwise.
      Z3Evaluator cdiv(floordiv(a, make_int(y)), {{a, ra}}),
          cmod(floormod(a, make_int(y)), {{a, ra}});
      for (int64_t x = -9; x <= 9; ++x) {
        CHECK(div.at({{a, x}, {b, y}}) == floor_div(x, y));
        CHECK(mod.at({{a, x}, {b, y}}) == floor_mod(x, y));
        CHECK(cdiv.at({{a, x}}) == floor_div(x, y));
        CHECK(cmod.at({{a, x}}) == floor_mod(x, y));
      }
    }
  }

  TEST_CASE("bitwise operations, shifts, min/max, select and casts agree with the evaluator") {
    Var a("a"), b("b");
    std::vector<Expr> exprs = {a ^ b,
                               a & b,
                               a | b,
                               a >> make_int(2),
                               a << make_int(3),
                               min(a, b) * max(a, b),
                               if_then_else(a < b, a - b, b * make_int(3)),
                               cast(DataType::i8(), a * make_int(100)),
                               cast(DataType::u8(), a - b)};
    for (const Expr& e : exprs) {
      Z3Evaluator z(e, {{a, {-7, 6}}, {b, {-5, 7}}});
      for (int64_t x : {-7, -1, 0, 3, 6}) {
        for (int64_t y : {-5, 0, 2, 7}) {
          CHECK_MESSAGE(z.at({{a, x}, {b, y}}) == exact(e, {{a, x}, {b, y}}),
                        "a = " << x << ", b = " << y);
        }
      }
    }
  }

  TEST_CASE("the width holds every intermediate value with a spare bit") {
    Var i("i");
    VarDomain dom;
    dom.bound(i, 0, 3);
    IndexBounds bounds(dom);
    // i * 256 <= 768 needs 11 signed bits; one spare: 12.
    CHECK(bounds.width_for({i * make_int(256)}) == 12);
    // (i * 5) // 3: i * 5 <= 15 and the quotient pair's q * 3 <= 15 need 5 signed bits (the
    // divisor 3 needs 3); one spare: 6.
    CHECK(bounds.width_for({floordiv(i * make_int(5), make_int(3))}) == 6);
  }

  TEST_CASE("a product that passes int32 is bounded exactly, not by its dtype") {
    // i * 65536 for i < 65536 reaches 2^32 - 2^16: an int32 node that can wrap. The analyzer
    // (which bounds wrapped values) would give the int32 range, a 33-bit width, and a wrapped
    // proof; the exact bound 2^32 - 2^16 needs 33 signed bits, plus a spare: 34.
    Var i("i");
    VarDomain dom;
    dom.bound(i, 0, 65535);
    IndexBounds bounds(dom);
    Expr e = i * make_int(65536);
    CHECK(bounds.bound(e).max == (int64_t{1} << 32) - 65536);
    CHECK(bounds.width_for({e}) == 34);
    CHECK(bounds.dtype_overflows().size() == 1);
  }

  TEST_CASE("a too-narrow width proves a false range fact; the chosen width refutes it") {
    // A[i] -> i * 256 for i < 4 claims the output box [4]. In 8 bits every i * 256 wraps to 0,
    // inside the box: a false proof. The chosen width (12 bits) keeps 256, 512, 768 exact.
    Var i("i");
    IndexMap map;
    map.iter_vars = {i};
    map.input_shape = {make_int(4)};
    map.forward_index = {i * make_int(256)};
    map.output_shape = {make_int(4)};
    ProofOptions narrow;
    narrow.force_width = 8;
    CHECK(prove_in_range(map, narrow).holds);  // the lie
    ProofResult honest = prove_in_range(map);
    CHECK_FALSE(honest.holds);
    REQUIRE(honest.cex);
    int64_t i_value = honest.cex->indices[0][0];
    CHECK(i_value >= 1);
    CHECK(honest.message == "A[" + std::to_string(i_value) + "] maps to offset " +
                                std::to_string(256 * i_value) + ", outside the output box [4]");
    // In 8 bits the injective map also looks like it collides (every point wraps to 0).
    CHECK_FALSE(prove_injective(map, narrow).holds);
    CHECK(prove_injective(map).holds);
  }

  TEST_CASE("a too-narrow width proves a 32-way bank conflict conflict-free") {
    // Lane l reads f32 element (l, 0) of a 32x64 row-major tile: byte 256 l, word 64 l, bank 0
    // for all 32 lanes: 32 distinct words in bank 0, a 32-way conflict. In 8 bits every 256 l
    // wraps to byte 0: one word, a broadcast, "conflict-free".
    BankAccess access;
    access.layout = Layout::row_major({32, 64});
    access.dtype = DataType::f32();
    access.index = {access.lane, make_int(0)};
    ProofOptions narrow;
    narrow.force_width = 8;
    CHECK(prove_conflict_free(access, BankModel::nvidia(), narrow).holds);  // the lie
    BankProofResult honest = prove_conflict_free(access, BankModel::nvidia());
    CHECK_FALSE(honest.holds);
    CHECK(honest.max_degree == 32);
  }

  TEST_CASE("float arithmetic in an index expression is a user error") {
    Var i("i");
    VarDomain dom;
    dom.bound(i, 0, 3);
    IndexBounds bounds(dom);
    CHECK_THROWS_AS(bounds.width_for({cast(DataType::f32(), i) * Expr(0.5)}), UserError);
  }

}  // TEST_SUITE

TEST_SUITE("proof session") {
  TEST_CASE("a ranged variable the proved expressions never mention still fits the width") {
    // i in [0, 3] needs 3 bits; t in [0, 127] needs 8. Were the width chosen from `i != 1`
    // alone, t's range fact 0 <= t <= 127 would wrap (127 is -1 in 4 bits) and contradict
    // itself, so `i != 1` — true for i = 0 — would come back unsatisfiable ("proved").
    Var i("i"), t("t");
    VarDomain d;
    d.bound(t, 0, 127).bound(i, 0, 3);
    Expr goal = i != make_int(1);
    ProofSession s(d, {}, {goal}, 10000);
    REQUIRE(s.check(s.shared().boolean(goal)) == z3::sat);
    CHECK(s.value(s.shared(), i) != 1);
  }
}
