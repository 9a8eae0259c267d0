// Bank rules: phase groups per target and exact wavefront counts, each derived by hand below.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "core/bank_rules.h"
#include "core/error.h"

using namespace tessel;

namespace {

/// Byte addresses of `lanes` lanes, addr(lane).
std::vector<int64_t> addresses(int lanes, const std::function<int64_t(int)>& addr) {
  std::vector<int64_t> out;
  for (int l = 0; l < lanes; ++l) out.push_back(addr(l));
  return out;
}

BankCount nv(const std::vector<int64_t>& addr, int bytes, bool ldmatrix = false,
             uint64_t mask = full_mask(32)) {
  return count_wavefronts(BankModel::nvidia(), addr, mask, bytes, ldmatrix);
}

}  // namespace

TEST_SUITE("bank rules") {
  TEST_CASE(
      "NVIDIA: a warp reading one f32 column of a 32x32 row-major tile is a 32-way conflict") {
    // Lane l reads element (l, 5): byte 4 * (32 l + 5), word 32 l + 5, bank (32 l + 5) % 32 = 5.
    // One phase (4-byte access), 32 distinct words all in bank 5: 32 wavefronts, ideal 1.
    BankCount c = nv(addresses(32, [](int l) { return 4 * (32 * l + 5); }), 4);
    CHECK(c.wavefronts == 32);
    CHECK(c.ideal_wavefronts == 1);
    CHECK(c.bank_conflicts == 31);
    CHECK(c.max_degree == 32);
  }

  TEST_CASE("NVIDIA: a warp reading one f32 row is conflict-free") {
    // Lane l reads element (3, l): word 96 + l, banks 0..31 once each: 1 wavefront.
    BankCount c = nv(addresses(32, [](int l) { return 4 * (96 + l); }), 4);
    CHECK(c == BankCount{1, 1, 0, 1});
  }

  TEST_CASE("NVIDIA: every lane reading the same word is a broadcast") {
    // One distinct word: 1 wavefront, no conflict.
    BankCount c = nv(addresses(32, [](int) { return 64; }), 4);
    CHECK(c == BankCount{1, 1, 0, 1});
  }

  TEST_CASE("NVIDIA: two lanes reading different halves of one word are a broadcast") {
    // f16 elements 0 and 1 share word 0; lanes 2.. read words 1..30: all distinct banks.
    BankCount c = nv(addresses(32, [](int l) { return l < 2 ? 2 * l : 4 * (l - 1); }), 2);
    CHECK(c == BankCount{1, 1, 0, 1});
  }

  TEST_CASE("NVIDIA: 16-byte accesses by 32 contiguous lanes take 4 phases and no conflict") {
    // 4 phases of 8 lanes; phase p covers bytes 128 p .. 128 p + 127 = 32 words in 32 banks.
    BankCount c = nv(addresses(32, [](int l) { return 16 * l; }), 16);
    CHECK(c == BankCount{4, 4, 0, 1});
  }

  TEST_CASE("NVIDIA: 8-byte accesses by contiguous lanes take 2 phases and no conflict") {
    // 2 phases of 16 lanes; each covers 128 contiguous bytes.
    BankCount c = nv(addresses(32, [](int l) { return 8 * l; }), 8);
    CHECK(c == BankCount{2, 2, 0, 1});
  }

  TEST_CASE("NVIDIA: 8-byte accesses at a 16-byte stride conflict 2-way in each half-warp phase") {
    // Phase 0 (lanes 0-15): lane l touches words 4l and 4l+1; lanes l and l+8 hit the same banks
    // (4l % 32 == 4(l+8) % 32) with different words: 2 wavefronts per phase, 4 in all, ideal 2.
    BankCount c = nv(addresses(32, [](int l) { return 16 * l; }), 8);
    CHECK(c == BankCount{4, 2, 2, 2});
  }

  TEST_CASE("NVIDIA: ldmatrix rows of a 64-byte-wide row-major tile conflict 4-way") {
    // Lane l addresses row l (64 bytes per row): words 16 l .. 16 l + 3, banks (16 l + t) % 32.
    // In each 8-lane phase rows r, r+2, r+4, r+6 share banks: 4 wavefronts x 4 phases = 16.
    BankCount c = nv(addresses(32, [](int l) { return 64 * l; }), 16, /*ldmatrix=*/true);
    CHECK(c == BankCount{16, 4, 12, 4});
  }

  TEST_CASE("NVIDIA: ldmatrix rows at a 16-byte stride are conflict-free") {
    // Each phase's 8 rows cover 128 contiguous bytes: 1 wavefront per phase.
    BankCount c = nv(addresses(32, [](int l) { return 16 * l; }), 16, /*ldmatrix=*/true);
    CHECK(c == BankCount{4, 4, 0, 1});
  }

  TEST_CASE("NVIDIA: inactive lanes take no part; an empty request costs nothing") {
    // Only lanes 0 and 1: words 0 and 32, both bank 0: 2 wavefronts, ideal 1.
    std::vector<int64_t> addr = addresses(32, [](int l) { return 128 * l; });
    CHECK(nv(addr, 4, false, 0b11) == BankCount{2, 1, 1, 2});
    CHECK(nv(addr, 4, false, 0) == BankCount{0, 0, 0, 0});
    // ldmatrix.x1: only lanes 0-7 give addresses, one phase.
    CHECK(nv(addresses(32, [](int l) { return 16 * l; }), 16, true, 0xff) == BankCount{1, 1, 0, 1});
  }

  TEST_CASE("a misaligned access touches every word it overlaps") {
    // Lane 0 reads 4 bytes at byte 126: words 31 and 32 (banks 31 and 0); lane 1 reads word 64
    // (bank 0): bank 0 serves words 32 and 64, 2 wavefronts.
    std::vector<int64_t> addr = {126, 256};
    CHECK(count_wavefronts(BankModel::nvidia(), addr, 0b11, 4, false) == BankCount{2, 1, 1, 2});
  }

  TEST_CASE("AMD: ds_read_b32 of 64 contiguous lanes takes two phases, no conflict") {
    // Phase 0 = lanes 0-31 (words 0-31), phase 1 = lanes 32-63 (words 32-63).
    BankCount c =
        count_wavefronts(BankModel::amd_cdna3(), addresses(64, [](int l) { return 4 * l; }),
                         full_mask(64), 4, false);
    CHECK(c == BankCount{2, 2, 0, 1});
  }

  TEST_CASE("AMD: a wave reading one f32 column of a 64-wide tile conflicts 32-way per phase") {
    // Lane l reads word 64 l: bank 0 for all; 32 distinct words in each of 2 phases.
    BankCount c =
        count_wavefronts(BankModel::amd_cdna3(), addresses(64, [](int l) { return 256 * l; }),
                         full_mask(64), 4, false);
    CHECK(c == BankCount{64, 2, 62, 32});
  }

  TEST_CASE("AMD: ds_read_b128 pairs lanes 0-3 with 20-23, ds_write_b128 pairs 0-3 with 4-7") {
    // Lane l in 4-lane run r = l / 4 writes 16 bytes at 128 r + 64 h + 16 (l % 4) with
    // h = (r % 2) ^ (r / 4 % 2): its banks are 16 h + 4 (l % 4) + 0..3 (128 r is 32 words).
    // Write phases pair runs (2m, 2m+1): h differs, disjoint banks: 8 phases x 1 wavefront.
    // Read phases pair runs (0,5) (1,4) (2,7) (3,6) ...: h equal, same banks, different words:
    // 8 phases x 2 wavefronts = 16, ideal 8.
    std::vector<int64_t> addr = addresses(64, [](int l) {
      int r = l / 4, h = (r % 2) ^ (r / 4 % 2);
      return 128 * r + 64 * h + 16 * (l % 4);
    });
    BankModel amd = BankModel::amd_cdna3();
    CHECK(count_wavefronts(amd, addr, full_mask(64), 16, false, /*write=*/true) ==
          BankCount{8, 8, 0, 1});
    CHECK(count_wavefronts(amd, addr, full_mask(64), 16, false, /*write=*/false) ==
          BankCount{16, 8, 8, 2});
  }

  TEST_CASE("phase groups per target and width") {
    BankModel nvidia = BankModel::nvidia(), amd = BankModel::amd_cdna3();
    CHECK(nvidia.phases(4, false).size() == 1);
    auto half = nvidia.phases(8, false);
    REQUIRE(half.size() == 2);
    CHECK(half[1].front() == 16);
    CHECK(half[1].back() == 31);
    CHECK(nvidia.phases(16, true).size() == 4);
    CHECK(amd.phases(4, false).size() == 2);
    CHECK(amd.phases(8, false).size() == 4);
    auto read = amd.phases(16, false);
    REQUIRE(read.size() == 8);
    CHECK(read[0] == std::vector<int>{0, 1, 2, 3, 20, 21, 22, 23});
    CHECK(read[2] == std::vector<int>{4, 5, 6, 7, 16, 17, 18, 19});
    CHECK(read[7] == std::vector<int>{44, 45, 46, 47, 56, 57, 58, 59});
    // Every lane is in exactly one phase.
    std::vector<int> seen(64, 0);
    for (const auto& g : read) {
      for (int l : g) ++seen[l];
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == 64);
  }

  TEST_CASE("the two vendors' models; bad widths and ldmatrix on AMD are user errors") {
    CHECK(BankModel::amd_cdna3().warp_size == 64);
    CHECK(BankModel::nvidia().warp_size == 32);
    CHECK(BankModel::nvidia().bank_of(-4) == 31);
    CHECK_THROWS_AS(BankModel::nvidia().phases(3, false), UserError);
    CHECK_THROWS_AS(BankModel::nvidia().phases(4, true), UserError);
    CHECK_THROWS_AS(BankModel::amd_cdna3().phases(16, true), UserError);
  }

}  // TEST_SUITE
