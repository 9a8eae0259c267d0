// Simulation counters of shared memory: wavefronts, ideal wavefronts and bank conflicts of
// warp-wide requests presented to sim::BlockSim, with the expected numbers derived by hand from
// the bank rules of REFERENCE.md (NVIDIA: 32 banks x 4 B, bank = (byte / 4) % 32, phases of 32 /
// 16 / 8 lanes for 4 / 8 / 16-byte accesses, one 8-lane phase per ldmatrix matrix; AMD CDNA3:
// wave64, ds_read_b32 in two phases of 32 lanes). Every shared buffer starts at byte 0.
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <vector>

#include "sim/block_sim.h"

using namespace tessel;
using namespace tessel::sim;

namespace {

/// One block with a single shared buffer of `dtype` and `shape`, and one site.
struct SharedRig {
  SimRun run;
  BlockSim block;
  int buffer;
  SharedRig(DataType dtype, std::vector<int64_t> shape, BankModel banks = BankModel::nvidia())
      : run(SimOptions{banks, true, true}, {Site{"load", "s", "", "", ""}}),
        block(run, 0, banks.warp_size),
        buffer(block.add_buffer(BufferDesc{"s", Space::kShared, dtype, std::move(shape), 0})) {}

  /// Lane l accesses element (row(l), col(l)) of the 2-d buffer, `vector` elements wide.
  Counters access(uint64_t mask, const std::function<int64_t(int)>& row,
                  const std::function<int64_t(int)>& col, int vector = 1, bool ldmatrix = false,
                  Access kind = Access::kLoad) {
    std::array<int64_t, kMaxLanes> r{}, c{};
    for (int l = 0; l < kMaxLanes; ++l) {
      r[l] = row(l);
      c[l] = col(l);
    }
    WarpRequest req;
    req.buffer = buffer;
    req.access = kind;
    req.site = 0;
    req.mask = mask;
    req.vector = vector;
    req.ldmatrix = ldmatrix;
    req.index[0] = r.data();
    req.index[1] = c.data();
    Resolved res = block.resolve(req);
    block.observe(req, res);
    return block.counters()[0];
  }
};

const uint64_t kWarp = full_mask(32);

}  // namespace

TEST_SUITE("sim: shared-memory banks (NVIDIA)") {
  TEST_CASE("a row of 32 floats is one wavefront") {
    // Lane l reads word l -> bank l: every bank once, 1 wavefront; ideal 1 (one phase).
    SharedRig rig(DataType::f32(), {32, 32});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return l; });
    CHECK(c.shared_requests == 1);
    CHECK(c.wavefronts == 1);
    CHECK(c.ideal_wavefronts == 1);
    CHECK(c.bank_conflicts == 0);
    CHECK(c.lane_accesses == 32);
  }

  TEST_CASE("a column of a 32 x 32 float tile is a 32-way conflict") {
    // Lane l reads word 32 l -> bank (32 l) % 32 = 0 for every lane, 32 distinct words:
    // 32 wavefronts, ideal 1, conflicts 31.
    SharedRig rig(DataType::f32(), {32, 32});
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int) { return 0; });
    CHECK(c.wavefronts == 32);
    CHECK(c.ideal_wavefronts == 1);
    CHECK(c.bank_conflicts == 31);
  }

  TEST_CASE("padding the tile to 33 columns removes the column conflict") {
    // Word 33 l -> bank (33 l) % 32 = l: all different, 1 wavefront.
    SharedRig rig(DataType::f32(), {32, 33});
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int) { return 0; });
    CHECK(c.wavefronts == 1);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("every lane reading one word is a broadcast") {
    // One distinct word: 1 wavefront.
    SharedRig rig(DataType::f32(), {32, 32});
    Counters c = rig.access(
        kWarp, [](int) { return 3; }, [](int) { return 7; });
    CHECK(c.wavefronts == 1);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("lanes reading two f16 halves of one word share it") {
    // f16 element 2 l' and 2 l' + 1 are the two halves of word l'; lane l reads element l, so
    // lanes 2k and 2k+1 read word k: 16 distinct words in 16 banks, 1 wavefront.
    SharedRig rig(DataType::f16(), {1, 64});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return l; });
    CHECK(c.wavefronts == 1);
  }

  TEST_CASE("a stride of two words is a 2-way conflict") {
    // Lane l reads word 2 l: bank (2 l) % 32 is shared by lanes l and l + 16 (words 2 l and
    // 2 l + 32): 2 wavefronts, ideal 1, conflicts 1.
    SharedRig rig(DataType::f32(), {1, 64});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return 2 * l; });
    CHECK(c.wavefronts == 2);
    CHECK(c.bank_conflicts == 1);
  }

  TEST_CASE("inactive lanes do not count") {
    // Column read by lanes 0-15 only: 16 distinct words in bank 0: 16 wavefronts, ideal 1.
    SharedRig rig(DataType::f32(), {32, 32});
    Counters c = rig.access(
        full_mask(16), [](int l) { return l; }, [](int) { return 0; });
    CHECK(c.wavefronts == 16);
    CHECK(c.ideal_wavefronts == 1);
    CHECK(c.lane_accesses == 16);
  }

  TEST_CASE("8-byte accesses run in two half-warp phases") {
    // f64 element l: bytes 8 l .. 8 l + 7 = words 2 l, 2 l + 1. Phase 0 (lanes 0-15): words 0..31,
    // banks 0..31 once -> 1; phase 1: words 32..63 -> 1. Total 2, ideal 2, conflicts 0.
    SharedRig rig(DataType::f64(), {1, 64});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return l; });
    CHECK(c.wavefronts == 2);
    CHECK(c.ideal_wavefronts == 2);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("8-byte accesses at a 16-byte stride conflict within each half-warp") {
    // f64 element 2 l: words 4 l, 4 l + 1. In phase 0 (l = 0..15) banks (4 l) % 32 repeat for
    // l and l + 8: 2 wavefronts; phase 1 the same. Total 4, ideal 2, conflicts 2.
    SharedRig rig(DataType::f64(), {1, 64});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return 2 * l; });
    CHECK(c.wavefronts == 4);
    CHECK(c.ideal_wavefronts == 2);
    CHECK(c.bank_conflicts == 2);
  }

  TEST_CASE("16-byte accesses run in four quarter-warp phases") {
    // 4 floats from element 4 l: words 4 l .. 4 l + 3. Phase p (lanes 8p..8p+7) touches 32
    // consecutive words, every bank once: 1 wavefront per phase, 4 in all, ideal 4.
    SharedRig rig(DataType::f32(), {1, 128});
    Counters c = rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return 4 * l; }, 4);
    CHECK(c.wavefronts == 4);
    CHECK(c.ideal_wavefronts == 4);
  }

  TEST_CASE("ldmatrix on 16-byte rows is conflict-free") {
    // f16 rows of 8 elements = 16 bytes = 4 words; lane l addresses row l. Matrix m (lanes
    // 8m..8m+7) touches words 4 r .. 4 r + 3 for 8 consecutive rows r: 32 distinct banks.
    // 4 phases x 1 = 4 wavefronts, ideal 4.
    SharedRig rig(DataType::f16(), {32, 8});
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int) { return 0; }, 8, true);
    CHECK(c.wavefronts == 4);
    CHECK(c.ideal_wavefronts == 4);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("ldmatrix on 64-byte rows is a 4-way conflict per matrix") {
    // Rows of 32 f16 = 64 bytes = 16 words: row r's first chunk is words 16 r .. 16 r + 3, banks
    // 0-3 for even r and 16-19 for odd r. Each matrix (8 rows) puts 4 distinct words in each of
    // those banks: 4 wavefronts per phase, 16 in all, ideal 4, conflicts 12. (This is the
    // unswizzled A tile of the gemm_mma example.)
    SharedRig rig(DataType::f16(), {32, 32});
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int) { return 0; }, 8, true);
    CHECK(c.wavefronts == 16);
    CHECK(c.ideal_wavefronts == 4);
    CHECK(c.bank_conflicts == 12);
  }

  TEST_CASE("ldmatrix with an XOR swizzle of the 16-byte chunks is conflict-free again") {
    // Row r's chunk 0 moves to chunk (r / 2) % 4: words 16 r + 4 ((r / 2) % 4) + 0..3. Rows 0..7
    // of a matrix now use banks {0-3, 16-19, 4-7, 20-23, 8-11, 24-27, 12-15, 28-31}: 1 wavefront
    // per phase, 4 in all.
    SharedRig rig(DataType::f16(), {32, 32});
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int l) { return (l / 2 % 4) * 8; }, 8, true);
    CHECK(c.wavefronts == 4);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("counters add up over requests") {
    // A row read (1 wavefront) then a column read (32): 2 requests, 33 wavefronts, ideal 2.
    SharedRig rig(DataType::f32(), {32, 32});
    rig.access(
        kWarp, [](int) { return 0; }, [](int l) { return l; });
    Counters c = rig.access(
        kWarp, [](int l) { return l; }, [](int) { return 0; });
    CHECK(c.shared_requests == 2);
    CHECK(c.wavefronts == 33);
    CHECK(c.ideal_wavefronts == 2);
    CHECK(c.bank_conflicts == 31);
  }

}  // TEST_SUITE

TEST_SUITE("sim: LDS banks (AMD CDNA3, wave64)") {
  TEST_CASE("a row of 64 floats is two wavefronts (ds_read_b32 runs two 32-lane phases)") {
    // Lanes 0-31 read words 0..31 (every bank once), lanes 32-63 words 32..63: 1 + 1 = 2, ideal 2.
    SharedRig rig(DataType::f32(), {1, 64}, BankModel::amd_cdna3());
    Counters c = rig.access(
        full_mask(64), [](int) { return 0; }, [](int l) { return l; });
    CHECK(c.wavefronts == 2);
    CHECK(c.ideal_wavefronts == 2);
    CHECK(c.bank_conflicts == 0);
  }

  TEST_CASE("a column of a 64 x 32 float tile is a 32-way conflict in each phase") {
    // Lane l reads word 32 l, bank 0: each 32-lane phase has 32 distinct words in bank 0.
    // 32 + 32 = 64 wavefronts, ideal 2, conflicts 62.
    SharedRig rig(DataType::f32(), {64, 32}, BankModel::amd_cdna3());
    Counters c = rig.access(
        full_mask(64), [](int l) { return l; }, [](int) { return 0; });
    CHECK(c.wavefronts == 64);
    CHECK(c.ideal_wavefronts == 2);
    CHECK(c.bank_conflicts == 62);
  }

  TEST_CASE("ds_read_b128 pairs lanes 0-3 with 20-23") {
    // 16 bytes per lane from element 4 (l % 8): lanes 0-3 read words 0..15 and lanes 20-23 read
    // words 16..31 (20 % 8 = 4): phase {0-3, 20-23} touches 32 distinct banks -> 1. Every one of
    // the 8 phases likewise: 8 wavefronts, ideal 8. (Contiguous 8-lane groups would also see 32
    // words; the point is that all 64 lanes are counted in 8 phases.)
    SharedRig rig(DataType::f32(), {1, 64}, BankModel::amd_cdna3());
    Counters c = rig.access(
        full_mask(64), [](int) { return 0; }, [](int l) { return 4 * (l % 8); }, 4);
    CHECK(c.wavefronts == 8);
    CHECK(c.ideal_wavefronts == 8);
  }

}  // TEST_SUITE
