// The Hopper findings of the bug corpus (examples/bugs/bugs_hopper.cpp, sm90): each broken kernel
// reports its finding with the register or buffer, the threads and the sites under several
// schedules, and its fixed twin is clean and right.
#include <doctest/doctest.h>

#include <sstream>

#include "core/kernel_parser.h"
#include "core/printer.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;
using sim::FindingKind;

namespace {

const char* const kSchedules[] = {"in-order", "reverse", "random:3", "random:11"};

struct CorpusRun {
  ThreadRunResult result;
  bool matches_reference = true;
  const std::vector<sim::Finding>& findings() const { return result.report.findings; }
  const sim::Site& site(const sim::Finding& f, size_t i) const {
    return result.report.sites.at(f.sites.at(i));
  }
};

CorpusRun run_corpus(const std::string& name, bool fixed, const char* schedule = "in-order") {
  const Example* e = find_example(name);
  REQUIRE(e != nullptr);
  Params p = make_params(*e, {{"fixed", fixed ? "true" : "false"}});
  Kernel k = e->build(p);
  TensorMap t = make_tensors(k, {}, e->outputs, 1), expected = t;
  e->reference(p, expected);
  ThreadRunOptions o;
  o.target = "sm90";
  o.workers = 1;
  o.schedule = *Schedule::parse(schedule);
  CorpusRun run;
  run.result = run_thread_level(k, t, o);
  for (const std::string& out : e->outputs) {
    run.matches_reference &=
        compare(t.at(out), expected.at(out), Tolerance::for_dtype(t.at(out).dtype())).passed;
  }
  return run;
}

/// Under every schedule the broken kernel reports only findings of `kind` (at least one) and
/// the fixed twin none, with the reference's result.
void check_schedules(const std::string& name, FindingKind kind) {
  for (const char* s : kSchedules) {
    INFO(name << " under " << s);
    CorpusRun bug = run_corpus(name, false, s);
    REQUIRE_FALSE(bug.findings().empty());
    for (const sim::Finding& f : bug.findings()) CHECK(f.kind == kind);
    CorpusRun fixed = run_corpus(name, true, s);
    CHECK(fixed.findings().empty());
    CHECK(fixed.matches_reference);
  }
}

/// The threads double A into the shared tile s (32 x 32), a barrier, then thread 0 stores s to
/// B with a TMA store and waits. `writers_fence` puts fence.proxy.async after the threads'
/// stores (before the barrier), `reader_fences` in thread 0 after the barrier.
std::string tma_store_source(bool writers_fence, bool reader_fences) {
  return std::string(
             "import tilelang.language as T\n"
             "\n"
             "\n"
             "def store():\n"
             "    @T.prim_func\n"
             "    def main(A: T.Tensor((32, 32), \"float32\"), B: T.Tensor((32, 32), "
             "\"float32\")):\n"
             "        with T.Kernel(1, threads=128) as bx:\n"
             "            s = T.alloc_shared((32, 32), \"float32\")\n"
             "            tx = T.get_thread_binding()\n"
             "            for i in T.serial(8):\n"
             "                s[i * 4 + tx // 32, tx % 32] = A[i * 4 + tx // 32, tx % 32] * "
             "2.0\n") +
         (writers_fence ? "            T.fence_proxy_async()\n" : "") +
         "            T.sync_threads()\n"
         "            if tx == 0:\n" +
         (reader_fences ? "                T.fence_proxy_async()\n" : "") +
         "                T.tma_store_2d(B[0, 0], s[0, 0], 32, 32, 0)\n"
         "                T.tma_store_arrive()\n"
         "            T.tma_store_wait(0)\n"
         "\n"
         "    return main\n";
}

ThreadRunResult run_source(const std::string& source, TensorMap& t, const char* schedule) {
  ThreadRunOptions o;
  o.target = "sm90";
  o.workers = 1;
  o.schedule = *Schedule::parse(schedule);
  return run_thread_level(parse_kernel(source, "store.py").kernel, t, o);
}

TensorMap store_inputs() {
  HostTensor a(DataType::f32(), {32, 32});
  for (int64_t i = 0; i < 32 * 32; ++i) a.set(i, static_cast<double>(i % 13) - 6.0);
  return {{"A", a}, {"B", HostTensor(DataType::f32(), {32, 32})}};
}

}  // namespace

TEST_SUITE("hopper findings: wgmma registers") {
  TEST_CASE("bug_wgmma_rs_overwrite: refilling A registers a pending wgmma_rs reads is a race") {
    // Step 1 refills a[0..7] in each of the 128 threads while step 0's wgmma_rs, which reads
    // all eight of each thread's registers, is pending: 128 x 8 = 1024 writes.
    CorpusRun r = run_corpus("bug_wgmma_rs_overwrite", false);
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kWgmmaRace);
    CHECK(f.buffer == "a");
    CHECK(f.element == "[0]");
    CHECK(f.count == 1024);
    CHECK(f.threads == std::vector<int>{0});
    CHECK(r.site(f, 0).access == "store");
    CHECK(r.site(f, 0).statement.find("a[i] = A[") == 0);
    CHECK(f.message.find("wgmma race on register a[0]: thread 0 (warp 0, lane 0)") == 0);
    CHECK(f.message.find("reads it as its A operand") != std::string::npos);
    // The simulated wgmma reads its registers at issue, so the product is still right here.
    CHECK(r.matches_reference);
  }

  TEST_CASE("the A-register race is found under every schedule and the fixed twin is clean") {
    check_schedules("bug_wgmma_rs_overwrite", FindingKind::kWgmmaRace);
  }
}

TEST_SUITE("hopper findings: wgmma.fence") {
  TEST_CASE("bug_wgmma_missing_fence: halved accumulators reach the next wgmma unfenced") {
    // `acc[i] = acc[i] * 0.5` rewrites all 16 accumulators of each of the 128 threads after the
    // warp's wgmma.fence; the step-1 wgmma then accumulates onto each: 128 x 16 = 2048
    // accesses, each named by its write (the store after the load of the same statement).
    CorpusRun r = run_corpus("bug_wgmma_missing_fence", false);
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kWgmmaFence);
    CHECK(sim::finding_kind_name(f.kind) == std::string("wgmma_fence"));
    CHECK(f.buffer == "acc");
    CHECK(f.element == "[0]");
    CHECK(f.count == 2048);
    CHECK(f.threads == std::vector<int>{0});
    CHECK(r.site(f, 0).access == "store");
    CHECK(r.site(f, 0).statement == "acc[i] = acc[i] * 0.5");
    CHECK(r.site(f, 1).access.find("wgmma_rs_f16") != std::string::npos);
    CHECK(f.message.find("missing wgmma.fence on register acc[0]: thread 0 (warp 0, lane 0)") == 0);
    CHECK(f.message.find("Put T.wgmma_fence() after the access, before the wgmma") !=
          std::string::npos);
    CHECK(r.matches_reference);
  }

  TEST_CASE("the missing wgmma.fence is found under every schedule and the fixed twin is clean") {
    check_schedules("bug_wgmma_missing_fence", FindingKind::kWgmmaFence);
  }

  TEST_CASE("a warp's first wgmma with no wgmma.fence before it is a wgmma_fence finding") {
    // The fixed twin without its first T.wgmma_fence(): each of the 4 warps issues its first
    // wgmma unfenced (4 occurrences); its second comes after the fence that remains.
    const Example* e = find_example("bug_wgmma_missing_fence");
    Kernel k = e->build(make_params(*e, {{"fixed", "true"}}));
    std::string text = print_kernel(k);
    const std::string fence = "        T.wgmma_fence()\n";
    const size_t at = text.find(fence);
    REQUIRE(at != std::string::npos);
    text.erase(at, fence.size());
    TensorMap t = make_tensors(k, {}, {"C"}, 1);
    ThreadRunResult r = run_source(text, t, "in-order");
    REQUIRE(r.report.findings.size() == 1);
    const sim::Finding& f = r.report.findings[0];
    CHECK(f.kind == FindingKind::kWgmmaFence);
    CHECK(f.count == 4);
    CHECK(f.message.find("missing wgmma.fence: warp 0 of block (0,) issues its first wgmma") == 0);
  }
}

TEST_SUITE("hopper findings: wgmma never waited for") {
  TEST_CASE("reading the accumulators before wait_group is already a wgmma race on the register") {
    // bug_wgmma_unwaited's epilogue: the loop's wgmma_wait_group(1) after step 1 retires step
    // 0 only, so step 1's wgmma (m64n32k16: 64 x 32 / 128 = 16 accumulators per thread) still
    // writes every accumulator when store_c reads acc[0..15] in each of the 128 threads:
    // 128 x 16 = 2048 reads.
    CorpusRun r = run_corpus("bug_wgmma_unwaited", false);
    REQUIRE(r.findings().size() == 2);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kWgmmaRace);
    CHECK(f.buffer == "acc");
    CHECK(f.element == "[0]");
    CHECK(f.count == 2048);
    CHECK(f.threads == std::vector<int>{0});
    CHECK(r.site(f, 0).access == "load");
    CHECK(r.site(f, 0).statement.find("C[") == 0);
    CHECK(f.message.find("wgmma race on register acc[0]: thread 0 (warp 0, lane 0) of block (0,) "
                         "reads it by load of acc") == 0);
    CHECK(f.message.find("Put T.wgmma_wait_group(0) before the read") != std::string::npos);
  }

  TEST_CASE("bug_wgmma_unwaited: a wgmma still pending when its warp ends is a finding") {
    // Step 1's wgmma is the one group no wait retires: one operation in each of the warpgroup's
    // 4 warps, all at the one wgmma_rs statement of the loop: one finding, 4 occurrences, named
    // by warp 0 (warpgroup 0, first thread 0).
    CorpusRun r = run_corpus("bug_wgmma_unwaited", false);
    REQUIRE(r.findings().size() == 2);
    const sim::Finding& f = r.findings()[1];
    CHECK(f.kind == FindingKind::kWgmmaUnwaited);
    CHECK(sim::finding_kind_name(f.kind) == std::string("wgmma_unwaited"));
    CHECK(f.buffer == "acc");
    CHECK(f.count == 4);
    CHECK(f.threads == std::vector<int>{0});
    REQUIRE(f.sites.size() == 1);
    CHECK(r.site(f, 0).statement.find("T.wgmma_rs_f16(acc[0], a[ko * 8], B_s[ko, 0]") == 0);
    CHECK(f.message.find("wgmma never waited for: warp 0 (warpgroup 0) of block (0,) issues a "
                         "wgmma by ") == 0);
    CHECK(f.message.find("ends with it pending: no T.wgmma_wait_group retires its group") !=
          std::string::npos);
    CHECK(f.message.find("never reach the accumulators (acc)") != std::string::npos);
    // C lacks step 1's product A[:, 16:32] B[16:32, :].
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("the unwaited wgmma is found under every schedule and the fixed twin is clean") {
    for (const char* s : kSchedules) {
      INFO("bug_wgmma_unwaited under " << s);
      CorpusRun bug = run_corpus("bug_wgmma_unwaited", false, s);
      int64_t unwaited = 0, races = 0;
      for (const sim::Finding& f : bug.findings()) {
        if (f.kind == FindingKind::kWgmmaUnwaited) unwaited += f.count;
        if (f.kind == FindingKind::kWgmmaRace) races += f.count;
      }
      CHECK(bug.findings().size() == 2);
      CHECK(unwaited == 4);  // one pending operation per warp, as above
      CHECK(races == 2048);
      CorpusRun fixed = run_corpus("bug_wgmma_unwaited", true, s);
      CHECK(fixed.findings().empty());
      CHECK(fixed.matches_reference);
    }
  }

  TEST_CASE("a warp that ends with wgmmas it never waited for, or never committed") {
    // The fixed twin without its epilogue and its waits: each warp's two k-step wgmmas (one
    // statement) stay pending, 4 warps x 2 = 8 operations, and no register is read before a
    // wait, so the end of the warps is the only finding. Without the commits too, the same 8
    // are in the warps' open groups, which no wait_group could retire.
    const Example* e = find_example("bug_wgmma_unwaited");
    Kernel k = e->build(make_params(*e, {{"fixed", "true"}}));
    const std::string text = print_kernel(k);
    for (bool commits : {true, false}) {
      INFO((commits ? "committed" : "never committed"));
      // The epilogue is the kernel's last loop (`for i in T.serial(16):` storing C).
      const size_t epilogue = text.rfind("        for i in T.serial(16):\n");
      REQUIRE(epilogue != std::string::npos);
      std::string edited;
      std::istringstream lines(text.substr(0, epilogue));
      for (std::string line; std::getline(lines, line);) {
        if (line.find("T.wgmma_wait_group(") != std::string::npos) continue;
        if (!commits && line.find("T.wgmma_commit_group()") != std::string::npos) continue;
        edited += line + "\n";
      }
      REQUIRE(edited.find("C[") == std::string::npos);
      TensorMap t = make_tensors(k, {}, {"C"}, 1);
      ThreadRunResult r = run_source(edited, t, "in-order");
      REQUIRE(r.report.findings.size() == 1);
      const sim::Finding& f = r.report.findings[0];
      CHECK(f.kind == FindingKind::kWgmmaUnwaited);
      CHECK(f.count == 8);
      CHECK(f.variant == (commits ? 0 : 1));
      CHECK(f.message.find(commits
                               ? "no T.wgmma_wait_group retires its group"
                               : "no T.wgmma_commit_group closes its group") != std::string::npos);
    }
  }
}

TEST_SUITE("hopper findings: fence.proxy.async") {
  TEST_CASE("bug_missing_proxy_fence: stores read by a wgmma descriptor with no proxy fence") {
    // One finding per wgmma instruction (k step): each of the 4 warps' wgmma reads its step's
    // 16 x 32 = 512 elements of B_s, 4 x 512 = 2048 unfenced async-proxy reads. The first of
    // step s: warp 0 reads (k, n) = (0, 0) first, B_s[s, 0] (swizzle: chunk 0 ^ 0), which
    // fill_b stores from thread 0 (e = tx = 0).
    CorpusRun r = run_corpus("bug_missing_proxy_fence", false);
    REQUIRE(r.findings().size() == 2);
    for (int s = 0; s < 2; ++s) {
      const sim::Finding& f = r.findings()[s];
      const std::string element = "[" + std::to_string(s) + ", 0]";
      CHECK(f.kind == FindingKind::kProxyFence);
      CHECK(sim::finding_kind_name(f.kind) == std::string("proxy_fence"));
      CHECK(f.buffer == "B_s");
      CHECK(f.element == element);
      CHECK(f.count == 2048);
      CHECK(f.threads == std::vector<int>{0, 0});
      CHECK(r.site(f, 0).access == "store");
      CHECK(r.site(f, 0).buffer == "B_s");
      CHECK(r.site(f, 1).statement.find("T.wgmma_rs_f16(acc[0], a[" + std::to_string(8 * s) +
                                        "], B_s[" + std::to_string(s) + ", 0]") == 0);
      CHECK(f.message.find("missing fence.proxy.async on shared B_s" + element +
                           " in block (0,): thread 0 (warp 0, lane 0) writes it by store of B_s") ==
            0);
      CHECK(f.message.find("and the wgmma of warp 0 reads it") != std::string::npos);
    }
    CHECK(r.matches_reference);
  }

  TEST_CASE("the missing proxy fence is found under every schedule and the fixed twin is clean") {
    check_schedules("bug_missing_proxy_fence", FindingKind::kProxyFence);
  }
}

TEST_SUITE("hopper findings: fence.proxy.async before a TMA store") {
  TEST_CASE("a TMA store of stores with no proxy fence is a proxy_fence finding") {
    for (const char* sched : kSchedules) {
      INFO(sched);
      TensorMap t = store_inputs();
      ThreadRunResult r = run_source(tma_store_source(false, false), t, sched);
      // The store reads all 32 x 32 elements of s, each stored by some thread with no fence.
      REQUIRE(r.report.findings.size() == 1);
      const sim::Finding& f = r.report.findings[0];
      CHECK(f.kind == FindingKind::kProxyFence);
      CHECK(f.buffer == "s");
      CHECK(f.count == 1024);
      CHECK(f.threads.back() == 0);
      CHECK(f.message.find("the TMA store of thread 0 (warp 0, lane 0) reads it") !=
            std::string::npos);
    }
  }

  TEST_CASE("the writers' fence before the barrier or the reader's after it suffices") {
    for (const char* sched : kSchedules) {
      for (bool writers : {true, false}) {
        INFO(sched << (writers ? ": writers fence" : ": thread 0 fences after the barrier"));
        TensorMap t = store_inputs();
        ThreadRunResult r = run_source(tma_store_source(writers, !writers), t, sched);
        CHECK(r.report.findings.empty());
        for (int64_t i = 0; i < 32 * 32; ++i) {
          CHECK(t.at("B").at(i) == 2.0 * (static_cast<double>(i % 13) - 6.0));
        }
      }
    }
  }
}

TEST_SUITE("hopper findings: shared atomics before the async proxy") {
  TEST_CASE("bug_atomic_proxy_fence: atomics read by a TMA store with no proxy fence") {
    // The TMA store reads all 32 x 32 = 1024 elements of s; each was last updated by a shared
    // atomic after the threads' fence: 1024 unfenced reads. The first, s[0, 0], is thread 0's
    // (i = 0, tx = 0), and thread 0 issues the store.
    CorpusRun r = run_corpus("bug_atomic_proxy_fence", false);
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kProxyFence);
    CHECK(f.buffer == "s");
    CHECK(f.element == "[0, 0]");
    CHECK(f.count == 1024);
    CHECK(f.threads == std::vector<int>{0, 0});
    CHECK(r.site(f, 0).statement.find("T.atom_add(s[") == 0);
    CHECK(r.site(f, 1).statement.find("T.tma_store_2d(B[0, 0], s[0, 0]") == 0);
    CHECK(f.message.find("missing fence.proxy.async on shared s[0, 0] in block (0,): thread 0 "
                         "(warp 0, lane 0) updates it atomically by ") == 0);
    CHECK(f.message.find("the TMA store of thread 0 (warp 0, lane 0) reads it") !=
          std::string::npos);
    // The simulated TMA store reads the cells as they are: B is right here.
    CHECK(r.matches_reference);
  }

  TEST_CASE("the unfenced atomics are found under every schedule and the fixed twin is clean") {
    check_schedules("bug_atomic_proxy_fence", FindingKind::kProxyFence);
  }

  TEST_CASE("a plain store after the atomic is the write the fence rules see") {
    // The broken kernel with each thread storing its elements again (plain, fenced by the
    // threads before the barrier) after its atomics: the store replaces the atomic as the last
    // generic write, and its fence covers it, so nothing is reported.
    const Example* e = find_example("bug_atomic_proxy_fence");
    Kernel k = e->build(make_params(*e, {{"fixed", "false"}}));
    std::string text = print_kernel(k);
    const std::string atomic_line = "T.atom_add(s[i * 4 + tx // 32, tx % 32], 1.0)\n";
    const size_t at = text.find(atomic_line);
    REQUIRE(at != std::string::npos);
    const size_t end = at + atomic_line.size();
    text.insert(end,
                "            s[i * 4 + tx // 32, tx % 32] = A[i * 4 + tx // 32, tx % 32] * "
                "2.0 + 1.0\n        T.fence_proxy_async()\n");
    INFO(text);
    TensorMap t = make_tensors(k, {}, {"B"}, 1);
    ThreadRunResult r = run_source(text, t, "in-order");
    CHECK(r.report.findings.empty());
  }
}

TEST_SUITE("hopper findings: TMA store global writes") {
  TEST_CASE("bug_tma_store_overlap: two blocks' TMA stores write the same rows") {
    // Block 0 stores rows 0..31, block 1 rows 16..47: rows 16..31 x 32 columns = 512 elements
    // written by both, with different values (2 A[16 + i] and 2 A[32 + i]).
    CorpusRun r = run_corpus("bug_tma_store_overlap", false);
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kWriteConflict);
    CHECK(f.buffer == "B");
    CHECK(f.element == "[16, 0]");
    CHECK(f.count == 512);
    CHECK(f.threads == std::vector<int>{0, 0});
    CHECK(f.blocks == std::vector<std::vector<int64_t>>{{0}, {1}});
    CHECK(r.site(f, 0).access == "tma_store_2d dst");
    CHECK(r.site(f, 1).access == "tma_store_2d dst");
    CHECK(f.message.find("write conflict on global B[16, 0]: thread 0 of block (1,) writes it by "
                         "tma_store_2d dst of B") == 0);
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("the overlapping TMA stores are found under every schedule and the twin is clean") {
    check_schedules("bug_tma_store_overlap", FindingKind::kWriteConflict);
  }

  TEST_CASE("bug_tma_store_read_early: reading what a TMA store writes before its wait") {
    // All 128 threads read their 8 elements of B (all 1024) before thread 0's wait, which comes
    // after the barrier that follows the reads.
    CorpusRun r = run_corpus("bug_tma_store_read_early", false);
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kAsyncRace);
    CHECK(f.buffer == "B");
    CHECK(f.element == "[0, 0]");
    CHECK(f.count == 1024);
    CHECK(f.threads == std::vector<int>{0, 0});
    CHECK(r.site(f, 0).access == "tma_store_2d dst");
    CHECK(r.site(f, 1).access == "load");
    CHECK(f.message.find("TMA store race on global B[0, 0] in block (0,): thread 0 (warp 0, "
                         "lane 0) reads it by load of B") == 0);
    CHECK(f.message.find("T.tma_store_wait(0)") != std::string::npos);
  }

  TEST_CASE("the early read is found under every schedule and the fixed twin is clean") {
    check_schedules("bug_tma_store_read_early", FindingKind::kAsyncRace);
  }

  TEST_CASE("a thread's read after the store's wait needs a barrier: a race, not a TMA race") {
    // The fixed twin without its barrier: thread 0 waits (the writes land as its stores), then
    // every thread reads B in the same barrier interval. In-order, warp 0 runs first: its
    // threads 1..31 read the 8 rows 4 i of their columns after thread 0's writes landed (31 x 8
    // = 248 read-after-write races; thread 0's own reads are ordered), and warps 1..3 read the
    // other 768 elements likewise: 1016.
    Params p = make_params(*find_example("bug_tma_store_read_early"), {{"fixed", "true"}});
    Kernel k = find_example("bug_tma_store_read_early")->build(p);
    std::string text = print_kernel(k);
    const std::string sync =
        "        T.sync_threads()\n        for i in T.serial(8):\n            C[";
    const size_t at = text.find(sync);
    REQUIRE(at != std::string::npos);
    text.erase(at, std::string("        T.sync_threads()\n").size());
    TensorMap t = make_tensors(k, {}, {"B", "C"}, 1);
    ThreadRunResult r = run_source(text, t, "in-order");
    REQUIRE(r.report.findings.size() == 1);
    const sim::Finding& f = r.report.findings[0];
    CHECK(f.kind == FindingKind::kRace);
    CHECK(f.buffer == "B");
    CHECK(f.count == 1016);
    CHECK(r.report.sites.at(f.sites.at(0)).access == "tma_store_2d dst");
  }
}

namespace {

/// Each of two blocks stores its tile of 2 A to B with TMA, waits, and TMA-loads a tile of B
/// back into C: the other block's rows (`other`), or its own.
std::string reload_source(bool other) {
  const std::string rows = other ? "(1 - bx) * 32:(2 - bx) * 32" : "bx * 32:(bx + 1) * 32";
  return "import tilelang.language as T\n"
         "\n"
         "\n"
         "def tma_reload():\n"
         "    @T.prim_func\n"
         "    def main(A: T.Tensor((64, 32), \"float32\"), B: T.Tensor((64, 32), \"float32\"), "
         "C: T.Tensor((64, 32), \"float32\")):\n"
         "        with T.Kernel(2, threads=128) as bx:\n"
         "            s = T.alloc_shared((32, 32), \"float32\")\n"
         "            t = T.alloc_shared((32, 32), \"float32\")\n"
         "            bar = T.alloc_barrier([128])\n"
         "            tx = T.get_thread_binding()\n"
         "            for i in T.serial(8):\n"
         "                s[i * 4 + tx // 32, tx % 32] = A[bx * 32 + i * 4 + tx // 32, tx % 32] * "
         "2.0\n"
         "            T.fence_proxy_async()\n"
         "            T.sync_threads()\n"
         "            if tx == 0:\n"
         "                T.tma_store_2d(B[bx * 32, 0], s[0, 0], 32, 32, 0)\n"
         "                T.tma_store_arrive()\n"
         "            T.tma_store_wait(0)\n"
         "            T.sync_threads()\n"
         "            T.tma_copy(B[" +
         rows +
         ", 0:32], t, barrier=bar[0])\n"
         "            T.barrier_arrive(bar[0])\n"
         "            T.barrier_wait(bar[0], 0)\n"
         "            for i in T.serial(8):\n"
         "                C[bx * 32 + i * 4 + tx // 32, tx % 32] = t[i * 4 + tx // 32, tx % 32]\n"
         "\n"
         "    return main\n";
}

}  // namespace

TEST_SUITE("hopper findings: TMA loads of what TMA stores write") {
  TEST_CASE("a TMA load of rows another block's TMA store writes is a race across blocks") {
    for (const char* sched : kSchedules) {
      INFO(sched);
      HostTensor a(DataType::f32(), {64, 32});
      for (int64_t i = 0; i < 64 * 32; ++i) a.set(i, static_cast<double>(i % 7));
      TensorMap t = {{"A", a},
                     {"B", HostTensor(DataType::f32(), {64, 32})},
                     {"C", HostTensor(DataType::f32(), {64, 32})}};
      ThreadRunResult r = run_source(reload_source(true), t, sched);
      // Each block's load reads the 1024 elements the other block's store writes: one race per
      // order (a read after the other's write, a write after the other's read), 2048 in all.
      int64_t total = 0;
      bool load_named = false;
      for (const sim::Finding& f : r.report.findings) {
        CHECK(f.kind == FindingKind::kRace);
        CHECK(f.buffer == "B");
        total += f.count;
        load_named |= f.message.find("by tma_load_2d src of B") != std::string::npos;
      }
      CHECK(total == 2048);
      CHECK(load_named);
      TensorMap own = {{"A", a},
                       {"B", HostTensor(DataType::f32(), {64, 32})},
                       {"C", HostTensor(DataType::f32(), {64, 32})}};
      ThreadRunResult clean = run_source(reload_source(false), own, sched);
      CHECK(clean.report.findings.empty());
      for (int64_t i = 0; i < 64 * 32; ++i) CHECK(own.at("C").at(i) == 2.0 * a.at(i));
    }
  }
}
