// The Hopper findings of the bug corpus (examples/bugs/bugs_hopper.cpp, sm90): each broken kernel
// reports its finding with the register or buffer, the threads and the sites under several
// schedules, and its fixed twin is clean and right.
#include <doctest/doctest.h>

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
}
