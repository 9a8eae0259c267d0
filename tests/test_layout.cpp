// Tests of core/layout: Layout and Fragment construction, evaluation, the Fig. 6 primitives,
// inverse, composition, reshape, equality and printing. Expected values are worked out by hand in
// the comments.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/layout.h"

using namespace tessel;

namespace {

using Shape = std::vector<int64_t>;

/// The mma.m16n8k16 C fragment written out by hand (PTX: row g + 8 (e >> 1), col 2t + (e & 1)).
Fragment c_fragment() {
  return Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(floormod(v[0], 8) * 4 + floordiv(v[1], 2),
                     floormod(v[1], 2) + floordiv(v[0], 8) * 2);
  });
}

template <typename F>
std::string user_error_text(F&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no user error>";
}

}  // namespace

TEST_SUITE("layout construction") {
  TEST_CASE("row_major maps (i, j) to i * cols + j") {
    Layout l = Layout::row_major({4, 6});
    CHECK(l.map({2, 3}) == Shape{15});  // 2 * 6 + 3
    CHECK(l.output_shape() == Shape{24});
  }

  TEST_CASE("column_major maps (i, j) to i + j * rows") {
    CHECK(Layout::column_major({4, 6}).map({2, 3}) == Shape{14});  // 2 + 3 * 4
  }

  TEST_CASE("output shape is the analyzer's bound plus one, per output") {
    Layout l = Layout::from_fn({8, 8}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{floordiv(v[0], 2), v[1]};
    });
    CHECK(l.output_shape() == Shape{4, 8});  // i // 2 <= 3, j <= 7
  }

  TEST_CASE("a padded layout is accepted and its output shape has the holes") {
    // Fig. 5(c): rows of 4 padded to 5; the largest offset is 3 * 5 + 3 = 18.
    Layout l = Layout::from_fn(
        {4, 4}, [](const std::vector<Var>& v) { return std::vector<Expr>{v[0] * 5 + v[1]}; });
    CHECK(l.output_shape() == Shape{19});
    CHECK(l.map({1, 0}) == Shape{5});
  }

  TEST_CASE("make rejects a variable that is not a parameter") {
    Var i("i"), stray("n");
    std::string msg = user_error_text([&] { (void)Layout::make({i}, {4}, {i + stray}); });
    CHECK(msg.find("`n`") != std::string::npos);
    CHECK(msg.find("not one of the lambda's parameters") != std::string::npos);
  }

  TEST_CASE("make rejects outputs that can be negative") {
    Var i("i");
    std::string msg = user_error_text([&] { (void)Layout::make({i}, {4}, {i - 1}); });
    CHECK(msg.find("can be negative (down to -1)") != std::string::npos);
  }

  TEST_CASE("make rejects true division and says to use //") {
    Var i("i");
    std::string msg = user_error_text([&] { (void)Layout::make({i}, {4}, {DivNode::make(i, 2)}); });
    CHECK(msg.find("use // for floor division") != std::string::npos);
  }

  TEST_CASE("make rejects a truth-valued output") {
    Var i("i");
    std::string msg = user_error_text([&] { (void)Layout::make({i}, {4}, {i < 2}); });
    CHECK(msg.find("is a truth value") != std::string::npos);
  }

  TEST_CASE("make rejects a parameter count that differs from the shape") {
    Var i("i");
    std::string msg = user_error_text([&] { (void)Layout::make({i}, {4, 4}, {i}); });
    CHECK(msg.find("1 parameters but the shape [4, 4] has 2 dimensions") != std::string::npos);
  }

  TEST_CASE("try_make returns nullopt where make throws") {
    Var i("i");
    CHECK_FALSE(Layout::try_make({i}, {0}, {i}).has_value());
    CHECK(Layout::try_make({i}, {4}, {i}).has_value());
  }

  TEST_CASE("check_invariants holds for a valid layout") {
    CHECK_FALSE(Layout::row_major({3, 5}).check_invariants().has_value());
  }

  TEST_CASE("map with the wrong number of indices is a user error") {
    CHECK_THROWS_AS((void)Layout::row_major({4, 4}).map({1}), UserError);
  }
}

TEST_SUITE("layout printing and equality") {
  TEST_CASE("a layout prints in the spec syntax") {
    CHECK(Layout::row_major({64, 64}).to_string() == "Layout([64, 64], lambda i, j: i * 64 + j)");
  }

  TEST_CASE("several outputs print as a tuple") {
    Layout l = Layout::from_fn({8, 8}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{floordiv(v[0], 2), v[1]};
    });
    CHECK(l.to_string() == "Layout([8, 8], lambda i, j: (i // 2, j))");
  }

  TEST_CASE("structural equality renames iter vars") {
    Var a("a"), b("b");
    Layout mine = Layout::make({a, b}, {4, 4}, {a * 4 + b});
    CHECK(mine == Layout::row_major({4, 4}));
  }

  TEST_CASE("two spellings of one map are equal by evaluation, not structurally") {
    Layout x = Layout::from_fn(
        {4, 4}, [](const std::vector<Var>& v) { return std::vector<Expr>{v[1] + v[0] * 4}; });
    Layout y = Layout::row_major({4, 4});
    CHECK_FALSE(x == y);
    CHECK(equal_by_evaluation(x, y));
  }

  TEST_CASE("layouts of different maps are not equal by evaluation") {
    CHECK_FALSE(equal_by_evaluation(Layout::row_major({4, 4}), Layout::column_major({4, 4})));
  }

  TEST_CASE("layouts into storage of different ranks are equal when their flat offsets are") {
    // (i // 2, i % 2 * 4 + j) over storage (4, 8) is offset (i // 2) * 8 + (i % 2) * 4 + j =
    // i * 4 + j: row-major, written with two outputs (as make_swizzled_layout writes its
    // swizzles, where a wgmma descriptor's is one flat offset).
    Layout two = Layout::from_fn({8, 4}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{floordiv(v[0], 2), floormod(v[0], 2) * 4 + v[1]};
    });
    REQUIRE(two.output_shape() == std::vector<int64_t>{4, 8});
    CHECK_FALSE(equal_by_evaluation(two, Layout::row_major({8, 4})));
    CHECK(equal_offsets_by_evaluation(two, Layout::row_major({8, 4})));
    CHECK_FALSE(equal_offsets_by_evaluation(two, Layout::column_major({8, 4})));
  }
}

TEST_SUITE("layout algebra") {
  TEST_CASE("inverse of a non-power-of-two row-major layout divides and takes remainders") {
    Layout inv = Layout::row_major({3, 5}).inverse();
    CHECK(inv.input_shape() == Shape{15});
    CHECK(inv.map({13}) == Shape{2, 3});  // 13 = 2 * 5 + 3
  }

  TEST_CASE("inverse round-trips every point of a transposing layout") {
    Layout l = Layout::from_fn(
        {6, 4}, [](const std::vector<Var>& v) { return std::vector<Expr>{v[1] * 6 + v[0]}; });
    Layout inv = l.inverse();
    for_each_index(l.input_shape(), [&](const Shape& p) { CHECK(inv.map(l.map(p)) == p); });
  }

  TEST_CASE("inverse of an XOR swizzle round-trips every point") {
    // x ^ ((x >> 3) & 7): the low three bits are XORed with bits 3..5.
    Layout l = Layout::from_fn({64}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[0] ^ ((v[0] >> 3) & 7)};
    });
    Layout inv = l.inverse();
    for_each_index(l.input_shape(), [&](const Shape& p) { CHECK(inv.map(l.map(p)) == p); });
  }

  TEST_CASE("inverse of a padded layout names an output that is never produced") {
    std::string msg = user_error_text([] {
      (void)Layout::from_fn({4, 4}, [](const std::vector<Var>& v) {
        return std::vector<Expr>{v[0] * 5 + v[1]};
      }).inverse();
    });
    CHECK(msg.find("not surjective: output (4)") != std::string::npos);  // 0*5+4 is a hole
  }

  TEST_CASE("inverse of a non-injective layout names two colliding inputs") {
    std::string msg = user_error_text([] {
      (void)Layout::from_fn({4, 4}, [](const std::vector<Var>& v) {
        return std::vector<Expr>{v[0] + v[1]};
      }).inverse();
    });
    // Row-major order meets (0, 1) -> 1 first, then (1, 0) -> 1.
    CHECK(msg.find("inputs (0, 1) and (1, 0) both map to (1)") != std::string::npos);
  }

  TEST_CASE("then composes a transpose with row-major into column-major") {
    Layout transpose = Layout::from_fn({4, 8}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[1], v[0]};
    });
    Layout composed = transpose.then(Layout::row_major({8, 4}));
    CHECK(equal_by_evaluation(composed, Layout::column_major({4, 8})));
  }

  TEST_CASE("then with mismatched shapes is a user error") {
    CHECK_THROWS_AS((void)Layout::row_major({4, 4}).then(Layout::row_major({8, 4})), UserError);
  }

  TEST_CASE("reshape of row-major is row-major of the new shape") {
    Layout r = Layout::row_major({4, 6}).reshape({8, 3});
    CHECK(r.input_shape() == Shape{8, 3});
    CHECK(equal_by_evaluation(r, Layout::row_major({8, 3})));
  }

  TEST_CASE("reshape to a different element count is a user error") {
    CHECK_THROWS_AS((void)Layout::row_major({4, 6}).reshape({5, 5}), UserError);
  }
}

TEST_SUITE("fragment") {
  TEST_CASE("map_fragment gives thread and register") {
    // Element (9, 2): thread 9 % 8 * 4 + 2 // 2 = 5, local 2 % 2 + 9 // 8 * 2 = 2.
    auto [thread, local] = c_fragment().map_fragment({9, 2});
    CHECK(thread == 5);
    CHECK(local == 2);
  }

  TEST_CASE("thread and local extents come from the bounds") {
    Fragment f = c_fragment();
    CHECK(f.thread_extent() == 32);  // 7 * 4 + 7 // 2 = 31
    CHECK(f.local_extent() == 4);    // 1 + 1 * 2 = 3
    CHECK(f.replicate() == 1);
  }

  TEST_CASE("a fragment prints in the spec syntax") {
    CHECK(c_fragment().to_string() ==
          "Fragment([16, 8], lambda i, j: (i % 8 * 4 + j // 2, j % 2 + i // 8 * 2), replicate=1)");
  }

  TEST_CASE("a replicated fragment prints its replicate variable") {
    CHECK(c_fragment().replicate(2).to_string().find("lambda i, j, rep:") != std::string::npos);
  }

  TEST_CASE("a local index that uses the replicate variable is rejected") {
    Var i("i"), rep("rep");
    std::string msg = user_error_text([&] { (void)Fragment::make({i}, {4}, i, rep, 2, rep); });
    CHECK(msg.find("uses the replicate variable") != std::string::npos);
  }

  TEST_CASE("a replica out of range is a user error") {
    CHECK_THROWS_AS((void)c_fragment().map_fragment({0, 0}, 1), UserError);
  }

  TEST_CASE("repeat puts copies in new registers of the same threads") {
    Fragment r = c_fragment().repeat({2, 1});
    CHECK(r.input_shape() == Shape{32, 8});
    CHECK(r.thread_extent() == 32);
    CHECK(r.local_extent() == 8);
    // (17, 2) is copy 1 of base point (1, 2): thread 1 * 4 + 1 = 5, local 0 + 1 * 4 = 4.
    CHECK(r.map_fragment({17, 2}) == std::pair<int64_t, int64_t>{5, 4});
  }

  TEST_CASE("repeat_on_thread puts copies in new threads") {
    Fragment r = c_fragment().repeat_on_thread({2, 1});
    CHECK(r.thread_extent() == 64);
    CHECK(r.local_extent() == 4);
    // (17, 2): thread 5 + 1 * 32 = 37, local 0.
    CHECK(r.map_fragment({17, 2}) == std::pair<int64_t, int64_t>{37, 0});
  }

  TEST_CASE("repeat numbers copies row-major when lower_dim_first") {
    // Copy of (0, 8) in a 2x2 repeat grid is (0, 1): number 0 * 2 + 1 = 1 -> local 0 + 1 * 4.
    CHECK(c_fragment().repeat({2, 2}, false, true).map_fragment({0, 8}).second == 4);
  }

  TEST_CASE("repeat numbers copies column-major otherwise") {
    // Copy (0, 1) is number 0 + 1 * 2 = 2 -> local 0 + 2 * 4 = 8.
    CHECK(c_fragment().repeat({2, 2}, false, false).map_fragment({0, 8}).second == 8);
  }

  TEST_CASE("replicate adds whole copies on new threads") {
    Fragment r = c_fragment().replicate(2);
    CHECK(r.replicate() == 2);
    CHECK(r.thread_extent() == 64);
    // (9, 2) lives in thread 5 (replica 0) and 5 + 32 = 37 (replica 1), register 2 in both.
    CHECK(r.map_fragment({9, 2}, 0) == std::pair<int64_t, int64_t>{5, 2});
    CHECK(r.map_fragment({9, 2}, 1) == std::pair<int64_t, int64_t>{37, 2});
  }

  TEST_CASE("condense_rep_var drops the replica bits the thread ignores") {
    // thread = i + 16 * (rep // 2): replicas 0 and 1 (and 2 and 3) are the same threads.
    Fragment f = Fragment::from_fn(
        {16},
        [](const std::vector<Var>& v, const Var& rep) {
          return std::pair(v[0] + floordiv(rep, 2) * 16, Expr(0));
        },
        4);
    Fragment c = f.condense_rep_var();
    CHECK(c.replicate() == 2);
    Fragment expected = Fragment::from_fn(
        {16},
        [](const std::vector<Var>& v, const Var& rep) {
          return std::pair(v[0] + rep * 16, Expr(0));
        },
        2);
    CHECK(equal_by_evaluation(c, expected));
  }

  TEST_CASE("condense_rep_var of an unused replicate variable gives replicate 1") {
    Fragment f = Fragment::from_fn(
        {16}, [](const std::vector<Var>& v, const Var&) { return std::pair(Expr(v[0]), Expr(0)); },
        4);
    CHECK(f.condense_rep_var().replicate() == 1);
  }

  TEST_CASE("fully_replicated gives every thread the whole tensor") {
    Fragment f = Fragment::fully_replicated({4}, 8);
    CHECK(f.thread_extent() == 8);
    CHECK(f.replicate() == 8);
    CHECK(f.map_fragment({3}, 6) == std::pair<int64_t, int64_t>{6, 3});
  }

  TEST_CASE("fragment inverse maps (thread, local) back to the element") {
    Layout inv = c_fragment().inverse();
    CHECK(inv.input_shape() == Shape{32, 4});
    CHECK(inv.map({5, 2}) == Shape{9, 2});  // lane 5 register 2 holds (9, 2)
    Fragment f = c_fragment();
    for_each_index(f.input_shape(), [&](const Shape& p) {
      auto [t, l] = f.map_fragment(p);
      CHECK(inv.map({t, l}) == p);
    });
  }

  TEST_CASE("fragment inverse with replication returns the replica last") {
    Layout inv = c_fragment().replicate(2).inverse();
    CHECK(inv.map({37, 2}) == Shape{9, 2, 1});
  }

  TEST_CASE("fragment reshape keeps every element's thread and register") {
    Fragment r = c_fragment().reshape({128});
    CHECK(r.map_fragment({9 * 8 + 2}) == std::pair<int64_t, int64_t>{5, 2});
  }

  TEST_CASE("a layout followed by a fragment re-indexes the fragment") {
    Layout transpose = Layout::from_fn({8, 16}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[1], v[0]};
    });
    Fragment t = transpose.then(c_fragment());
    CHECK(t.map_fragment({2, 9}) == std::pair<int64_t, int64_t>{5, 2});
  }

  TEST_CASE("fragment structural equality renames iter vars") {
    Var a("a"), b("b");
    Fragment mine = Fragment::make({a, b}, {16, 8}, floormod(a, 8) * 4 + floordiv(b, 2),
                                   floormod(b, 2) + floordiv(a, 8) * 2);
    CHECK(mine == c_fragment());
    CHECK_FALSE(mine == c_fragment().replicate(2));
  }
}
