// The detectors of sim::BlockSim, driven request by request: races between barriers, write
// conflicts and benign same-value writes, uninitialised shared and local reads, out-of-bounds
// at the logical shape, cp.async destinations read before their wait, barrier divergence, and
// races between blocks on global memory. Each test states the exact finding expected.
#include <doctest/doctest.h>

#include <array>
#include <vector>

#include "sim/block_sim.h"

using namespace tessel;
using namespace tessel::sim;

namespace {

enum SiteId { kStore, kLoad, kBarrierA, kBarrierB, kCopy, kStoreC, kLoadC, kAtom, kWgmma };

std::vector<Site> sites() {
  return {
      Site{"store", "s", "s[i] = x", "k.cpp:1:1", ""},
      Site{"load", "s", "y = s[i]", "k.cpp:2:1", ""},
      Site{"T.sync_threads()", "", "T.sync_threads()", "k.cpp:3:1", ""},
      Site{"T.sync_threads()", "", "T.sync_threads()", "k.cpp:4:1", ""},
      Site{"cp_async_16 dst", "s", "T.cp_async_16(s[i], A[i], 16)", "k.cpp:5:1", ""},
      Site{"store", "C", "C[i] = x", "k.cpp:6:1", ""},
      Site{"load", "C", "y = C[i]", "k.cpp:7:1", ""},
      Site{"atom_add dst", "s", "T.atom_add(s[i], 1.0)", "k.cpp:8:1", ""},
      Site{"wgmma_ss_f16", "s", "T.wgmma_ss_f16(acc[0], s[0, 0], s[0, 0], ...)", "k.cpp:9:1", ""}};
}

/// A launch with a global C[16], and per block a shared s[8, 8] and a local acc[4].
struct Rig {
  SimRun run{SimOptions{}, sites()};
  int C = run.add_global(BufferDesc{"C", Space::kGlobal, DataType::f32(), {16}, 0});
  Rig() { run.set_grid({4}); }

  struct Block {
    BlockSim sim;
    int s, acc;
    explicit Block(Rig& rig, uint32_t id)
        : sim(rig.run, id, 64),
          s(sim.add_buffer(BufferDesc{"s", Space::kShared, DataType::f32(), {8, 8}, 0})),
          acc(sim.add_buffer(BufferDesc{"acc", Space::kLocal, DataType::f32(), {4}, 0})) {}

    /// One lane (thread t) accesses element `index` of `buffer`, `vector` elements wide.
    Resolved touch(int buffer, Access access, int site, int t, std::vector<int64_t> index,
                   bool same = false, int vector = 1) {
      static thread_local std::array<std::array<int64_t, 64>, 8> idx;
      WarpRequest req;
      req.buffer = buffer;
      req.access = access;
      req.site = site;
      req.warp = t / 32;
      req.first_thread = t / 32 * 32;
      req.mask = uint64_t{1} << (t % 32);
      req.vector = vector;
      for (size_t d = 0; d < index.size(); ++d) {
        idx[d][t % 32] = index[d];
        req.index[d] = idx[d].data();
      }
      Resolved r = sim.resolve(req);
      sim.observe(req, r, same ? req.mask : 0);
      return r;
    }
    void barrier_all(int site = kBarrierA) {
      sim.barrier(
          {{0, site, full_mask(32), full_mask(32)}, {1, site, full_mask(32), full_mask(32)}});
    }
    const std::vector<Finding>& findings() const { return sim.findings().findings(); }
  };
};

}  // namespace

TEST_SUITE("sim: races in shared memory") {
  TEST_CASE("a read after another thread's write with no barrier between is a race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 0, {0, 5});
    b.touch(b.s, Access::kLoad, kLoad, 33, {0, 5});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK_FALSE(f.benign);
    CHECK(f.buffer == "s");
    CHECK(f.element == "[0, 5]");
    CHECK(f.threads == std::vector<int>{0, 33});
    CHECK(f.sites == std::vector<int>{kStore, kLoad});
    CHECK(f.blocks == std::vector<std::vector<int64_t>>{{0}});
    CHECK(f.message.find("thread 33 (warp 1, lane 1) reads it by load of s in `y = s[i]` (at "
                         "k.cpp:2:1) after thread 0 (warp 0, lane 0) wrote it") !=
          std::string::npos);
    CHECK(f.message.find("Put T.sync_threads() between the write and the read") !=
          std::string::npos);
  }

  TEST_CASE("a barrier between the write and the read removes the race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 0, {0, 5});
    b.barrier_all();
    b.touch(b.s, Access::kLoad, kLoad, 33, {0, 5});
    CHECK(b.findings().empty());
    CHECK(b.sim.epoch() == 2);
  }

  TEST_CASE("a thread reading its own write is no race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 7, {1, 1});
    b.touch(b.s, Access::kLoad, kLoad, 7, {1, 1});
    CHECK(b.findings().empty());
  }

  TEST_CASE("lanes of one warp race too (no lock-step guarantee since Volta)") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 1, {0, 0});
    b.touch(b.s, Access::kLoad, kLoad, 2, {0, 0});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].threads == std::vector<int>{1, 2});
  }

  TEST_CASE("a write after another thread's read in the same interval is a race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 0, {2, 2});
    b.barrier_all();
    b.touch(b.s, Access::kLoad, kLoad, 40, {2, 2});
    b.touch(b.s, Access::kStore, kStore, 0, {2, 2});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK(f.threads == std::vector<int>{40, 0});
    CHECK(f.sites == std::vector<int>{kLoad, kStore});
    CHECK(f.message.find("writes it by store of s") != std::string::npos);
  }

  TEST_CASE("the second distinct reader is remembered for the write-after-read check") {
    // Thread 3 reads, then thread 9 reads, then thread 3 writes: the race is with thread 9.
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 0, {0, 1});
    b.barrier_all();
    b.touch(b.s, Access::kLoad, kLoad, 3, {0, 1});
    b.touch(b.s, Access::kLoad, kLoad, 9, {0, 1});
    b.touch(b.s, Access::kStore, kStore, 3, {0, 1});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].threads == std::vector<int>{9, 3});
  }

  TEST_CASE("two threads writing different values is a write conflict") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 4, {3, 3});
    b.touch(b.s, Access::kStore, kStore, 36, {3, 3}, /*same=*/false);
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kWriteConflict);
    CHECK_FALSE(f.benign);
    CHECK(f.threads == std::vector<int>{4, 36});
    CHECK(b.sim.findings().has_errors());
  }

  TEST_CASE("two threads writing the same value is a benign race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 4, {3, 3});
    b.touch(b.s, Access::kStore, kStore, 36, {3, 3}, /*same=*/true);
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].kind == FindingKind::kRace);
    CHECK(b.findings()[0].benign);
    CHECK_FALSE(b.sim.findings().has_errors());
  }

  TEST_CASE("atomics are exempt from race detection") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kAtomic, kStore, 4, {3, 3});
    b.touch(b.s, Access::kAtomic, kStore, 36, {3, 3});
    CHECK(b.findings().empty());
  }

  TEST_CASE("repeated races of one pair of sites are one finding with a count") {
    // 8 threads each read what thread 0 wrote: 8 occurrences, the first described.
    Rig rig;
    Rig::Block b(rig, 0);
    for (int e = 0; e < 8; ++e) b.touch(b.s, Access::kStore, kStore, 0, {4, e});
    for (int t = 1; t <= 8; ++t) b.touch(b.s, Access::kLoad, kLoad, t, {4, t - 1});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].count == 8);
    CHECK(b.findings()[0].element == "[4, 0]");
    CHECK(b.findings()[0].threads == std::vector<int>{0, 1});
  }

}  // TEST_SUITE

TEST_SUITE("sim: uninitialised reads and bounds") {
  TEST_CASE("reading shared memory nothing wrote is an uninitialised read") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kLoad, kLoad, 12, {7, 7});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kUninit);
    CHECK(f.element == "[7, 7]");
    CHECK(f.threads == std::vector<int>{12});
    CHECK(f.message.find("before any thread wrote it") != std::string::npos);
  }

  TEST_CASE("local storage is initialised per thread") {
    // Thread 0 writes acc[2]; thread 0 reading it is fine, thread 1 reading its own acc[2] is not.
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.acc, Access::kStore, kStore, 0, {2});
    b.touch(b.acc, Access::kLoad, kLoad, 0, {2});
    CHECK(b.findings().empty());
    b.touch(b.acc, Access::kLoad, kLoad, 1, {2});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].kind == FindingKind::kUninit);
    CHECK(b.findings()[0].buffer == "acc");
    CHECK(b.findings()[0].threads == std::vector<int>{1});
    CHECK(b.findings()[0].message.find("before this thread wrote it") != std::string::npos);
  }

  TEST_CASE("an index past the logical shape is out of bounds even inside the allocation") {
    // s[0, 9] of shape (8, 8) has flat offset 9, inside the 64 elements, but column 9 >= 8.
    Rig rig;
    Rig::Block b(rig, 0);
    Resolved r = b.touch(b.s, Access::kStore, kStore, 5, {0, 9});
    CHECK(r.ok == 0);
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kOob);
    CHECK(f.element == "[0, 9]");
    CHECK(f.message.find("outside s's shared shape (8, 8); the access was skipped. Guard it") !=
          std::string::npos);
    CHECK(b.sim.counters()[kStore].shared_requests == 0);  // no lane left: nothing issued
  }

  TEST_CASE("a negative index is out of bounds and a load of it reads nothing") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kLoad, kLoad, 5, {-1, 0});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].element == "[-1, 0]");
    CHECK(b.findings()[0].message.find("(the load reads 0)") != std::string::npos);
  }

  TEST_CASE("a vector access that runs past the end of its row is out of bounds") {
    // 4 elements from s[1, 6]: columns 6..9, past the row of 8.
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kLoad, kLoad, 5, {1, 6}, false, 4);
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].element == "[1, 6..9]");
  }

}  // TEST_SUITE

TEST_SUITE("sim: async copies") {
  TEST_CASE("reading a cp.async destination before the wait is an async race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(3, kCopy, b.s, 8, {1, 2, 3, 4});  // s[1, 0..3]
    b.touch(b.s, Access::kLoad, kLoad, 3, {1, 2});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kAsyncRace);
    CHECK(f.element == "[1, 2]");
    CHECK(f.threads == std::vector<int>{3, 3});
    CHECK(f.sites == std::vector<int>{kCopy, kLoad});
  }

  TEST_CASE("wait_group lands the copy; the issuing thread may then read it") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(3, kCopy, b.s, 8, {10, 20, 30, 40});
    b.sim.async_commit(3);
    std::vector<AsyncCopy> landed = b.sim.async_wait(3, 0);
    REQUIRE(landed.size() == 1);
    CHECK(landed[0].flat == 8);
    CHECK(landed[0].cells == std::vector<uint64_t>{10, 20, 30, 40});
    b.touch(b.s, Access::kLoad, kLoad, 3, {1, 3});
    CHECK(b.findings().empty());
  }

  TEST_CASE("another thread reading the landed copy without a barrier races with it") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(3, kCopy, b.s, 8, {1, 2, 3, 4});
    b.sim.async_commit(3);
    b.sim.async_wait(3, 0);
    b.touch(b.s, Access::kLoad, kLoad, 40, {1, 0});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].kind == FindingKind::kRace);
    CHECK(b.findings()[0].threads == std::vector<int>{3, 40});
    CHECK(b.findings()[0].sites == std::vector<int>{kCopy, kLoad});
  }

  TEST_CASE("wait_group 1 leaves the newest group in flight") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(0, kCopy, b.s, 0, {1});
    b.sim.async_commit(0);
    b.sim.async_issue(0, kCopy, b.s, 1, {2});
    b.sim.async_commit(0);
    std::vector<AsyncCopy> landed = b.sim.async_wait(0, 1);
    REQUIRE(landed.size() == 1);
    CHECK(landed[0].flat == 0);
    b.touch(b.s, Access::kLoad, kLoad, 0, {0, 0});
    CHECK(b.findings().empty());
    b.touch(b.s, Access::kLoad, kLoad, 0, {0, 1});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].kind == FindingKind::kAsyncRace);
  }

  TEST_CASE("copies not yet committed are not landed by wait_group 0") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(0, kCopy, b.s, 0, {1});
    CHECK(b.sim.async_wait(0, 0).empty());
    CHECK(b.sim.async_drain().size() == 1);
  }

  TEST_CASE("storing into a destination in flight is an async race") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.async_issue(0, kCopy, b.s, 0, {1});
    b.touch(b.s, Access::kStore, kStore, 0, {0, 0});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].kind == FindingKind::kAsyncRace);
    CHECK(b.findings()[0].message.find("the copy will overwrite the store") != std::string::npos);
  }

}  // TEST_SUITE

TEST_SUITE("sim: barriers") {
  TEST_CASE("a barrier reached by part of a warp is barrier divergence") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.barrier({{0, kBarrierA, full_mask(32), full_mask(32)},
                   {1, kBarrierA, full_mask(16), full_mask(32)}});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kBarrierDivergence);
    CHECK(f.threads == std::vector<int>{48});
    CHECK(f.message.find("is reached by lanes 0-15 of warp 1 in block (0,), but lanes 16-31") !=
          std::string::npos);
  }

  TEST_CASE("warps waiting at different barriers is barrier divergence") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.barrier({{0, kBarrierA, full_mask(32), full_mask(32)},
                   {1, kBarrierB, full_mask(32), full_mask(32)}});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].sites == std::vector<int>{kBarrierA, kBarrierB});
    CHECK(b.findings()[0].message.find("warp 0 waits at T.sync_threads() (at k.cpp:3:1) while "
                                       "warp 1 waits at T.sync_threads() (at k.cpp:4:1)") !=
          std::string::npos);
  }

  TEST_CASE("a warp that finished while others wait is barrier divergence") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.barrier({{0, kBarrierA, full_mask(32), full_mask(32)}, {1, -1, 0, full_mask(32)}});
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].message.find("warp 1 finished without reaching T.sync_threads() (at "
                                       "k.cpp:3:1), where warp 0 waits (on a GPU") !=
          std::string::npos);
  }

  TEST_CASE("a warp-collective instruction with missing lanes is barrier divergence") {
    Rig rig;
    Rig::Block b(rig, 0);
    b.sim.partial_warp(1, kCopy, full_mask(8), full_mask(32), 32);
    REQUIRE(b.findings().size() == 1);
    CHECK(b.findings()[0].threads == std::vector<int>{40});
    CHECK(b.findings()[0].message.find(".sync.aligned instructions need every lane") !=
          std::string::npos);
  }

}  // TEST_SUITE

TEST_SUITE("sim: races between blocks") {
  TEST_CASE("a block reading what another block writes is a race") {
    Rig rig;
    Rig::Block b0(rig, 0), b1(rig, 1);
    b0.touch(rig.C, Access::kStore, kStoreC, 3, {5});
    b1.touch(rig.C, Access::kLoad, kLoadC, 7, {5});
    REQUIRE(b1.findings().size() == 1);
    const Finding& f = b1.findings()[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK(f.element == "[5]");
    CHECK(f.threads == std::vector<int>{3, 7});
    CHECK(f.blocks == std::vector<std::vector<int64_t>>{{0}, {1}});
    CHECK(f.sites == std::vector<int>{kStoreC, kLoadC});
    CHECK(b0.findings().empty());
  }

  TEST_CASE("the same race is found when the reading block runs first") {
    Rig rig;
    Rig::Block b0(rig, 0), b1(rig, 1);
    b1.touch(rig.C, Access::kLoad, kLoadC, 7, {5});
    b0.touch(rig.C, Access::kStore, kStoreC, 3, {5});
    REQUIRE(b0.findings().size() == 1);
    CHECK(b0.findings()[0].kind == FindingKind::kRace);
    CHECK(b0.findings()[0].threads == std::vector<int>{7, 3});
  }

  TEST_CASE("two blocks storing different values is a write conflict, the same value benign") {
    Rig rig;
    Rig::Block b0(rig, 0), b1(rig, 1), b2(rig, 2);
    b0.touch(rig.C, Access::kStore, kStoreC, 0, {1});
    b1.touch(rig.C, Access::kStore, kStoreC, 0, {1}, /*same=*/false);
    b2.touch(rig.C, Access::kStore, kStoreC, 0, {1}, /*same=*/true);
    REQUIRE(b1.findings().size() == 1);
    CHECK(b1.findings()[0].kind == FindingKind::kWriteConflict);
    REQUIRE(b2.findings().size() == 1);
    CHECK(b2.findings()[0].kind == FindingKind::kRace);
    CHECK(b2.findings()[0].benign);
  }

  TEST_CASE("reads by several blocks followed by a write name the other blocks") {
    Rig rig;
    Rig::Block b0(rig, 0), b1(rig, 1), b2(rig, 2);
    b0.touch(rig.C, Access::kLoad, kLoadC, 0, {2});
    b1.touch(rig.C, Access::kLoad, kLoadC, 0, {2});
    b2.touch(rig.C, Access::kStore, kStoreC, 0, {2});
    REQUIRE(b2.findings().size() == 1);
    CHECK(b2.findings()[0].message.find("while several other blocks read it") != std::string::npos);
  }

  TEST_CASE("one block reading and writing its own elements is fine") {
    Rig rig;
    Rig::Block b0(rig, 0);
    b0.touch(rig.C, Access::kLoad, kLoadC, 0, {2});
    b0.touch(rig.C, Access::kStore, kStoreC, 0, {2});
    b0.touch(rig.C, Access::kLoad, kLoadC, 0, {2});
    CHECK(b0.findings().empty());
  }

  TEST_CASE("the launch report merges blocks' findings in block order") {
    Rig rig;
    {
      Rig::Block b2(rig, 2);
      b2.touch(b2.s, Access::kLoad, kLoad, 1, {0, 0});  // uninit in block 2
      rig.run.absorb(b2.sim);
    }
    {
      Rig::Block b1(rig, 1);
      b1.touch(b1.s, Access::kLoad, kLoad, 1, {0, 0});  // the same, block 1
      b1.touch(b1.s, Access::kLoad, kLoad, 1, {0, 1});
      rig.run.absorb(b1.sim);
    }
    SimReport r = rig.run.report();
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].count == 3);
    CHECK(r.findings[0].blocks == std::vector<std::vector<int64_t>>{{1}});
    CHECK(r.blocks == 2);
    CHECK(r.has_errors());
    CHECK(r.text().find("[uninit] uninitialised read of shared s[0, 0]") != std::string::npos);
  }

}  // TEST_SUITE

TEST_SUITE("sim: shared atomics and the async proxy") {
  /// Thread 0 stores s[0, 0] and fences; a barrier; thread 33 adds to it atomically (and fences
  /// when `atomic_fenced`); a barrier; warp 0's wgmma reads s[0, 0] through the async proxy.
  std::vector<Finding> atomic_then_wgmma(bool atomic_fenced) {
    Rig rig;
    Rig::Block b(rig, 0);
    b.touch(b.s, Access::kStore, kStore, 0, {0, 0});
    b.sim.fence_proxy_async(0);
    b.barrier_all();
    b.touch(b.s, Access::kAtomic, kAtom, 33, {0, 0});
    if (atomic_fenced) b.sim.fence_proxy_async(33);
    b.barrier_all(kBarrierB);
    b.sim.wgmma_fence(0);
    b.sim.wgmma_issue(0, 0, kWgmma, {{b.s, 0}}, {}, {});
    return b.findings();
  }

  TEST_CASE("a wgmma reading what a shared atomic wrote with no fence after it: proxy_fence") {
    // The plain store was fenced; the atomic after it is the last generic-proxy write and has
    // no fence on the way to the wgmma.
    std::vector<Finding> f = atomic_then_wgmma(false);
    REQUIRE(f.size() == 1);
    CHECK(f[0].kind == FindingKind::kProxyFence);
    CHECK(f[0].buffer == "s");
    CHECK(f[0].element == "[0, 0]");
    CHECK(f[0].threads == std::vector<int>{33, 0});
    CHECK(f[0].sites == std::vector<int>{kAtom, kWgmma});
    CHECK(f[0].message.find("thread 33 (warp 1, lane 1) updates it atomically by") !=
          std::string::npos);
  }

  TEST_CASE("the atomic's own fence before the barrier clears it") {
    CHECK(atomic_then_wgmma(true).empty());
  }
}
