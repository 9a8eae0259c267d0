// Layout and fragment proofs: results on the named layouts, counterexample text in the user's
// terms, symbolic sizes, and agreement with exhaustive enumeration over many generated layouts.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "core/builtin_layouts.h"
#include "core/int_eval.h"
#include "verify/layout_proofs.h"

using namespace tessel;

namespace {

ProofOptions named(const std::string& name) {
  ProofOptions o;
  o.name = name;
  return o;
}

/// Random integer expressions over `vars`: every operator the translator handles, with small
/// constants so nothing leaves int32.
class ExprGen {
 public:
  explicit ExprGen(uint32_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  Expr gen(const std::vector<Var>& vars, int depth) {
    if (depth == 0 || pick(4) == 0) {
      if (pick(3) == 0) return make_int(pick(9) - 2);
      return vars[pick(static_cast<int>(vars.size()))];
    }
    Expr a = gen(vars, depth - 1), b = gen(vars, depth - 1);
    Expr c = make_int(pick(7) + 1);
    switch (pick(13)) {
      case 0:
        return a + b;
      case 1:
        return a - b;
      case 2:
        return a * (pick(2) ? b : c);
      case 3:
        return floordiv(a, pick(3) == 0 ? make_int(-(pick(4) + 1)) : c);
      case 4:
        return floormod(a, pick(3) == 0 ? make_int(-(pick(4) + 1)) : c);
      case 5:
        return a ^ b;
      case 6:
        return a & b;
      case 7:
        return a | b;
      case 8:
        return a >> make_int(pick(3));
      case 9:
        return a << make_int(pick(3));
      case 10:
        return min(a, b);
      case 11:
        return max(a, b);
      default:
        return if_then_else(a < b, a, b + c);
    }
  }

 private:
  std::mt19937 rng_;
};

/// A random small layout whose outputs are kept in [0, m) with a final floormod.
std::optional<Layout> random_layout(ExprGen& g) {
  size_t rank = 1 + g.pick(2), out_rank = 1 + g.pick(2);
  std::vector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(1 + g.pick(6));
  std::vector<Var> vars;
  for (size_t d = 0; d < rank; ++d) vars.emplace_back(std::string(1, static_cast<char>('i' + d)));
  std::vector<Expr> outs;
  for (size_t d = 0; d < out_rank; ++d) {
    Expr e = g.gen(vars, 3);
    // Keep some maps affine-like so that bijective ones occur too.
    if (g.pick(3) == 0) e = vars[0] * make_int(shape.size() > 1 ? shape[1] : 1) + vars.back();
    outs.push_back(floormod(e, make_int(1 + g.pick(24))));
  }
  return Layout::try_make(vars, shape, outs);
}

struct Truth {
  bool injective = true, surjective = true;
};

Truth enumerate(const Layout& l) {
  Truth t;
  std::set<std::vector<int64_t>> seen;
  for_each_index(l.input_shape(), [&](const std::vector<int64_t>& x) {
    if (!seen.insert(l.map(x)).second) t.injective = false;
  });
  int64_t out_points = 1;
  for (int64_t e : l.output_shape()) out_points *= e;
  t.surjective = static_cast<int64_t>(seen.size()) == out_points;
  return t;
}

}  // namespace

TEST_SUITE("layout proofs") {
  TEST_CASE("the GEMM example's shared-memory swizzles are bijections") {
    for (const Layout& l :
         {gemm_operand_layout(128, 32, DataType::f16()),
          gemm_operand_layout(32, 128, DataType::f16()), swizzle_32b(32, 16, DataType::f16()),
          swizzle_128b(64, 64, DataType::f16()), cute_swizzle(3, 4, 3, 1024)}) {
      LayoutProofs p = prove_layout(l, named("A_shared"));
      CHECK_MESSAGE(p.bijective.holds, l.to_string() << ": " << p.bijective.message);
      CHECK(p.injective.holds);
      CHECK(p.surjective.holds);
      CHECK(p.in_range.holds);
    }
  }

  TEST_CASE("a 4096x4096 fp16 128B-swizzled layout is proved bijective") {
    ProofResult r = prove_bijective(swizzle_128b(4096, 4096, DataType::f16()), named("A_shared"));
    CHECK(r.holds);
    CHECK(r.message == "proved");
  }

  TEST_CASE("a collision is reported as two indices of the buffer and their common offset") {
    // Rows of 65 elements stored 64 apart: only (0, 64) and (1, 0) collide, at offset 64.
    Layout l = Layout::from_fn({2, 65}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[0] * make_int(64) + v[1]};
    });
    ProofResult r = prove_injective(l, named("A_shared"));
    CHECK_FALSE(r.holds);
    REQUIRE(r.cex);
    CHECK(r.message == "A_shared[0, 64] and A_shared[1, 0] both map to offset 64");
    CHECK(r.cex->indices == std::vector<std::vector<int64_t>>{{0, 64}, {1, 0}});
    CHECK(r.cex->output == std::vector<int64_t>{64});
  }

  TEST_CASE("every collision counterexample replays on the layout it came from") {
    // Rows of 65 stored 64 apart over 128 rows: A_shared[i, 64] and A_shared[i + 1, 0] collide.
    Layout l = Layout::from_fn({128, 65}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[0] * make_int(64) + v[1]};
    });
    ProofResult r = prove_injective(l, named("A_shared"));
    REQUIRE(r.cex);
    const auto& a = r.cex->indices[0];
    const auto& b = r.cex->indices[1];
    CHECK(a != b);
    CHECK(l.map(a) == l.map(b));
    CHECK(r.message == format_index("A_shared", a) + " and " + format_index("A_shared", b) +
                           " both map to offset " + std::to_string(l.map(a)[0]));
  }

  TEST_CASE("multi-dimensional outputs are reported as a storage index") {
    // (i // 2, j): (0, j) and (1, j) both go to (0, j).
    Layout l = Layout::from_fn({2, 3}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{floordiv(v[0], make_int(2)), v[1]};
    });
    ProofResult r = prove_injective(l, named("B"));
    REQUIRE(r.cex);
    int64_t j = r.cex->indices[0][1];
    CHECK(r.message == "B[0, " + std::to_string(j) + "] and B[1, " + std::to_string(j) +
                           "] both map to storage index (0, " + std::to_string(j) + ")");
  }

  TEST_CASE("a padded layout is injective, not surjective: the holes are named") {
    // padded(4, 4, 1): rows at 0, 5, 10, 15; output box [19]; offsets 4, 9, 14 are holes.
    Layout l = padded(4, 4, 1);
    LayoutProofs p = prove_layout(l, named("A_shared"));
    CHECK(p.injective.holds);
    CHECK_FALSE(p.surjective.holds);
    CHECK_FALSE(p.bijective.holds);
    CHECK(p.surjective.message == "no index of A_shared maps to offset 4 of the output box [19]");
    // Without enumeration Z3 answers the quantified query itself: some hole.
    ProofOptions z3_only = named("A_shared");
    z3_only.enumerate_limit = 0;
    ProofResult q = prove_surjective(l, z3_only);
    REQUIRE(q.cex);
    int64_t hole = q.cex->output[0];
    CHECK((hole == 4 || hole == 9 || hole == 14));
  }

  TEST_CASE("a layout with a symbolic row length is proved for every length at once") {
    // A[i, j] -> i * n + j over a 64 x n box, output box [64 n], for every 1 <= n <= 4096.
    Var i("i"), j("j"), n("n");
    IndexMap map;
    map.iter_vars = {i, j};
    map.input_shape = {make_int(64), n};
    map.forward_index = {i * n + j};
    map.output_shape = {make_int(64) * n};
    ProofOptions o = named("A");
    o.domain.bound(n, 1, 4096);
    LayoutProofs p = prove_layout(map, o);
    CHECK(p.in_range.holds);
    CHECK(p.injective.holds);
    CHECK(p.surjective.holds);
    CHECK(p.bijective.holds);
  }

  TEST_CASE("a symbolic layout's counterexample names the size where it fails") {
    // Rows stored 64 apart while n may exceed 64: A[i, j] and A[i', j'] collide for some n > 64.
    Var i("i"), j("j"), n("n");
    IndexMap map;
    map.iter_vars = {i, j};
    map.input_shape = {make_int(64), n};
    map.forward_index = {i * make_int(64) + j};
    map.output_shape = {make_int(64) * n};
    ProofOptions o = named("A");
    o.domain.bound(n, 1, 4096);
    ProofResult r = prove_injective(map, o);
    CHECK_FALSE(r.holds);
    REQUIRE(r.cex);
    REQUIRE(r.cex->symbols.size() == 1);
    int64_t nv = r.cex->symbols[0].second;
    CHECK(nv > 64);
    const auto& a = r.cex->indices[0];
    const auto& b = r.cex->indices[1];
    CHECK(a[1] < nv);
    CHECK(b[1] < nv);
    CHECK(a[0] * 64 + a[1] == b[0] * 64 + b[1]);
    CHECK(r.message == format_index("A", a) + " and " + format_index("A", b) +
                           " both map to offset " + std::to_string(a[0] * 64 + a[1]) +
                           " (when n = " + std::to_string(nv) + ")");
    // With the fact n <= 64 it is injective again.
    o.domain.assume(n <= make_int(64));
    CHECK(prove_injective(map, o).holds);
  }

  TEST_CASE("an output outside the declared box is reported with the box") {
    Var i("i"), j("j"), n("n");
    IndexMap map;
    map.iter_vars = {i, j};
    map.input_shape = {make_int(4), n};
    map.forward_index = {i * (n + make_int(1)) + j};  // padded rows, box not enlarged
    map.output_shape = {make_int(4) * n};
    ProofOptions o = named("A");
    o.domain.bound(n, 1, 64);
    ProofResult r = prove_in_range(map, o);
    REQUIRE(r.cex);
    int64_t nv = r.cex->symbols[0].second;
    const auto& x = r.cex->indices[0];
    int64_t off = x[0] * (nv + 1) + x[1];
    CHECK(off >= 4 * nv);
    CHECK(r.message == format_index("A", x) + " maps to offset " + std::to_string(off) +
                           ", outside the output box [" + std::to_string(4 * nv) +
                           "] (when n = " + std::to_string(nv) + ")");
  }

  TEST_CASE("two spellings of one layout are equal; a different one is not") {
    Layout a = Layout::row_major({8, 8});
    Layout b = Layout::from_fn({8, 8}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{(v[0] << make_int(3)) | v[1]};
    });
    CHECK(prove_equal(a, b).holds);
    Layout c = Layout::from_fn({8, 8}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{v[0] * make_int(8) + (v[1] ^ make_int(1))};
    });
    ProofResult r = prove_equal(a, c, named("S"));
    REQUIRE(r.cex);
    const auto& x = r.cex->indices[0];
    CHECK(r.message == format_index("S", x) + " maps to offset " + std::to_string(x[0] * 8 + x[1]) +
                           " in the first layout but to offset " +
                           std::to_string(x[0] * 8 + (x[1] ^ 1)) + " in the second");
  }

  TEST_CASE("property: Z3 and exhaustive enumeration agree on generated layouts") {
    ExprGen g(20240611);
    int compared = 0, undecided = 0, injective_seen = 0, bijective_seen = 0;
    for (int n = 0; compared < 150 && n < 2000; ++n) {
      std::optional<Layout> l = random_layout(g);
      if (!l) continue;
      Truth t = enumerate(*l);
      ProofOptions o = named("L");
      o.enumerate_limit = 0;  // surjectivity through Z3's quantified query, not enumeration
      o.timeout_ms = 5000;
      LayoutProofs p = prove_layout(*l, o);
      ++compared;
      CHECK(p.in_range.holds);
      CHECK_MESSAGE(p.injective.holds == t.injective, l->to_string());
      if (!p.surjective.decided) {
        ++undecided;
      } else {
        CHECK_MESSAGE(p.surjective.holds == t.surjective, l->to_string());
      }
      if (!t.injective) {
        REQUIRE(p.injective.cex);
        CHECK(l->map(p.injective.cex->indices[0]) == l->map(p.injective.cex->indices[1]));
      }
      injective_seen += t.injective;
      bijective_seen += t.injective && t.surjective;
    }
    CHECK(compared == 150);
    CHECK(undecided <= 5);  // the quantified query may give up; it must never be wrong
    CHECK(injective_seen >= 10);
    CHECK(bijective_seen >= 5);
  }

}  // TEST_SUITE

TEST_SUITE("fragment proofs") {
  TEST_CASE("the mma.m16n8k16 fragments and the paper's Fig. 6 block layout replicate correctly") {
    for (const Fragment& f : {mma_m16n8k16_a(DataType::f16()), mma_m16n8k16_b(DataType::f16()),
                              mma_m16n8k16_c(DataType::f32()), ldmatrix_x4(DataType::f16()),
                              mfma_16x16x16_d(DataType::f32()), fig6_block_layout()}) {
      ProofResult r = prove_replication(f, named("C_frag"));
      CHECK_MESSAGE(r.holds, f.to_string() << ": " << r.message);
    }
  }

  TEST_CASE("two elements in one register slot are named with the thread and the register") {
    // Thread g * 4 + j // 2 but local j % 2 only: rows i and i + 8 share every slot.
    Fragment f = Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
      return std::pair<Expr, Expr>{
          floormod(v[0], make_int(8)) * make_int(4) + floordiv(v[1], make_int(2)),
          floormod(v[1], make_int(2))};
    });
    ProofResult r = prove_replication(f, named("C_frag"));
    CHECK_FALSE(r.holds);
    REQUIRE(r.cex);
    const auto& a = r.cex->indices[0];
    const auto& b = r.cex->indices[1];
    auto slot = f.map_fragment(a);
    CHECK(f.map_fragment(b) == slot);
    CHECK(r.message == format_index("C_frag", a) + " and " + format_index("C_frag", b) +
                           " both map to thread " + std::to_string(slot.first) + ", local " +
                           std::to_string(slot.second));
  }

  TEST_CASE("a replicated element held twice by one thread is reported with both replicas") {
    // replicate = 2 but the thread ignores rep: both replicas of every element in one thread.
    Fragment f = Fragment::from_fn(
        {4, 4},
        [](const std::vector<Var>& v, const Var& rep) {
          return std::pair<Expr, Expr>{v[0] + rep * make_int(0), v[1]};
        },
        2);
    ProofResult r = prove_replication(f, named("bias"));
    REQUIRE(r.cex);
    const auto& x = r.cex->indices[0];
    CHECK(r.message ==
          format_index("bias", x) + " is held twice by thread " + std::to_string(x[0]) +
              " (replicas 0 and 1): replicate = 2 needs 2 distinct threads per element");
  }

  TEST_CASE("fragments with the same owners are equivalent; a moved element is named") {
    Fragment c = mma_m16n8k16_c(DataType::f32());
    // The same threads, registers numbered differently.
    Fragment c2 = Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
      return std::pair<Expr, Expr>{
          floormod(v[0], make_int(8)) * make_int(4) + floordiv(v[1], make_int(2)),
          floormod(v[1], make_int(2)) * make_int(2) + floordiv(v[0], make_int(8))};
    });
    CHECK(prove_equivalent(c, c2, named("C")).holds);
    // Threads swapped in pairs: every element moves.
    Fragment c3 = Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
      return std::pair<Expr, Expr>{
          (floormod(v[0], make_int(8)) * make_int(4) + floordiv(v[1], make_int(2))) ^ make_int(1),
          floormod(v[1], make_int(2))};
    });
    ProofResult r = prove_equivalent(c, c3, named("C"));
    REQUIRE(r.cex);
    const auto& x = r.cex->indices[0];
    int64_t t = c.map_fragment(x).first;
    CHECK(r.message == format_index("C", x) + " is held by thread " + std::to_string(t) +
                           " in the first fragment but not in the second (owners there: {" +
                           std::to_string(t ^ 1) + "})");
  }

  TEST_CASE("property: fragment replication agrees with enumeration") {
    ExprGen g(77);
    int compared = 0, ok_seen = 0;
    for (int n = 0; compared < 60 && n < 1000; ++n) {
      std::vector<int64_t> shape = {1 + g.pick(4), 1 + g.pick(4)};
      int64_t replicate = 1 + g.pick(2), threads = 1 + g.pick(8), regs = 1 + g.pick(8);
      std::vector<Var> vars = {Var("i"), Var("j")};
      Var rep("rep");
      std::vector<Var> with_rep = {vars[0], vars[1], rep};
      Expr thread = floormod(g.gen(with_rep, 2), make_int(threads));
      Expr local = g.pick(2) ? vars[0] * make_int(shape[1]) + vars[1]
                             : floormod(g.gen(vars, 2), make_int(regs));
      auto f = Fragment::try_make(vars, shape, thread, local, replicate, rep);
      if (!f) continue;
      ++compared;
      bool ok = true;
      std::set<std::pair<int64_t, int64_t>> slots;
      for_each_index(shape, [&](const std::vector<int64_t>& x) {
        std::set<int64_t> owners;
        for (int64_t r = 0; r < replicate; ++r) {
          auto s = f->map_fragment(x, r);
          ok = ok && owners.insert(s.first).second && slots.insert(s).second;
        }
      });
      ok_seen += ok;
      CHECK_MESSAGE(prove_replication(*f).holds == ok, f->to_string());
    }
    CHECK(compared == 60);
    CHECK(ok_seen >= 3);
  }

}  // TEST_SUITE
