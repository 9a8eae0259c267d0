// Bank-conflict proofs: conflict freedom for every value of a symbolic loop index, the maximum
// conflict degree, counterexample text, and agreement with exact counting.
#include <doctest/doctest.h>

#include <random>

#include "core/bank_rules.h"
#include "core/builtin_layouts.h"
#include "verify/bank_proofs.h"

using namespace tessel;

TEST_SUITE("bank proofs") {
  TEST_CASE("a column read of a 32x32 f32 tile: 32-way conflict, lanes and words named") {
    // Lane l reads (l, 3): byte 128 l + 12, word 32 l + 3, all in bank 3.
    BankAccess a;
    a.buffer = "A_shared";
    a.layout = Layout::row_major({32, 32});
    a.dtype = DataType::f32();
    a.index = {a.lane, make_int(3)};
    BankProofResult r = prove_conflict_free(a, BankModel::nvidia());
    CHECK_FALSE(r.holds);
    CHECK(r.max_degree == 32);
    REQUIRE(r.cex);
    CHECK(r.cex->lanes.size() == 32);
    CHECK(r.message ==
          "lanes 0, 1, 2, 3, ... (32 lanes) access A_shared[0, 3], A_shared[1, 3], A_shared[2, 3], "
          "A_shared[3, 3], ...: 32 different 4-byte words of bank 3 (bytes 12, 140, 268, 396, ...) "
          "in "
          "one phase, a 32-way bank conflict");
  }

  TEST_CASE("a row read is conflict-free") {
    BankAccess a;
    a.layout = Layout::row_major({32, 32});
    a.dtype = DataType::f32();
    a.index = {make_int(7), a.lane};
    BankProofResult r = prove_conflict_free(a, BankModel::nvidia());
    CHECK(r.holds);
    CHECK(r.max_degree == 1);
  }

  TEST_CASE("a two-way conflict names both lanes, both indices and the shared bank") {
    // Lane l reads f32 element l, except lane 31 reads element 32: words 0..30 and 32; word 32 is
    // in bank 0 with word 0 (lane 0): a 2-way conflict between lanes 0 and 31.
    BankAccess a;
    a.layout = Layout::row_major({64});
    a.dtype = DataType::f32();
    a.index = {if_then_else(a.lane == make_int(31), make_int(32), a.lane)};
    BankProofResult r = prove_conflict_free(a, BankModel::nvidia());
    CHECK(r.max_degree == 2);
    CHECK(r.message ==
          "lanes 0 and 31 access A_shared[0] and A_shared[32]: 2 different 4-byte words of bank 0 "
          "(bytes 0 and 128) in one phase, a 2-way bank conflict");
  }

  TEST_CASE(
      "ldmatrix on the GEMM A tile: swizzled is conflict-free for every k, row-major is 4-way") {
    // ldmatrix.x4 of a 16x16 f16 tile at rows 16 wm, columns 16 k of the 128x32 A tile: lanes
    // 0-15 address rows 0-15 at column 16 k, lanes 16-31 the same rows at column 16 k + 8.
    Var k("k"), wm("wm");
    BankAccess a;
    a.ldmatrix = true;
    a.dtype = DataType::f16();
    a.index = {wm * make_int(16) + floormod(a.lane, make_int(16)),
               k * make_int(16) + floordiv(a.lane, make_int(16)) * make_int(8)};
    ProofOptions o;
    o.domain.bound(k, 0, 1).bound(wm, 0, 7);
    a.layout = gemm_operand_layout(128, 32, DataType::f16());
    CHECK(prove_conflict_free(a, BankModel::nvidia(), o).holds);
    // Row-major: rows are 64 bytes, so rows r, r+2, r+4, r+6 of a phase share banks.
    a.layout = Layout::row_major({128, 32});
    BankProofResult r = prove_conflict_free(a, BankModel::nvidia(), o);
    CHECK_FALSE(r.holds);
    CHECK(r.max_degree == 4);
    REQUIRE(r.cex);
    CHECK(r.cex->symbols.size() == 2);
    CHECK(r.message.find("a 4-way bank conflict (when k = ") != std::string::npos);
  }

  TEST_CASE("a conflict that occurs only for some loop index is found with that index") {
    // Lane l reads f32 element l * (1 + (k == 5)) of a long row: stride 1 (free) except at k = 5
    // where the stride 2 puts lanes l and l + 16 in one bank.
    Var k("k");
    BankAccess a;
    a.layout = Layout::row_major({64});
    a.dtype = DataType::f32();
    a.index = {a.lane * if_then_else(k == make_int(5), make_int(2), make_int(1))};
    ProofOptions o;
    o.domain.bound(k, 0, 7);
    BankProofResult r = prove_conflict_free(a, BankModel::nvidia(), o);
    CHECK(r.max_degree == 2);
    REQUIRE(r.cex);
    CHECK(r.cex->symbols == std::vector<std::pair<std::string, int64_t>>{{"k", 5}});
  }

  TEST_CASE("AMD: ds_read_b128 phases pair lanes 0-3 with 20-23") {
    // The pattern of test_bank_rules: conflict-free as a write, 2-way as a read.
    BankAccess a;
    a.layout = Layout::row_major({1024});
    a.dtype = DataType::f32();
    a.width_bytes = 16;
    Expr run = floordiv(a.lane, make_int(4));
    Expr h = floormod(run, make_int(2)) ^ floormod(floordiv(run, make_int(4)), make_int(2));
    a.index = {run * make_int(32) + h * make_int(16) + floormod(a.lane, make_int(4)) * make_int(4)};
    a.write = true;
    CHECK(prove_conflict_free(a, BankModel::amd_cdna3()).holds);
    a.write = false;
    CHECK(prove_conflict_free(a, BankModel::amd_cdna3()).max_degree == 2);
  }

  TEST_CASE("inactive lanes cannot conflict") {
    // Column read, but only lane 0 active: one word.
    BankAccess a;
    a.layout = Layout::row_major({32, 32});
    a.dtype = DataType::f32();
    a.index = {a.lane, make_int(0)};
    a.active = a.lane < make_int(1);
    CHECK(prove_conflict_free(a, BankModel::nvidia()).holds);
  }

  TEST_CASE("property: the proved maximum degree equals the worst exact count over all k") {
    std::mt19937 rng(5);
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    int compared = 0, conflicted = 0;
    for (int n = 0; n < 40; ++n) {
      Var k("k");
      BankAccess a;
      int64_t rows = 32, cols = 8 << pick(3);
      a.dtype = pick(2) ? DataType::f32() : DataType::f16();
      int kind = pick(3);
      a.layout = kind == 0   ? Layout::row_major({rows, cols})
                 : kind == 1 ? padded(rows, cols, pick(5))
                             : Layout::from_fn({rows, cols}, [&](const std::vector<Var>& v) {
                                 return std::vector<Expr>{v[0] * make_int(cols) +
                                                          (v[1] ^ floormod(v[0], make_int(cols)))};
                               });
      int64_t rs = 1 + pick(4), cs = pick(3);
      a.index = {floormod(a.lane * make_int(rs) + k, make_int(rows)),
                 floormod(a.lane * make_int(cs) + k * make_int(pick(3)), make_int(cols))};
      ProofOptions o;
      o.domain.bound(k, 0, 5);
      BankProofResult r = prove_conflict_free(a, BankModel::nvidia(), o);
      int worst = 0;
      for (int64_t kv = 0; kv <= 5; ++kv) {
        worst = std::max(worst,
                         count_access(a, BankModel::nvidia(), {{k.operator->(), kv}}).max_degree);
      }
      CHECK_MESSAGE(r.max_degree == worst, a.layout.to_string());
      CHECK(r.holds == (worst <= 1));
      ++compared;
      conflicted += worst > 1;
    }
    CHECK(compared == 40);
    CHECK(conflicted >= 5);
  }

}  // TEST_SUITE
