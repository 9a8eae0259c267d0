// Races between threads of one block on global memory, driven request by request through
// sim::BlockSim: the rules of shared memory (read-after-write, write-after-read, write conflicts,
// benign same-value writes, atomics exempt) within one barrier interval of the block, and the
// hash table behind them (sim::BlockGlobalShadow) across growth and barriers; and the pages of
// the cross-block shadow (sim::GlobalShadow). Each test states the exact finding expected.
#include <doctest/doctest.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "sim/block_global_shadow.h"
#include "sim/block_sim.h"
#include "sim/global_shadow.h"

using namespace tessel;
using namespace tessel::sim;

namespace {

enum SiteId { kStore, kLoad, kAtomic, kBarrier };

/// A launch of 2 blocks of 64 threads with a global C[16] and a global D[4, 4].
struct Rig {
  SimRun run{SimOptions{},
             {Site{"store", "C", "C[i] = x", "k.cpp:1:1", ""},
              Site{"load", "C", "y = C[i]", "k.cpp:2:1", ""},
              Site{"atom_add", "C", "T.atom_add(C[i], x)", "k.cpp:3:1", ""},
              Site{"T.sync_threads()", "", "T.sync_threads()", "k.cpp:4:1", ""}}};
  int C = run.add_global(BufferDesc{"C", Space::kGlobal, DataType::f32(), {16}, 0});
  int D = run.add_global(BufferDesc{"D", Space::kGlobal, DataType::f32(), {4, 4}, 64});
  Rig() { run.set_grid({2}); }
};

struct Block {
  BlockSim sim;
  Block(Rig& rig, uint32_t id) : sim(rig.run, id, 64) {}

  /// Thread t accesses element `index` of global `buffer`.
  void touch(int buffer, Access access, int site, int t, std::vector<int64_t> index,
             bool same = false) {
    static thread_local std::array<std::array<int64_t, 64>, 8> idx;
    WarpRequest req;
    req.buffer = buffer;
    req.access = access;
    req.site = site;
    req.warp = t / 32;
    req.first_thread = t / 32 * 32;
    req.mask = uint64_t{1} << (t % 32);
    for (size_t d = 0; d < index.size(); ++d) {
      idx[d][t % 32] = index[d];
      req.index[d] = idx[d].data();
    }
    Resolved r = sim.resolve(req);
    sim.observe(req, r, same ? req.mask : 0);
  }
  void barrier() {
    sim.barrier(
        {{0, kBarrier, full_mask(32), full_mask(32)}, {1, kBarrier, full_mask(32), full_mask(32)}});
  }
  const std::vector<Finding>& findings() const { return sim.findings().findings(); }
};

}  // namespace

TEST_SUITE("sim: races between threads of a block on global memory") {
  TEST_CASE("a read after another thread's write with no barrier between is a race") {
    Rig rig;
    Block b(rig, 1);
    b.touch(rig.C, Access::kStore, kStore, 3, {5});
    b.touch(rig.C, Access::kLoad, kLoad, 40, {5});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK_FALSE(f.benign);
    CHECK(f.buffer == "C");
    CHECK(f.element == "[5]");
    CHECK(f.threads == std::vector<int>{3, 40});
    CHECK(f.blocks == std::vector<std::vector<int64_t>>{{1}});
    CHECK(f.sites == std::vector<int>{kStore, kLoad});
    CHECK(f.message.find("race on global C[5] in block (1,): thread 40 (warp 1, lane 8) reads "
                         "it by load of C") != std::string::npos);
    CHECK(f.message.find("Add T.sync_threads() between the write and the read, or let one "
                         "thread do both") != std::string::npos);
  }

  TEST_CASE("a barrier of the block between the write and the read removes the race") {
    Rig rig;
    Block b(rig, 0);
    b.touch(rig.C, Access::kStore, kStore, 3, {5});
    b.barrier();
    b.touch(rig.C, Access::kLoad, kLoad, 40, {5});
    CHECK(b.findings().empty());
  }

  TEST_CASE("a thread reading its own write, and many threads reading, are no race") {
    Rig rig;
    Block b(rig, 0);
    b.touch(rig.C, Access::kStore, kStore, 7, {2});
    b.touch(rig.C, Access::kLoad, kLoad, 7, {2});
    for (int t = 0; t < 64; ++t) b.touch(rig.C, Access::kLoad, kLoad, t, {9});
    CHECK(b.findings().empty());
  }

  TEST_CASE("a write after another thread's read is a race naming that reader") {
    // Thread 3 reads D[1, 2], thread 9 reads it, thread 3 writes it: the race is with 9.
    Rig rig;
    Block b(rig, 0);
    b.touch(rig.D, Access::kLoad, kLoad, 3, {1, 2});
    b.touch(rig.D, Access::kLoad, kLoad, 9, {1, 2});
    b.touch(rig.D, Access::kStore, kStore, 3, {1, 2});
    REQUIRE(b.findings().size() == 1);
    const Finding& f = b.findings()[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK(f.buffer == "D");
    CHECK(f.element == "[1, 2]");
    CHECK(f.threads == std::vector<int>{9, 3});
    CHECK(f.sites == std::vector<int>{kLoad, kStore});
    CHECK(f.message.find("Add T.sync_threads() between the read and the write, or let one "
                         "thread write") != std::string::npos);
  }

  TEST_CASE("two threads writing different values is a write conflict, the same value benign") {
    Rig rig;
    Block b(rig, 0);
    b.touch(rig.C, Access::kStore, kStore, 4, {3});
    b.touch(rig.C, Access::kStore, kStore, 36, {3}, /*same=*/false);
    b.touch(rig.C, Access::kStore, kStore, 0, {8});
    b.touch(rig.C, Access::kStore, kStore, 1, {8}, /*same=*/true);
    REQUIRE(b.findings().size() == 2);
    const Finding& conflict = b.findings()[0];
    CHECK(conflict.kind == FindingKind::kWriteConflict);
    CHECK(conflict.element == "[3]");
    CHECK(conflict.threads == std::vector<int>{4, 36});
    CHECK(conflict.message.find("or combine the values with an atomic (T.atom_add)") !=
          std::string::npos);
    const Finding& benign = b.findings()[1];
    CHECK(benign.kind == FindingKind::kRace);
    CHECK(benign.benign);
    CHECK(benign.threads == std::vector<int>{0, 1});
  }

  TEST_CASE("atomics are exempt from race detection") {
    Rig rig;
    Block b(rig, 0);
    b.touch(rig.C, Access::kAtomic, kAtomic, 4, {3});
    b.touch(rig.C, Access::kAtomic, kAtomic, 36, {3});
    CHECK(b.findings().empty());
  }

  TEST_CASE("a race in the block and one across blocks at the same sites are two findings") {
    // Block 0 thread 2 writes C[6]; in block 1 thread 5 writes C[6] and thread 6 reads it.
    // Block 1's read sees its own thread 5's write (in the block) and block 0's (across);
    // its store conflicts with block 0's store across blocks only.
    Rig rig;
    Block b0(rig, 0), b1(rig, 1);
    b0.touch(rig.C, Access::kStore, kStore, 2, {6});
    b1.touch(rig.C, Access::kStore, kStore, 5, {6});
    b1.touch(rig.C, Access::kLoad, kLoad, 6, {6});
    REQUIRE(b1.findings().size() == 3);
    CHECK(b1.findings()[0].kind == FindingKind::kWriteConflict);
    CHECK(b1.findings()[0].blocks == std::vector<std::vector<int64_t>>{{0}, {1}});
    const Finding& within = b1.findings()[1];
    CHECK(within.kind == FindingKind::kRace);
    CHECK(within.threads == std::vector<int>{5, 6});
    CHECK(within.blocks == std::vector<std::vector<int64_t>>{{1}});
    const Finding& across = b1.findings()[2];
    CHECK(across.kind == FindingKind::kRace);
    CHECK(across.threads == std::vector<int>{2, 6});
    CHECK(across.blocks == std::vector<std::vector<int64_t>>{{0}, {1}});
  }

}  // TEST_SUITE

TEST_SUITE("sim: the per-block global shadow table") {
  TEST_CASE("every element of an interval survives the table's growth") {
    // 5000 elements written by thread 1 in one interval: the table (1024 slots, at most 3/4
    // full) grows past 768, 1536 and 3072 elements, to 8192 slots; a read by thread 2 of each
    // element then still finds its writer.
    BlockGlobalShadow s;
    for (int64_t e = 0; e < 5000; ++e) CHECK_FALSE(s.write(0, e, 1, 0, false));
    CHECK(s.size() == 5000);
    int found = 0;
    for (int64_t e = 0; e < 5000; ++e) {
      std::optional<BlockConflict> c = s.read(0, e, 2, 1);
      found += c && c->thread == 1 && c->site == 0 && c->with_write;
    }
    CHECK(found == 5000);
  }

  TEST_CASE("buffers are told apart and a barrier forgets every element") {
    BlockGlobalShadow s;
    CHECK_FALSE(s.write(0, 7, 1, 0, false));
    CHECK_FALSE(s.read(1, 7, 2, 1));  // element 7 of another buffer
    s.barrier();
    CHECK(s.size() == 0);
    CHECK_FALSE(s.read(0, 7, 2, 1));
    CHECK(s.size() == 1);
  }

}  // TEST_SUITE

TEST_SUITE("sim: cross-block shadow pages") {
  TEST_CASE("the cross-block shadow holds pages only where blocks touched elements") {
    // 2^30 elements would be 24 GiB of cells held whole; touched at elements 5000 and 5001
    // (both in page 5000 / 1024 = 4) and at the last element (another page), it holds 2 pages.
    GlobalShadow shadow;
    shadow.add_buffer(0, int64_t{1} << 30, "A");
    CHECK(shadow.bytes() == 0);
    CHECK_FALSE(shadow.read(0, 5000, 0, 0, 0));
    CHECK(shadow.bytes() == GlobalShadow::kPageBytes);
    CHECK_FALSE(shadow.read(0, 5001, 0, 1, 0));
    CHECK(shadow.bytes() == GlobalShadow::kPageBytes);
    CHECK_FALSE(shadow.write(0, (int64_t{1} << 30) - 1, 0, 2, 0, false));
    CHECK(shadow.bytes() == 2 * GlobalShadow::kPageBytes);
  }

  TEST_CASE("races across blocks are found on both sides of a page boundary") {
    // Block 0 stores elements 1023 (last of page 0) and 1024 (first of page 1); block 1 reading
    // either races with block 0's store; block 1 reading 2048 (untouched page 2) does not.
    GlobalShadow shadow;
    shadow.add_buffer(0, 4096, "C");
    CHECK_FALSE(shadow.write(0, 1023, 0, 7, 0, false));
    CHECK_FALSE(shadow.write(0, 1024, 0, 8, 0, false));
    for (int64_t e : {1023, 1024}) {
      CAPTURE(e);
      std::optional<GlobalConflict> c = shadow.read(0, e, 1, 3, 1);
      REQUIRE(c);
      CHECK(c->kind == FindingKind::kRace);
      CHECK(c->with_write);
      CHECK(c->other.block == 0);
      CHECK(c->other.thread == (e == 1023 ? 7 : 8));
    }
    CHECK_FALSE(shadow.read(0, 2048, 1, 3, 1));
  }

  TEST_CASE("a shadow past its memory limit is a user error naming the buffer and the fix") {
    // Room for 2 pages: elements 0 and 1024 fit, element 2048 (a third page) does not.
    GlobalShadow shadow(2 * GlobalShadow::kPageBytes);
    shadow.add_buffer(0, 10 * 1024, "Out");
    CHECK_FALSE(shadow.read(0, 0, 0, 0, 0));
    CHECK_FALSE(shadow.read(0, 1024, 0, 0, 0));
    try {
      (void)shadow.read(0, 2048, 0, 0, 0);
      FAIL("expected a user error");
    } catch (const UserError& e) {
      std::string msg = e.what();
      CHECK(msg.find("at 'Out'") != std::string::npos);
      CHECK(msg.find("simulate fewer blocks (e.g. --blocks random:8)") != std::string::npos);
    }
    CHECK(shadow.bytes() == 2 * GlobalShadow::kPageBytes);
  }
}
