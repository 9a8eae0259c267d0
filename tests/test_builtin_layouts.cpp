// Tests of core/builtin_layouts: every built-in layout against its public specification (PTX ISA
// fragment tables, the AMD matrix instruction tables, the swizzle formulas of REFERENCE.md and
// CuTe's Swizzle on byte addresses), the gemm-operand rule, Fig. 6, the registry and the SVGs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/layout_svg.h"

using namespace tessel;

namespace {

using Shape = std::vector<int64_t>;
using TL = std::pair<int64_t, int64_t>;

const DataType kF16 = DataType::f16();
const DataType kF32 = DataType::f32();

/// CuTe Swizzle<B, M, S> on an integer, written from its definition.
int64_t cute(int b, int m, int s, int64_t x) {
  return x ^ ((x & (((int64_t{1} << b) - 1) << (m + s))) >> s);
}

/// REFERENCE.md's TileLang swizzle: nb chunks, pattern shift k, vec elements per chunk.
Shape reference_swizzle(int64_t i, int64_t j, int64_t vec, int64_t nb, int k) {
  int64_t s = i % 8, ts = i / 8, c = (j / vec) % nb, tc = (j / vec) / nb, vj = j % vec;
  return {tc, ts, vj + ((c ^ (s >> k)) + nb * s) * vec};
}

/// Every element of a fragment maps to a distinct (thread, local), and back.
void check_bijective(const Fragment& f) {
  Layout inv = f.inverse();
  for_each_index(f.input_shape(), [&](const Shape& p) {
    auto [t, l] = f.map_fragment(p);
    CHECK(inv.map({t, l}) == p);
  });
}

}  // namespace

TEST_SUITE("mma.m16n8k16 fragments") {
  TEST_CASE("A fragment matches the PTX table for every lane and element") {
    Fragment a = mma_m16n8k16_a(kF16);
    CHECK(a.thread_extent() == 32);
    CHECK(a.local_extent() == 8);
    for (int64_t lane = 0; lane < 32; ++lane) {
      int64_t g = lane >> 2, t = lane % 4;
      for (int64_t e = 0; e < 8; ++e) {
        int64_t row = g + 8 * ((e >> 1) & 1), col = 2 * t + (e & 1) + 8 * (e >> 2);
        CHECK(a.map_fragment({row, col}) == TL{lane, e});
      }
    }
  }

  TEST_CASE("A fragment: lane 5 element 5 holds (1, 11)") {
    // g = 1, t = 1; e = 5: row 1 + 8 * ((5 >> 1) & 1) = 1, col 2 + 1 + 8 * 1 = 11.
    CHECK(mma_m16n8k16_a(DataType::bf16()).map_fragment({1, 11}) == TL{5, 5});
  }

  TEST_CASE("B fragment: lane 6 element 3 holds k 13, n 1") {
    // g = 1, t = 2; e = 3: k = 4 + 1 + 8 * 1 = 13, n = g = 1.
    CHECK(mma_m16n8k16_b(kF16).map_fragment({13, 1}) == TL{6, 3});
  }

  TEST_CASE("B fragment matches the PTX table for every lane and element") {
    Fragment b = mma_m16n8k16_b(kF16);
    for (int64_t lane = 0; lane < 32; ++lane) {
      for (int64_t e = 0; e < 4; ++e) {
        int64_t k = 2 * (lane % 4) + (e & 1) + 8 * (e >> 1), n = lane >> 2;
        CHECK(b.map_fragment({k, n}) == TL{lane, e});
      }
    }
  }

  TEST_CASE("C fragment: lane 5 register 2 holds row 9, col 2") {
    // g = 5 >> 2 = 1, t = 5 % 4 = 1; e = 2: row g + 8 = 9, col 2t = 2.
    CHECK(mma_m16n8k16_c(kF32).map_fragment({9, 2}) == TL{5, 2});
  }

  TEST_CASE("C fragment matches the PTX table for every lane and element") {
    Fragment c = mma_m16n8k16_c(kF32);
    for (int64_t lane = 0; lane < 32; ++lane) {
      for (int64_t e = 0; e < 4; ++e) {
        int64_t row = (lane >> 2) + 8 * (e >> 1), col = 2 * (lane % 4) + (e & 1);
        CHECK(c.map_fragment({row, col}) == TL{lane, e});
      }
    }
  }

  TEST_CASE("mma fragments are bijections onto 32 threads") {
    check_bijective(mma_m16n8k16_a(kF16));
    check_bijective(mma_m16n8k16_b(kF16));
    check_bijective(mma_m16n8k16_c(kF32));
  }

  TEST_CASE("the A fragment rejects f32 operands") {
    CHECK_THROWS_AS((void)mma_m16n8k16_a(kF32), UserError);
  }
}

TEST_SUITE("ldmatrix fragments") {
  TEST_CASE("x1: lane 13 receives row 3, elements 2 and 3") {
    // Row 13 / 4 = 3, elements 2 * (13 % 4) = 2 and 3, in register 0.
    Fragment f = ldmatrix_x1(kF16);
    CHECK(f.input_shape() == Shape{8, 8});
    CHECK(f.map_fragment({3, 2}) == TL{13, 0});
    CHECK(f.map_fragment({3, 3}) == TL{13, 1});
  }

  TEST_CASE("x4: matrix 2 goes to register 2") {
    // Matrix 2 starts at row 16; lane 13 gets its row 3, element 2 -> local 2 * 2 + 0 = 4.
    Fragment f = ldmatrix_x4(kF16);
    CHECK(f.input_shape() == Shape{32, 8});
    CHECK(f.map_fragment({19, 2}) == TL{13, 4});
    CHECK(f.local_extent() == 8);
  }

  TEST_CASE("x2 trans: lane 13 receives column 3, rows 2 and 3") {
    // .trans: lane l holds column l / 4 = 3, rows 2 * (l % 4) = 2 and 3; matrix 1 -> register 1.
    Fragment f = ldmatrix_x2(kF16, true);
    CHECK(f.map_fragment({8 + 2, 3}) == TL{13, 2});
    CHECK(f.map_fragment({8 + 3, 3}) == TL{13, 3});
  }

  TEST_CASE("x1 for int8 gives each lane four bytes of one row") {
    // A 16-byte row holds 16 int8; lane 5 gets row 1, bytes 4 * (5 % 4) = 4 .. 7.
    Fragment f = ldmatrix_x1(DataType::i8());
    CHECK(f.input_shape() == Shape{8, 16});
    for (int64_t b = 0; b < 4; ++b) CHECK(f.map_fragment({1, 4 + b}) == TL{5, b});
  }

  TEST_CASE("trans is refused for 32-bit elements") {
    CHECK_THROWS_AS((void)ldmatrix_x4(kF32, true), UserError);
  }

  TEST_CASE("x4 over the four 8x8 quadrants is the mma A fragment") {
    // Quadrant m = r // 8 + 2 * (c // 8) holds a0a1, a2a3, a4a5, a6a7 in the PTX order.
    Layout quadrants = Layout::from_fn({16, 16}, [](const std::vector<Var>& v) {
      return std::vector<Expr>{(floordiv(v[0], 8) + floordiv(v[1], 8) * 2) * 8 + floormod(v[0], 8),
                               floormod(v[1], 8)};
    });
    CHECK(equal_by_evaluation(quadrants.then(ldmatrix_x4(kF16)), mma_m16n8k16_a(kF16)));
  }

  TEST_CASE("every ldmatrix fragment is a bijection onto 32 threads") {
    for (Fragment f : {ldmatrix_x1(kF16), ldmatrix_x2(kF16), ldmatrix_x4(kF16),
                       ldmatrix_x4(kF16, true), ldmatrix_x4(DataType::i8()), ldmatrix_x2(kF32)}) {
      CHECK(f.thread_extent() == 32);
      check_bijective(f);
    }
  }
}

TEST_SUITE("mfma fragments") {
  TEST_CASE("16x16x16 A: lane 37 element 2 holds (5, 10)") {
    // m = 37 % 16 = 5, k = 4 * (37 / 16) + 2 = 10.
    CHECK(mfma_16x16x16_a(kF16).map_fragment({5, 10}) == TL{37, 2});
  }

  TEST_CASE("16x16x16 B: lane 37 element 1 holds k 9, n 5") {
    // n = 37 % 16 = 5, k = 4 * 2 + 1 = 9.
    CHECK(mfma_16x16x16_b(kF16).map_fragment({9, 5}) == TL{37, 1});
  }

  TEST_CASE("16x16x16 D: lane 37 register 3 holds D[11][5]") {
    // Row 4 * (37 / 16) + 3 = 11, col 37 % 16 = 5.
    CHECK(mfma_16x16x16_d(kF32).map_fragment({11, 5}) == TL{37, 3});
  }

  TEST_CASE("32x32x8 A: lane 45 element 3 holds (13, 7)") {
    // m = 45 % 32 = 13, k = 4 * (45 / 32) + 3 = 7.
    CHECK(mfma_32x32x8_a(kF16).map_fragment({13, 7}) == TL{45, 3});
  }

  TEST_CASE("32x32x8 B: lane 45 element 0 holds k 4, n 13") {
    CHECK(mfma_32x32x8_b(kF16).map_fragment({4, 13}) == TL{45, 0});
  }

  TEST_CASE("32x32x8 D: lane 45 register 13 holds D[29][13]") {
    // Row 8 * (13 / 4) + 4 * (45 / 32) + 13 % 4 = 24 + 4 + 1 = 29, col 45 % 32 = 13.
    CHECK(mfma_32x32x8_d(kF32).map_fragment({29, 13}) == TL{45, 13});
  }

  TEST_CASE("32x32x8 D matches the AMD table for every lane and register") {
    Fragment d = mfma_32x32x8_d(kF32);
    for (int64_t lane = 0; lane < 64; ++lane) {
      for (int64_t r = 0; r < 16; ++r) {
        CHECK(d.map_fragment({8 * (r / 4) + 4 * (lane / 32) + r % 4, lane % 32}) == TL{lane, r});
      }
    }
  }

  TEST_CASE("mfma fragments are bijections onto 64 lanes") {
    for (Fragment f : {mfma_16x16x16_a(kF16), mfma_16x16x16_b(kF16), mfma_16x16x16_d(kF32),
                       mfma_32x32x8_a(kF16), mfma_32x32x8_b(kF16), mfma_32x32x8_d(kF32)}) {
      CHECK(f.thread_extent() == 64);
      check_bijective(f);
    }
  }
}

TEST_SUITE("swizzles") {
  TEST_CASE("swizzle_128b: f16 element (3, 17) goes to chunk 2 ^ 3") {
    // vec 8; s 3, c (17 / 8) % 8 = 2, vec_j 1: 1 + ((2 ^ 3) + 8 * 3) * 8 = 1 + 25 * 8 = 201.
    CHECK(swizzle_128b(64, 64, kF16).map({3, 17}) == Shape{0, 0, 201});
  }

  TEST_CASE("swizzle_128b matches the reference formula on every element") {
    Layout l = swizzle_128b(32, 128, kF16);
    for_each_index(l.input_shape(), [&](const Shape& p) {
      CHECK(l.map(p) == reference_swizzle(p[0], p[1], 8, 8, 0));
    });
  }

  TEST_CASE("swizzle_128b equals CuTe Swizzle<3,4,3> on byte addresses") {
    // One 8 x 64 f16 panel: byte = (i * 64 + j) * 2. (3, 17): byte 418; bits 7..9 = 3;
    // 418 ^ (3 << 4) = 402; 402 / 2 = 201.
    CHECK(cute(3, 4, 3, 418) == 402);
    Layout l = swizzle_128b(8, 64, kF16);
    for_each_index(l.input_shape(), [&](const Shape& p) {
      CHECK(l.map(p)[2] == cute(3, 4, 3, (p[0] * 64 + p[1]) * 2) / 2);
    });
  }

  TEST_CASE("swizzle_64b equals CuTe Swizzle<2,4,3> on byte addresses") {
    // (5, 9) in an 8 x 32 f16 tile: byte 338, bits 7..8 = 2, 338 ^ 32 = 370, 370 / 2 = 185;
    // formula: c 1, s 5, 1 + ((1 ^ (5 >> 1)) + 4 * 5) * 8 = 1 + 23 * 8 = 185.
    Layout l = swizzle_64b(8, 32, kF16);
    CHECK(l.map({5, 9}) == Shape{0, 0, 185});
    for_each_index(l.input_shape(), [&](const Shape& p) {
      CHECK(l.map(p)[2] == cute(2, 4, 3, (p[0] * 32 + p[1]) * 2) / 2);
    });
  }

  TEST_CASE("swizzle_32b equals CuTe Swizzle<1,4,3> on byte addresses") {
    // (6, 13) in an 8 x 16 f16 tile: byte 218, bit 7 = 1, 218 ^ 16 = 202, 202 / 2 = 101;
    // formula: c 1, s 6, 5 + ((1 ^ (6 >> 2)) + 2 * 6) * 8 = 5 + 12 * 8 = 101.
    Layout l = swizzle_32b(8, 16, kF16);
    CHECK(l.map({6, 13}) == Shape{0, 0, 101});
    for_each_index(l.input_shape(), [&](const Shape& p) {
      CHECK(l.map(p)[2] == cute(1, 4, 3, (p[0] * 16 + p[1]) * 2) / 2);
    });
  }

  TEST_CASE("a wide tile is split into 128-byte column panels") {
    // (2, 70) of an 8 x 128 f16 tile: panel 70 / 64 = 1; within it j 6: c 0, vec_j 6,
    // index 6 + ((0 ^ 2) + 16) * 8 = 150.
    Layout l = swizzle_128b(8, 128, kF16);
    CHECK(l.output_shape() == Shape{2, 1, 512});
    CHECK(l.map({2, 70}) == Shape{1, 0, 150});
  }

  TEST_CASE("swizzles for f32 use 4-element chunks") {
    // vec 4; (1, 5): s 1, c 1, vec_j 1: 1 + ((1 ^ 1) + 8) * 4 = 33.
    CHECK(swizzle_128b(8, 32, kF32).map({1, 5}) == Shape{0, 0, 33});
  }

  TEST_CASE("every swizzle is a bijection") {
    for (Layout l : {swizzle_32b(16, 32, kF16), swizzle_64b(16, 64, kF16),
                     swizzle_128b(64, 64, kF16), swizzle_128b(16, 128, DataType::i8())}) {
      Layout inv = l.inverse();
      for_each_index(l.input_shape(), [&](const Shape& p) { CHECK(inv.map(l.map(p)) == p); });
    }
  }

  TEST_CASE("a swizzle refuses rows that are not a multiple of 8") {
    CHECK_THROWS_WITH_AS((void)swizzle_128b(12, 64, kF16),
                         doctest::Contains("must be a multiple of 8"), UserError);
  }

  TEST_CASE("a swizzle refuses a row shorter than its pattern") {
    // 128B needs 64 f16 per row.
    CHECK_THROWS_WITH_AS((void)swizzle_128b(8, 32, kF16),
                         doctest::Contains("multiple of 64 elements (128 bytes)"), UserError);
  }

  TEST_CASE("cute_swizzle matches its definition and is an involution") {
    Layout l = cute_swizzle(3, 4, 3, 1024);
    CHECK(l.map({418}) == Shape{402});
    for_each_index(l.input_shape(), [&](const Shape& p) {
      CHECK(l.map(p) == Shape{cute(3, 4, 3, p[0])});
      CHECK(l.map(l.map(p)) == p);
    });
  }

  TEST_CASE("cute_swizzle refuses overlapping bit ranges") {
    CHECK_THROWS_AS((void)cute_swizzle(3, 4, 2, 1024), UserError);
  }
}

TEST_SUITE("gemm operand layout") {
  TEST_CASE("a 128-byte row gets the 128B swizzle") {
    // 64 f16 = 128 bytes = 8 chunks of 16 bytes.
    CHECK(gemm_operand_layout_kind(64, 64, kF16) == "swizzle_128b");
    CHECK(gemm_operand_layout(64, 64, kF16) == swizzle_128b(64, 64, kF16));
  }

  TEST_CASE("a 64-byte row gets the 64B swizzle") {
    CHECK(gemm_operand_layout_kind(64, 32, kF16) == "swizzle_64b");
  }

  TEST_CASE("a 32-byte row gets the 32B swizzle, not a padding that conflicts under cp.async") {
    // 16 f16 = 32 bytes = 2 chunks of 16 bytes. Padded to 24 halfs (48 bytes), the 8 lanes of
    // a cp.async phase write rows 0-3 at bytes 0, 16, 48, 64, 96, 112, 144, 160: bytes 16 and
    // 144 are both in banks 4-7, a 2-way conflict. The 32B swizzle keeps rows 0-3 (and 4-7)
    // in 128 contiguous bytes.
    CHECK(gemm_operand_layout_kind(64, 16, kF16) == "swizzle_32b");
    CHECK(gemm_operand_layout(64, 16, kF16) == swizzle_32b(64, 16, kF16));
    CHECK(gemm_operand_layout(64, 16, kF16).map({1, 8}) == Shape{0, 0, 24});  // (1 + 2) * 8
    CHECK(gemm_operand_layout(64, 16, kF16).map({4, 0}) == Shape{0, 0, 72});  // row 4: (0 ^ 1 + 8) * 8
  }

  TEST_CASE("a row that is not a multiple of 32 bytes is not padded") {
    // 24 f16 = 384 bits, not a multiple of 256.
    CHECK(gemm_operand_layout(64, 24, kF16).map({1, 0}) == Shape{24});
  }

  TEST_CASE("an 8-bit operand with K outer is padded") {
    CHECK(gemm_operand_layout_kind(64, 128, DataType::i8(), false) == "padded");
    CHECK(gemm_operand_layout_kind(64, 128, DataType::i8(), true) == "swizzle_128b");
  }

  TEST_CASE("f32 with 32 elements per row is a 128-byte row") {
    CHECK(gemm_operand_layout_kind(32, 32, kF32) == "swizzle_128b");
  }
}

TEST_SUITE("Fig. 6 construction") {
  TEST_CASE("the base layout is the m16k16 mma A fragment") {
    CHECK(fig6_base_layout() == mma_m16n8k16_a(kF16));
  }

  TEST_CASE("the warp layout covers m32k16 with 16 registers per thread") {
    Fragment w = fig6_warp_layout();
    CHECK(w.input_shape() == Shape{32, 16});
    CHECK(w.thread_extent() == 32);
    CHECK(w.local_extent() == 16);
  }

  TEST_CASE("the block layout is four warps holding m128k16 with replicate 2") {
    Fragment b = fig6_block_layout();
    CHECK(b.input_shape() == Shape{128, 16});
    CHECK(b.thread_extent() == 128);
    CHECK(b.replicate() == 2);
    CHECK(b.local_extent() == 32);
  }

  TEST_CASE("block element (70, 9) of replica 1 is thread 88 register 21") {
    // Outer repeat: copy 70 // 64 = 1 -> +16 registers, row 6. replicate: replica 1 -> +64
    // threads. Row 6 stays in the first copy of both inner repeats. Base (6, 9): g 6,
    // t (9 % 8) // 2 = 0 -> lane 24; col 9 = 2t + 1 + 8 -> e & 1 = 1, e >> 2 = 1; row < 8 ->
    // e = 5. So (24 + 64, 5 + 16) = (88, 21); replica 0 is (24, 21).
    Fragment b = fig6_block_layout();
    CHECK(b.map_fragment({70, 9}, 1) == TL{88, 21});
    CHECK(b.map_fragment({70, 9}, 0) == TL{24, 21});
  }

  TEST_CASE("block element (45, 3) is thread 53 register 3") {
    // Row 45: on-thread copy 45 // 32 = 1 -> +32 threads, row 13; base (13, 3): g 5,
    // t 3 // 2 = 1 -> lane 21; row >= 8 -> bit 1; col 3 = 2 + 1 -> e = 3.
    CHECK(fig6_block_layout().map_fragment({45, 3}, 0) == TL{53, 3});
  }

  TEST_CASE("every (thread, register) of the block holds one element of one replica") {
    Fragment b = fig6_block_layout();
    Layout inv = b.inverse();
    CHECK(inv.input_shape() == Shape{128, 32});
    for_each_index({128, 16, 2}, [&](const Shape& p) {
      auto [t, l] = b.map_fragment({p[0], p[1]}, p[2]);
      CHECK(inv.map({t, l}) == p);
    });
  }
}

TEST_SUITE("layout registry") {
  TEST_CASE("named layouts list every factory with a signature") {
    std::vector<NamedLayoutInfo> all = named_layouts();
    std::vector<std::string> names;
    for (const auto& n : all) {
      names.push_back(n.name);
      CHECK(n.signature.rfind(n.name + "(", 0) == 0);
      CHECK_FALSE(n.description.empty());
    }
    for (const char* expected :
         {"row_major", "padded", "swizzle_32b", "swizzle_64b", "swizzle_128b", "swizzle",
          "mma_m16n8k16_a", "mma_m16n8k16_b", "mma_m16n8k16_c", "ldmatrix_x1", "ldmatrix_x2",
          "ldmatrix_x4", "mfma_16x16x16_a", "mfma_16x16x16_b", "mfma_16x16x16_d", "mfma_32x32x8_a",
          "mfma_32x32x8_b", "mfma_32x32x8_d", "fig6_block"}) {
      CAPTURE(expected);
      CHECK(std::find(names.begin(), names.end(), expected) != names.end());
    }
  }

  TEST_CASE("make_named_layout binds keyword arguments") {
    auto v = make_named_layout("ldmatrix_x2", {{"", kF16}, {"trans", true}});
    CHECK(std::get<Fragment>(v) == ldmatrix_x2(kF16, true));
  }

  TEST_CASE("an unknown layout name lists the known ones") {
    CHECK_THROWS_WITH_AS((void)make_named_layout("swizzle_256b", {}),
                         doctest::Contains("known layouts: row_major"), UserError);
  }

  TEST_CASE("a missing argument quotes the signature") {
    CHECK_THROWS_WITH_AS((void)make_named_layout("swizzle_128b", {{"", int64_t{64}}}),
                         doctest::Contains("swizzle_128b(rows, cols, dtype) is missing"),
                         UserError);
  }
}

TEST_SUITE("layout pictures") {
  TEST_CASE("a fragment picture labels each cell with thread and register") {
    std::string svg = fragment_svg(mma_m16n8k16_c(kF32));
    CHECK(svg.rfind("<svg", 0) == 0);
    // 16 x 8 cells; lane 5 register 2 is one of them.
    CHECK(svg.find(">T5</text>") != std::string::npos);
    CHECK(svg.find(">R2</text>") != std::string::npos);
    CHECK(svg.find("</svg>") != std::string::npos);
  }

  TEST_CASE("a bank map labels cells by bank") {
    // Row-major 8 x 64 f16: element (1, 0) is byte 128, bank (128 / 4) % 32 = 0; (0, 2) is bank 1.
    std::string svg = bank_map_svg(Layout::row_major({8, 64}), kF16);
    CHECK(svg.find(">B31</text>") != std::string::npos);
    CHECK(svg.find(">B32</text>") == std::string::npos);
  }
}
