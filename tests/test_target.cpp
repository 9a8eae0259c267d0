// The target registry (core/target.h): names, aliases, the vendor defaults, the device-compiler
// names and which target a CUDA device runs. Expected values are the ones the CUDA and AMD
// documents give (REFERENCE.md), not read back from the registry.
#include <doctest/doctest.h>

#include "core/error.h"
#include "core/instruction_family.h"
#include "core/target.h"

using namespace tessel;

TEST_SUITE("target registry") {
  TEST_CASE("names select targets; aliases only where asked for") {
    CHECK(lookup_target("sm90", false) == &find_target("sm90"));
    CHECK(lookup_target("cuda", false) == nullptr);
    REQUIRE(lookup_target("cuda", true) != nullptr);
    CHECK(lookup_target("cuda", true)->name == "sm80");
    CHECK(lookup_target("nvidia", true)->name == "sm80");
    CHECK(lookup_target("hip", true)->name == "gfx942");
    CHECK(lookup_target("amd", true)->name == "gfx942");
    CHECK(lookup_target("sm7", true) == nullptr);
    CHECK_THROWS_AS(find_target("cuda"), UserError);
    CHECK(target_name_list(false) == std::vector<std::string>{"sm80", "sm90", "gfx90a", "gfx942"});
    CHECK(target_name_list(true).size() == 8);  // 4 names + cuda, nvidia, hip, amd
    CHECK(target_aliases() == "cuda, nvidia, hip, amd");
  }

  TEST_CASE("each target carries its warp, bank model and compiler name") {
    // NVIDIA: warps of 32 and 32 banks x 4 B; AMD CDNA: wave64, 32 banks x 4 B (bank_rules.h).
    for (const char* n : {"sm80", "sm90"}) {
      const Target& t = find_target(n);
      CHECK(t.warp_size == 32);
      CHECK(t.banks.vendor == BankVendor::kNvidia);
      CHECK(t.banks.warp_size == 32);
    }
    for (const char* n : {"gfx90a", "gfx942"}) {
      const Target& t = find_target(n);
      CHECK(t.warp_size == 64);
      CHECK(t.banks.vendor == BankVendor::kAmd);
      CHECK(t.banks.warp_size == 64);
      CHECK(t.arch == n);  // clang --offload-arch takes the gfx name itself
    }
    CHECK(find_target("sm80").arch == "sm_80");
    CHECK(find_target("sm90").arch == "sm_90a");  // wgmma and setmaxnreg need sm_90a
    CHECK(default_target(true).name == "sm80");
    CHECK(default_target(false).name == "gfx942");
  }

  TEST_CASE("a CUDA device runs the newest NVIDIA target of its major version") {
    // CUDA binary compatibility: a cubin for X.y runs on X.z with z >= y only.
    CHECK(nvidia_target_for(75) == nullptr);  // Turing: older than every target
    CHECK(nvidia_target_for(80)->name == "sm80");
    CHECK(nvidia_target_for(86)->name == "sm80");
    CHECK(nvidia_target_for(89)->name == "sm80");
    CHECK(nvidia_target_for(90)->name == "sm90");
    CHECK(nvidia_target_for(100) == nullptr);  // Blackwell loads no sm_80 / sm_90a cubin
  }

  TEST_CASE("targets list their instruction families") {
    // A100/H100: mma.sync, ldmatrix, cp.async (PTX ISA, sm_80+); CDNA2/3: MFMA; all: atomics.
    for (const char* n : {"sm80", "sm90"}) {
      const Target& t = find_target(n);
      CHECK(t.has(mma_sync_family()));
      CHECK(t.has(ldmatrix_family()));
      CHECK(t.has(cp_async_family()));
      CHECK_FALSE(t.has(mfma_family()));
      CHECK(t.has(atomic_family()));
    }
    // mbarrier try_wait / expect_tx, fence.proxy.async and setmaxnreg are sm_90 (PTX ISA 8.0).
    CHECK(find_target("sm90").has(mbarrier_family()));
    CHECK_FALSE(find_target("sm80").has(mbarrier_family()));
    for (const char* n : {"gfx90a", "gfx942"}) {
      const Target& t = find_target(n);
      CHECK(t.has(mfma_family()));
      CHECK_FALSE(t.has(mma_sync_family()));
      CHECK_FALSE(t.has(ldmatrix_family()));
      CHECK_FALSE(t.has(cp_async_family()));
      CHECK(t.has(atomic_family()));
    }
  }

}  // TEST_SUITE
