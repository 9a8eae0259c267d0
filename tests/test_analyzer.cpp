// Tests of core/analyzer: interval bounds, constraint scopes, canonical simplification and proofs.
// Expected values are worked out by hand in the comments; eval_int is the independent oracle.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/analyzer.h"
#include "core/buffer.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"

using namespace tessel;

namespace {

IntBound bounds(int64_t lo, int64_t hi) { return IntBound{lo, hi}; }

/// The simplified form of `e`, printed (failures then show both sides as source text).
std::string simplified(Analyzer& an, const Expr& e) { return to_string(an.simplify(e)); }

}  // namespace

TEST_SUITE("analyzer bounds") {
  TEST_CASE("bound of an affine sum adds the bounds of its terms") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    // i*8 in [0, 120], j in [0, 7]: sum in [0, 127].
    CHECK(an.const_int_bound(i * 8 + j) == bounds(0, 127));
  }

  TEST_CASE("bound of a difference subtracts the other side's extremes") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    // i - 2j: smallest 0 - 14 = -14, largest 15 - 0 = 15.
    CHECK(an.const_int_bound(i - j * 2) == bounds(-14, 15));
  }

  TEST_CASE("unbound variables range over their dtype") {
    Analyzer an;
    CHECK(an.const_int_bound(Var("x")) == bounds(-2147483648LL, 2147483647LL));  // i32
    CHECK(an.const_int_bound(Var("u", DataType::u8())) == bounds(0, 255));
    CHECK(an.const_int_bound(Var("b", DataType::boolean())) == bounds(0, 1));
  }

  TEST_CASE("floordiv of a range with negative values rounds towards negative infinity") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(-7, 5));
    // -7 // 2 == -4 (Python), 5 // 2 == 2.
    CHECK(an.const_int_bound(floordiv(x, 2)) == bounds(-4, 2));
  }

  TEST_CASE("floordiv by a negative constant swaps the ends") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(-7, 5));
    // -7 // -2 == floor(3.5) == 3; 5 // -2 == floor(-2.5) == -3.
    CHECK(an.const_int_bound(floordiv(x, -2)) == bounds(-3, 3));
  }

  TEST_CASE("floormod by a positive constant lies in [0, c) even for negative operands") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(-7, 5));
    CHECK(an.const_int_bound(floormod(x, 2)) == bounds(0, 1));
    // A single value: -7 % 2 == 1 in Python (-7 == 2 * -4 + 1).
    Var y("y");
    an.bind(y, bounds(-7, -7));
    CHECK(an.const_int_bound(floormod(y, 2)) == bounds(1, 1));
  }

  TEST_CASE("floormod of a range inside one block of the divisor is the shifted range") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(9, 12));
    // 9..12 all lie in [8, 16): x % 8 == x - 8, in [1, 4].
    CHECK(an.const_int_bound(floormod(x, 8)) == bounds(1, 4));
  }

  TEST_CASE("floormod by a negative constant lies in (c, 0]") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(0, 10));
    // Python: 1 % -4 == -3, 4 % -4 == 0; the result takes the divisor's sign.
    CHECK(an.const_int_bound(floormod(x, -4)) == bounds(-3, 0));
  }

  TEST_CASE("and with a non-negative mask is bounded by the mask") {
    Analyzer an;
    Var x("x");  // unbound: any int32, negative included
    CHECK(an.const_int_bound(x & 7) == bounds(0, 7));
  }

  TEST_CASE("xor swizzle of in-range operands stays below the enclosing power of two") {
    Analyzer an;
    Var row("row"), col("col");
    an.bind(row, 0, 64);
    an.bind(col, 0, 8);
    // row >> 3 in [0, 7], col in [0, 7]: the xor has 3 bits, [0, 7]; times 8 is [0, 56].
    CHECK(an.const_int_bound(col ^ (row >> 3)) == bounds(0, 7));
    CHECK(an.const_int_bound((col ^ (row >> 3)) * 8) == bounds(0, 56));
    // (row & 7) ^ col: both in [0, 7], so [0, 7].
    CHECK(an.const_int_bound((row & 7) ^ col) == bounds(0, 7));
  }

  TEST_CASE("shifts scale bounds by powers of two, rounding right shifts down") {
    Analyzer an;
    Var i("i"), x("x");
    an.bind(i, 0, 16);
    an.bind(x, bounds(-8, 7));
    CHECK(an.const_int_bound(i << 2) == bounds(0, 60));  // 15 * 4
    CHECK(an.const_int_bound(i >> 2) == bounds(0, 3));   // 15 // 4
    CHECK(an.const_int_bound(x >> 1) == bounds(-4, 3));  // -8 >> 1 == -4, 7 >> 1 == 3
  }

  TEST_CASE("comparisons are bounded by [0, 1] and decided when the ranges separate") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    CHECK(an.const_int_bound(i < 16) == bounds(1, 1));  // 15 < 16
    CHECK(an.const_int_bound(i > 15) == bounds(0, 0));
    CHECK(an.const_int_bound(i < 8) == bounds(0, 1));
  }

  TEST_CASE("select bound is the union of its arms") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    // i in [0, 15], j + 20 in [20, 27].
    CHECK(an.const_int_bound(if_then_else(i < 4, i, j + 20)) == bounds(0, 27));
  }

  TEST_CASE("min and max bounds take the lower and upper envelopes") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 3, 5);  // [3, 7]
    CHECK(an.const_int_bound(min(i, j)) == bounds(0, 7));
    CHECK(an.const_int_bound(max(i, j)) == bounds(3, 15));
  }

  TEST_CASE("a product that may overflow int32 widens to the whole int32 range") {
    Analyzer an;
    Var x("x");
    an.bind(x, bounds(0, 1 << 20));
    // 2^20 * 2^12 == 2^32 does not fit int32: the product may wrap, so nothing is known.
    CHECK(an.const_int_bound(x * 4096) == bounds(-2147483648LL, 2147483647LL));
    // 2^20 * 2^10 == 2^30 fits.
    CHECK(an.const_int_bound(x * 1024) == bounds(0, 1 << 30));
  }

  TEST_CASE("int64 arithmetic that may leave int64 is unbounded") {
    Analyzer an;
    Var x("x", DataType::i64());
    int64_t big = int64_t{1} << 62;
    an.bind(x, bounds(big, big + 3));
    // 4 * 2^62 == 2^64 wraps in int64: no bound is known.
    CHECK(an.const_int_bound(x * 4) == bounds(IntBound::kNegInf, IntBound::kPosInf));
    CHECK_FALSE(an.const_int_bound(x * 4).bounded());
    // x // 2 stays well inside: [2^61, 2^61 + 1].
    CHECK(an.const_int_bound(x / 2) == bounds(big / 2, big / 2 + 1));
    CHECK_FALSE(an.can_prove(x * 4 >= Expr(0)));
  }

  TEST_CASE("an integer cast keeps the bound when it fits and covers the target type otherwise") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    CHECK(an.const_int_bound(cast(DataType::i64(), i)) == bounds(0, 15));
    // i * 16 in [0, 240] does not fit int8.
    CHECK(an.const_int_bound(cast(DataType::i8(), i * 16)) == bounds(-128, 127));
  }
}

TEST_SUITE("analyzer constraint scopes") {
  TEST_CASE("a constraint scope tightens a variable and restores it on exit") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    {
      Analyzer::ConstraintScope scope(an, i < 8);
      CHECK(an.const_int_bound(i) == bounds(0, 7));
    }
    CHECK(an.const_int_bound(i) == bounds(0, 15));
  }

  TEST_CASE("nested constraint scopes restore in reverse order") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    {
      Analyzer::ConstraintScope outer(an, i >= 4);
      {
        Analyzer::ConstraintScope inner(an, i <= 10 && 2 < i);  // `2 < i` adds nothing here
        CHECK(an.const_int_bound(i) == bounds(4, 10));
      }
      CHECK(an.const_int_bound(i) == bounds(4, 15));
    }
    CHECK(an.const_int_bound(i) == bounds(0, 15));
  }

  TEST_CASE("a constraint scope on an unbound variable is undone on exit") {
    Analyzer an;
    Var x("x");
    {
      Analyzer::ConstraintScope scope(an, x > 3 && x < 10);
      CHECK(an.const_int_bound(x) == bounds(4, 9));
    }
    CHECK(an.const_int_bound(x) == bounds(-2147483648LL, 2147483647LL));
  }

  TEST_CASE("a constraint against another variable uses that variable's bound") {
    Analyzer an;
    Var i("i"), n("n");
    an.bind(i, 0, 100);
    an.bind(n, 1, 9);  // [1, 9]
    Analyzer::ConstraintScope scope(an, i < n);
    CHECK(an.const_int_bound(i) == bounds(0, 8));  // i < n <= 9
    CHECK(an.const_int_bound(n) == bounds(1, 9));  // n > i >= 0 adds nothing
  }

  TEST_CASE("an equality constraint pins the variable") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    Analyzer::ConstraintScope scope(an, i == 5);
    CHECK(an.const_int_bound(i * 2 + 1) == bounds(11, 11));
    CHECK(an.can_prove(i * 2 == 10));
  }

  TEST_CASE("a negated comparison constrains like its opposite") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    Analyzer::ConstraintScope scope(an, !(i < 8));
    CHECK(an.const_int_bound(i) == bounds(8, 15));
  }

  TEST_CASE("constraints of other forms leave the ranges unchanged") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    Analyzer::ConstraintScope a(an, i != 3);
    Analyzer::ConstraintScope b(an, i * 2 < 8 || i > 100);
    CHECK(an.const_int_bound(i) == bounds(0, 15));
  }
}

TEST_SUITE("analyzer simplify") {
  TEST_CASE("like terms merge and cancel") {
    Analyzer an;
    Var i("i"), j("j");
    CHECK(simplified(an, i * 4 + j - i * 4) == to_string(j));
    CHECK(simplified(an, (i + j) * 4 - j * 4) == to_string(i * 4));
  }

  TEST_CASE("a factor common to every term and the divisor comes out of // and %") {
    Analyzer an;
    Var t("t"), v("v");
    an.bind(t, 0, 128);
    an.bind(v, 0, 8);
    // t * 8 == 8 * t, so (8 t) % 32 == 8 (t % 4) and (8 t) // 32 == t // 4.
    CHECK(simplified(an, (t * 8) % 32) == to_string(t % 4 * 8));
    CHECK(simplified(an, (t * 8) / 32) == to_string(t / 4));
    // A vector lane v < 8 added to a multiple of 8 does not reach the next multiple of 8.
    CHECK(simplified(an, ((t * 8) % 32 + v) / 8) == to_string(t % 4));
  }

  TEST_CASE("constants fold into one trailing term") {
    Analyzer an;
    Var i("i");
    // 3 + i + 4 - 10 == i - 3.
    CHECK(simplified(an, Expr(3) + i + 4 - 10) == to_string(i - 3));
  }

  TEST_CASE("canonical sums list positive terms by first appearance, then subtract") {
    Analyzer an;
    Var i("i"), j("j"), k("k");
    // j*2 - i + k + j + 3: j has coefficient 3, i has -1, k has 1.
    Expr e = j * 2 - i + k + j + 3;
    CHECK(simplified(an, e) == to_string(j * 3 + k - i + 3));
    // Only negative terms: the constant leads, 0 when there is none.
    CHECK(simplified(an, Expr(0) - i * 2 - j) == to_string(Expr(0) - i * 2 - j));
    CHECK(simplified(an, Expr(5) - i) == to_string(Expr(5) - i));
    CHECK(simplified(an, Expr(0) - i - 3) == to_string(Expr(0) - i - 3));
  }

  TEST_CASE("canonical unsigned sums keep small subtracted constants and lead with 248 - j") {
    Analyzer an;
    Var j("j", DataType::u8());
    Expr c248 = IntImmNode::make(DataType::u8(), 248), c1 = IntImmNode::make(DataType::u8(), 1);
    // In uint8, 248 == -8 modulo 256; with j subtracted the constant leads as 248.
    CHECK(simplified(an, c248 - j) == to_string(c248 - j));
    // j + 255 == j - 1 modulo 256: printed with the small constant.
    CHECK(simplified(an, j + IntImmNode::make(DataType::u8(), 255)) == to_string(j - c1));
  }

  TEST_CASE("simplification does not depend on where nodes live in memory") {
    // Build the same expression twice with fresh variables: the printed results agree.
    auto build_and_simplify = [] {
      Analyzer an;
      Var a("a"), b("b"), c("c");
      return simplified(an, c * 3 + a - b * 2 + a + b * 2 + c);
    };
    std::string first = build_and_simplify();
    CHECK(first == "c * 4 + a * 2");
    for (int n = 0; n < 5; ++n) CHECK(build_and_simplify() == first);
  }

  TEST_CASE("(i*8 + j) // 8 is i when 0 <= j < 8") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    CHECK(simplified(an, (i * 8 + j) / 8) == to_string(i));
  }

  TEST_CASE("(i*8 + j) % 8 is j when 0 <= j < 8") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    CHECK(simplified(an, (i * 8 + j) % 8) == to_string(j));
  }

  TEST_CASE("division splits out multiples of the divisor when the rest stays undecided") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 32);
    // (8i + j) // 8 == i + j // 8 and (8i + j) % 8 == j % 8 for any integer j.
    CHECK(simplified(an, (i * 8 + j) / 8) == to_string(i + j / 8));
    CHECK(simplified(an, (i * 8 + j) % 8) == to_string(j % 8));
    // (16i + 4j) // 4 == 4i + j exactly.
    CHECK(simplified(an, (i * 16 + j * 4) / 4) == to_string(i * 4 + j));
  }

  TEST_CASE("x // c is 0 and x % c is x when 0 <= x < c") {
    Analyzer an;
    Var x("x");
    an.bind(x, 0, 8);
    CHECK(simplified(an, x / 8) == "0");
    CHECK(simplified(an, x % 8) == to_string(x));
    // x + 8 in [8, 15]: // 8 is 1 and % 8 is x.
    CHECK(simplified(an, (x + 8) / 8) == "1");
    CHECK(simplified(an, (x + 8) % 8) == to_string(x));
  }

  TEST_CASE("nested floordiv by positive constants becomes one floordiv") {
    Analyzer an;
    Var x("x");
    CHECK(simplified(an, (x / 4) / 8) == to_string(x / 32));
  }

  TEST_CASE("modulo of a modulo by a multiple of the divisor collapses") {
    Analyzer an;
    Var x("x");
    CHECK(simplified(an, (x % 32) % 8) == to_string(x % 8));
    // (x % 4) % 8: x % 4 is in [0, 3], already below 8.
    CHECK(simplified(an, (x % 4) % 8) == to_string(x % 4));
  }

  TEST_CASE("division rules that need exact values are skipped when the sum may wrap") {
    Analyzer an;
    Var x("x");  // unbound int32: x * 8 may wrap around
    Expr e = (x * 8 + 1) / 8;
    Expr s = an.simplify(e);
    CHECK(to_string(s) == to_string(e));
    // At x = 2^28, x * 8 wraps to -2^31; both forms must still agree.
    IntEnv env{{static_cast<const VarNode*>(x.get()), int64_t{1} << 28}};
    CHECK(eval_int(s, env) == eval_int(e, env));
  }

  TEST_CASE("unsigned modulo by a large divisor keeps the exact remainder of the constant") {
    Analyzer an;
    Var i("i", DataType::u8());
    an.bind(i, 240, 16);  // [240, 255]
    Expr two = IntImmNode::make(DataType::u8(), 2), d = IntImmNode::make(DataType::u8(), 250);
    // i - 2 is in [238, 253] and crosses 250, so the modulo stays. The constant -2 == 248
    // (mod 256) has remainder 248 by 250, which no int8-sized representative holds: a rewrite
    // to `i - 8` would be wrong below 252 (240 - 2 == 238, but 240 - 8 == 232).
    Expr e = floormod(i - two, d);
    CHECK(simplified(an, e) == to_string(e));
    for (int64_t v = 240; v <= 255; ++v) {
      IntEnv env{{static_cast<const VarNode*>(i.get()), v}};
      CHECK(eval_int(an.simplify(e), env) == (v - 2) % 250);
    }
  }

  TEST_CASE("min and max decided by bounds are removed") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    CHECK(simplified(an, min(i, 16)) == to_string(i));
    CHECK(simplified(an, max(i, 16)) == "16");
    // (i*8 + j) - (i*8 + 8) == j - 8 <= -1: the first is always smaller.
    CHECK(simplified(an, min(i * 8 + j, i * 8 + 8)) == to_string(i * 8 + j));
    CHECK(simplified(an, min(i, j)) == to_string(min(i, j)));  // undecided: kept
  }

  TEST_CASE("comparisons decided by bounds fold to True or False") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    CHECK(simplified(an, i < 16) == "True");
    CHECK(simplified(an, i >= 16) == "False");
    CHECK(simplified(an, i * 8 + j < 128) == "True");  // at most 127
    CHECK(simplified(an, i < 8) == to_string(i < 8));
  }

  TEST_CASE("select with a constant condition folds to one arm") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    CHECK(simplified(an, if_then_else(i < 16, j, i)) == to_string(j));
    CHECK(simplified(an, if_then_else(i > 20, j, i + 0)) == to_string(i));
  }

  TEST_CASE("select arms are simplified knowing the condition") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    // In the true arm i < 8, so i % 8 == i; in the false arm i >= 8, so i // 8 == 1.
    Expr e = if_then_else(i < 8, i % 8, i / 8);
    CHECK(simplified(an, e) == to_string(if_then_else(i < 8, i, 1)));
  }

  TEST_CASE("simplify recurses into buffer-load indices and call arguments") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    Buffer a = BufferNode::make("A", {16, 8}, DataType::f32(), Scope::kShared);
    Expr load = BufferLoadNode::make(a, {(i * 8 + j) / 8, (i * 8 + j) % 8});
    CHECK(simplified(an, load) == "A[i, j]");
    CHECK(simplified(an, abs((i * 8 + j) / 8 - i)) == "T.abs(0)");
  }

  TEST_CASE("bitwise and with a covering mask is removed") {
    Analyzer an;
    Var j("j");
    an.bind(j, 0, 8);
    CHECK(simplified(an, j & 7) == to_string(j));
    CHECK(simplified(an, j & 3) == to_string(j & 3));
  }
}

TEST_SUITE("analyzer proofs") {
  TEST_CASE("can_prove proves only bounds that hold for the whole range") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);  // i in [0, 15]
    CHECK_FALSE(an.can_prove(i < 15));
    CHECK(an.can_prove(i < 16));
    CHECK(an.can_prove(i <= 15));
    CHECK_FALSE(an.can_prove(i > 0));
    CHECK(an.can_prove(i >= 0));
    CHECK_FALSE(an.can_prove(i == 3));
  }

  TEST_CASE("can_prove compares through the difference of the two sides") {
    Analyzer an;
    Var i("i"), j("j");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    // (i*8 + j) - (i*8 + 8) == j - 8 in [-8, -1]; against i*8 + 7 it is j - 7 in [-7, 0].
    CHECK(an.can_prove(i * 8 + j < i * 8 + 8));
    CHECK_FALSE(an.can_prove(i * 8 + j < i * 8 + 7));
  }

  TEST_CASE("can_prove of a conjunction needs both sides") {
    Analyzer an;
    Var i("i");
    an.bind(i, 0, 16);
    CHECK(an.can_prove(i >= 0 && i < 16));
    CHECK_FALSE(an.can_prove(i >= 0 && i < 15));
  }

  TEST_CASE("can_prove_equal of rearranged affine expressions") {
    Analyzer an;
    Var i("i"), j("j");
    CHECK(an.can_prove_equal((i + j) * 4 - j * 4, i * 4));
    CHECK_FALSE(an.can_prove_equal(i * 4, i * 4 + 1));
  }

  TEST_CASE("can_prove_equal uses the variables' ranges for division") {
    Analyzer an;
    Var i("i"), j("j"), k("k");
    an.bind(i, 0, 16);
    an.bind(j, 0, 8);
    an.bind(k, 0, 9);  // k can be 8
    CHECK(an.can_prove_equal((i * 8 + j) / 8, i));
    CHECK_FALSE(an.can_prove_equal((i * 8 + k) / 8, i));  // k == 8 gives i + 1
  }

  TEST_CASE("can_prove_equal never equates floating-point expressions") {
    Analyzer an;
    Var x("x", DataType::f32());
    CHECK_FALSE(an.can_prove_equal(x, x));
  }
}

namespace {

/// Random small integer expressions over two variables, for the property tests.
class RandomExprs {
 public:
  RandomExprs(uint32_t seed, Var i, Var j) : rng_(seed), i_(std::move(i)), j_(std::move(j)) {}

  Expr expr(int depth) {
    if (depth == 0 || pick(0, 3) == 0) return leaf();
    switch (pick(0, 13)) {
      case 0: case 1: return expr(depth - 1) + expr(depth - 1);
      case 2: return expr(depth - 1) - expr(depth - 1);
      case 3: return expr(depth - 1) * constant(-4, 4);
      case 4: return expr(depth - 1) * expr(depth - 1);
      case 5: case 6: return floordiv(expr(depth - 1), divisor());
      case 7: case 8: return floormod(expr(depth - 1), divisor());
      case 9: return min(expr(depth - 1), expr(depth - 1));
      case 10: return max(expr(depth - 1), expr(depth - 1));
      case 11: return if_then_else(compare(depth - 1), expr(depth - 1), expr(depth - 1));
      case 12: return pick(0, 1) ? (expr(depth - 1) & constant(0, 15))
                                 : (expr(depth - 1) ^ expr(depth - 1));
      default: return pick(0, 1) ? (expr(depth - 1) >> constant(0, 3))
                                 : (expr(depth - 1) << constant(0, 3));
    }
  }

  Expr compare(int depth) {
    Expr a = expr(depth), b = expr(depth);
    switch (pick(0, 5)) {
      case 0: return a < b;
      case 1: return a <= b;
      case 2: return a > b;
      case 3: return a >= b;
      case 4: return a == b;
      default: return a != b;
    }
  }

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  Expr leaf() {
    switch (pick(0, 4)) {
      case 0: case 1: return i_;
      case 2: case 3: return j_;
      default: return constant(-9, 9);
    }
  }
  /// A literal of the variables' dtype (make_binary gives a literal the other operand's type).
  Expr constant(int64_t lo, int64_t hi) { return IntImmNode::make(i_.dtype(), pick(lo, hi)); }
  Expr divisor() {
    int64_t d = pick(1, 9);
    return IntImmNode::make(i_.dtype(), pick(0, 4) == 0 ? -d : d);
  }

  std::mt19937 rng_;
  Var i_, j_;
};

/// Calls fn(env) at every point of the box i in [i_lo, i_lo + i_ext), j likewise.
void for_each_point(const Var& i, int64_t i_lo, int64_t i_ext, const Var& j, int64_t j_lo,
                    int64_t j_ext, const std::function<void(const IntEnv&)>& fn) {
  IntEnv env;
  for (int64_t a = i_lo; a < i_lo + i_ext; ++a) {
    for (int64_t b = j_lo; b < j_lo + j_ext; ++b) {
      env[static_cast<const VarNode*>(i.get())] = a;
      env[static_cast<const VarNode*>(j.get())] = b;
      fn(env);
    }
  }
}

/// One random case: an analyzer with i and j bound to small ranges, and expressions over them.
struct Trial {
  Analyzer& an;
  Expr e, other;  // two random expressions over i and j
  Var i, j;
  int64_t i_lo, i_ext, j_lo, j_ext;
};

/// Runs `check` on many random cases over int32, int8 (which overflows easily), uint8 (where
/// subtraction wraps) and int64 variables.
void run_trials(uint32_t seed, int count, const std::function<void(const Trial&)>& check) {
  const DataType types[] = {DataType::i32(), DataType::i8(), DataType::u8(), DataType::i64()};
  for (DataType t : types) {
    Var i("i", t), j("j", t);
    RandomExprs gen(seed, i, j);
    for (int n = 0; n < count; ++n) {
      Analyzer an;
      // Ranges near zero; for 8-bit types, every third range anywhere in the type (near the
      // ends, where sums wrap around).
      auto pick_lo = [&](int64_t ext) {
        if (t.bits == 8 && gen.pick(0, 2) == 0) {
          return t.is_uint() ? gen.pick(0, 256 - ext) : gen.pick(-128, 128 - ext);
        }
        return gen.pick(t.is_uint() ? 0 : -6, 4);
      };
      int64_t i_ext = gen.pick(1, 8), i_lo = pick_lo(i_ext);
      int64_t j_ext = gen.pick(1, 8), j_lo = pick_lo(j_ext);
      an.bind(i, i_lo, i_ext);
      an.bind(j, j_lo, j_ext);
      Expr e = gen.expr(4);
      Expr other = gen.expr(2);
      check(Trial{an, e, other, i, j, i_lo, i_ext, j_lo, j_ext});
    }
  }
}

}  // namespace

TEST_SUITE("analyzer properties") {
  TEST_CASE("property: every value of every sub-expression lies within its const_int_bound") {
    run_trials(1234, 400, [](const Trial& t) {
      pre_order_visit(t.e, [&](const Expr& sub) {
        IntBound b = t.an.const_int_bound(sub);
        for_each_point(t.i, t.i_lo, t.i_ext, t.j, t.j_lo, t.j_ext, [&](const IntEnv& env) {
          int64_t v = eval_int(sub, env);
          if (v < b.min || v > b.max) {
            FAIL("value ", v, " of ", to_string(sub), " (", sub.dtype().name(), ") outside [",
                 b.min, ", ", b.max, "] at i=", env.at(static_cast<const VarNode*>(t.i.get())),
                 ", j=", env.at(static_cast<const VarNode*>(t.j.get())));
          }
        });
      });
    });
  }

  TEST_CASE("property: simplify(e) evaluates equal to e at every point") {
    run_trials(5678, 400, [](const Trial& t) {
      Expr s = t.an.simplify(t.e);
      REQUIRE(s.dtype() == t.e.dtype());
      for_each_point(t.i, t.i_lo, t.i_ext, t.j, t.j_lo, t.j_ext, [&](const IntEnv& env) {
        int64_t want = eval_int(t.e, env), got = eval_int(s, env);
        if (want != got) {
          FAIL(to_string(t.e), " == ", want, " but its simplified form ", to_string(s), " == ",
               got, " at i=", env.at(static_cast<const VarNode*>(t.i.get())),
               ", j=", env.at(static_cast<const VarNode*>(t.j.get())));
        }
      });
    });
  }

  TEST_CASE("property: can_prove never proves a comparison that fails at some point") {
    run_trials(91011, 400, [](const Trial& t) {
      const Expr& a = t.e;
      const Expr& b = t.other;
      for (const Expr& c : {a < b, a <= b, a > b, a >= b, a == b, a != b, a >= Expr(0),
                            a < Expr(3) && b > Expr(-2), a < b || a == Expr(1)}) {
        if (!t.an.can_prove(c)) continue;
        for_each_point(t.i, t.i_lo, t.i_ext, t.j, t.j_lo, t.j_ext, [&](const IntEnv& env) {
          if (eval_int(c, env) == 0) FAIL("proved ", to_string(c), " but it fails at a point");
        });
      }
    });
  }
}

namespace {

/// True when `e` divides by the literal -1 (int64 INT64_MIN // -1 cannot be evaluated exactly).
bool divides_by_minus_one(const Expr& e) {
  bool found = false;
  pre_order_visit(e, [&](const Expr& x) {
    const auto* b = dynamic_cast<const BinaryNode*>(x.get());
    bool div = x.kind() == ExprKind::kFloorDiv || x.kind() == ExprKind::kFloorMod;
    found |= b && div && as_const_int(b->b) == -1;
  });
  return found;
}

}  // namespace

TEST_SUITE("analyzer properties") {
  TEST_CASE("property: near the dtype limits, sampled values respect bounds and simplify") {
    // Ranges touching either end of int8, int32, uint32 and int64, where sums and products wrap
    // around; too wide to enumerate, so each case is checked at sampled points (ends included).
    std::mt19937_64 rng(2024);
    auto rnd = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    for (DataType t : {DataType::i8(), DataType::i32(), DataType::u32(), DataType::i64()}) {
      Var i("i", t), j("j", t);
      RandomExprs gen(77, i, j);
      const IntBound full = Analyzer().const_int_bound(i);  // unbound: the whole dtype
      auto pick_range = [&]() -> IntBound {
        int64_t width = rnd(0, 300);
        switch (rnd(0, 3)) {
          case 0: return {full.min, std::min(full.max, full.min + width)};
          case 1: return {std::max(full.min, full.max - width), full.max};
          case 2: return full;
          default: {
            int64_t lo = std::clamp<int64_t>(rnd(-150, 150), full.min, full.max);
            return {lo, std::min(full.max, lo + width)};
          }
        }
      };
      for (int n = 0; n < 300; ++n) {
        Analyzer an;
        IntBound bi = pick_range(), bj = pick_range();
        an.bind(i, bi);
        an.bind(j, bj);
        Expr e = gen.expr(4);
        if (t == DataType::i64() && divides_by_minus_one(e)) continue;
        Expr s = an.simplify(e);
        for (int p = 0; p < 40; ++p) {
          IntEnv env{{static_cast<const VarNode*>(i.get()), p == 0 ? bi.min : rnd(bi.min, bi.max)},
                     {static_cast<const VarNode*>(j.get()), p == 1 ? bj.max : rnd(bj.min, bj.max)}};
          int64_t want = eval_int(e, env), got = eval_int(s, env);
          if (want != got) FAIL(to_string(e), " == ", want, " but ", to_string(s), " == ", got);
          pre_order_visit(e, [&](const Expr& sub) {
            IntBound b = an.const_int_bound(sub);
            int64_t v = eval_int(sub, env);
            if (v < b.min || v > b.max) {
              FAIL(to_string(sub), " == ", v, " outside [", b.min, ", ", b.max, "]");
            }
          });
        }
      }
    }
  }
}
