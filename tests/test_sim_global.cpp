// Simulation counters of global memory: sectors (32 bytes), ideal sectors (distinct bytes / 32,
// rounded up) and lines (128 bytes) per warp-wide request, derived by hand from the Nsight
// Compute definitions in REFERENCE.md.
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <vector>

#include "sim/block_sim.h"
#include "sim/global_sectors.h"

using namespace tessel;
using namespace tessel::sim;

namespace {

/// Lane l (of the mask) touches [addr(l), addr(l) + bytes).
SectorCount sectors(uint64_t mask, const std::function<int64_t(int)>& addr, int bytes) {
  std::array<int64_t, 64> a{};
  std::array<int, 64> b{};
  for (int l = 0; l < 64; ++l) {
    a[l] = addr(l);
    b[l] = bytes;
  }
  return count_sectors(a, b, mask);
}

const uint64_t kWarp = full_mask(32);

}  // namespace

TEST_SUITE("sim: global sectors") {
  TEST_CASE("32 consecutive floats from an aligned address are 4 sectors, 1 line") {
    // Bytes 0..127: sectors 0..3, line 0; 128 distinct bytes -> ideal 4.
    SectorCount c = sectors(
        kWarp, [](int l) { return 4 * l; }, 4);
    CHECK(c.sectors == 4);
    CHECK(c.ideal_sectors == 4);
    CHECK(c.lines == 1);
    CHECK(c.bytes == 128);
  }

  TEST_CASE("a misaligned warp touches one sector and one line more") {
    // Bytes 4..131: sectors 0..4 (5), lines 0..1 (2); ideal stays ceil(128 / 32) = 4.
    SectorCount c = sectors(
        kWarp, [](int l) { return 4 + 4 * l; }, 4);
    CHECK(c.sectors == 5);
    CHECK(c.ideal_sectors == 4);
    CHECK(c.lines == 2);
  }

  TEST_CASE("floats at a stride of 8 bytes need twice the sectors") {
    // Bytes 8 l .. 8 l + 3 for l = 0..31 span 0..251: sectors 0..7 (8), lines 0..1 (2);
    // 128 distinct bytes -> ideal 4.
    SectorCount c = sectors(
        kWarp, [](int l) { return 8 * l; }, 4);
    CHECK(c.sectors == 8);
    CHECK(c.ideal_sectors == 4);
    CHECK(c.lines == 2);
  }

  TEST_CASE("a column of a row-major float matrix with 128-byte rows is 32 sectors") {
    // Lane l reads bytes 128 l .. 128 l + 3: one sector and one line each: 32 and 32; ideal 4.
    SectorCount c = sectors(
        kWarp, [](int l) { return 128 * l; }, 4);
    CHECK(c.sectors == 32);
    CHECK(c.ideal_sectors == 4);
    CHECK(c.lines == 32);
  }

  TEST_CASE("a broadcast is one sector") {
    SectorCount c = sectors(
        kWarp, [](int) { return 64; }, 4);
    CHECK(c.sectors == 1);
    CHECK(c.ideal_sectors == 1);
    CHECK(c.lines == 1);
  }

  TEST_CASE("16 bytes per lane, consecutive: 512 bytes in 16 sectors and 4 lines") {
    SectorCount c = sectors(
        kWarp, [](int l) { return 16 * l; }, 16);
    CHECK(c.sectors == 16);
    CHECK(c.ideal_sectors == 16);
    CHECK(c.lines == 4);
  }

  TEST_CASE("only active lanes count") {
    // Lanes 0-7 read bytes 0..31: 1 sector.
    SectorCount c = sectors(
        full_mask(8), [](int l) { return 4 * l; }, 4);
    CHECK(c.sectors == 1);
    CHECK(c.ideal_sectors == 1);
  }

  TEST_CASE("an empty request costs nothing") {
    SectorCount c = sectors(
        0, [](int l) { return 4 * l; }, 4);
    CHECK(c == SectorCount{});
  }

  TEST_CASE("BlockSim counts a global request from its buffer's base address") {
    // A float tensor at byte 256: lane l reads element l = bytes 256 + 4 l: sectors 8..11 (4),
    // line 2 (1), ideal 4.
    SimRun run(SimOptions{}, {Site{"load", "A", "", "", ""}});
    int a = run.add_global(BufferDesc{"A", Space::kGlobal, DataType::f32(), {1000}, 256});
    BlockSim block(run, 0, 32);
    std::array<int64_t, 64> idx{};
    for (int l = 0; l < 64; ++l) idx[l] = l;
    WarpRequest req;
    req.buffer = a;
    req.site = 0;
    req.mask = kWarp;
    req.index[0] = idx.data();
    Resolved r = block.resolve(req);
    block.observe(req, r);
    const Counters& c = block.counters()[0];
    CHECK(c.global_requests == 1);
    CHECK(c.sectors == 4);
    CHECK(c.ideal_sectors == 4);
    CHECK(c.lines == 1);
    CHECK(c.shared_requests == 0);
  }

}  // TEST_SUITE
