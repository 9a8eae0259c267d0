// Presets (`-D preset=NAME`): the paper's shapes set a kernel's parameters, `tessel list` shows
// them, explicit -D values win, and unknown presets are usage errors listing the known ones.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "examples/presets.h"
#include "examples/registry.h"
#include "tests/cli_runner.h"
#include "tools/kernel_source.h"

using namespace tessel;

TEST_SUITE("presets") {
  TEST_CASE("a GEMM preset sets M, N and K to the paper's Table 2 shape") {
    // Table 2 of the paper (Appendix A): M3 is m=4096, n=8192, k=28672.
    cli::ResolvedKernel k = cli::resolve_kernel("gemm", {"preset=M3"});
    CHECK(k.params.integer("M") == 4096);
    CHECK(k.params.integer("N") == 8192);
    CHECK(k.params.integer("K") == 28672);
    CHECK(k.params.integer("block_M") == 128);  // untouched parameters keep their defaults
  }

  TEST_CASE("a FlashAttention preset sets heads, sequence, head dim and causality of Table 3") {
    // Table 3: FA4 is batch 1, 32 heads, seq_len 4096, head_dim 128, causal.
    cli::ResolvedKernel k = cli::resolve_kernel("flash_attention", {"preset=FA4"});
    CHECK(k.params.integer("heads") == 32);
    CHECK(k.params.integer("seq_len") == 4096);
    CHECK(k.params.integer("dim") == 128);
    CHECK(k.params.boolean("is_causal"));
    cli::ResolvedKernel fa1 = cli::resolve_kernel("flash_attention", {"preset=FA1"});
    CHECK(fa1.params.integer("seq_len") == 512);
    CHECK_FALSE(fa1.params.boolean("is_causal"));
  }

  TEST_CASE("the dequantising GEMV and GEMM take the paper's V and M shapes") {
    // Table 2: V1 is n=43008, k=14336 (m=1); M2 is m=4096, n=28672, k=8192.
    cli::ResolvedKernel v = cli::resolve_kernel("dequant_gemv_int4", {"preset=V1"});
    CHECK(v.params.integer("N") == 43008);
    CHECK(v.params.integer("K") == 14336);
    cli::ResolvedKernel m = cli::resolve_kernel("dequant_gemm_nf4", {"preset=M2"});
    CHECK(m.params.integer("M") == 4096);
    CHECK(m.params.integer("N") == 28672);
    CHECK(m.params.integer("K") == 8192);
  }

  TEST_CASE("the Mamba-2 presets set Table 4's shape with chunk size 256 and one group") {
    // Table 4: CC4 and CT4 are batch 64, 64 heads, seq_len 2048, head_dim 64, d_state 128;
    // chunk_size 256 and ngroups 1 from TileLang's examples/linear_attention.
    for (const auto& [kernel, preset] :
         {std::pair{"chunk_scan", "preset=CC4"}, std::pair{"chunk_state", "preset=CT4"}}) {
      cli::ResolvedKernel k = cli::resolve_kernel(kernel, {preset});
      CHECK(k.params.integer("batch") == 64);
      CHECK(k.params.integer("nheads") == 64);
      CHECK(k.params.integer("seq_len") == 2048);
      CHECK(k.params.integer("headdim") == 64);
      CHECK(k.params.integer("dstate") == 128);
      CHECK(k.params.integer("chunk_size") == 256);
      CHECK(k.params.integer("ngroups") == 1);
    }
    // CC2 / CT0: batch 1 at seq_len 8192 / 1024.
    CHECK(cli::resolve_kernel("chunk_scan", {"preset=CC2"}).params.integer("seq_len") == 8192);
    CHECK(cli::resolve_kernel("chunk_scan", {"preset=CC2"}).params.integer("batch") == 1);
    CHECK(cli::resolve_kernel("chunk_state", {"preset=CT0"}).params.integer("seq_len") == 1024);
    // The scan's presets are not the state's: CT names belong to chunk_state only.
    CliResult r = run_tessel({"print", "chunk_scan", "-D", "preset=CT0"});
    CHECK(r.status == 2);
    CHECK(r.err.find("its presets are CC0, CC1, CC2, CC3, CC4, CC5") != std::string::npos);
  }

  TEST_CASE("the MLA presets set DeepSeek's 128 heads, dim 512 + 64, batch 64, and the KV length") {
    // 128 query heads, one latent KV head (built in), dim 512, RoPE 64, batch 64; MLA3's KV
    // length is the fourth of the sweep 1024, 2048, 4096, 8192, ... : 8192.
    for (const char* kernel : {"mla_decode", "mla_decode_split"}) {
      cli::ResolvedKernel k = cli::resolve_kernel(kernel, {"preset=MLA3"});
      CHECK(k.params.integer("batch") == 64);
      CHECK(k.params.integer("heads") == 128);
      CHECK(k.params.integer("dim") == 512);
      CHECK(k.params.integer("pe_dim") == 64);
      CHECK(k.params.integer("seqlen_kv") == 8192);
      CHECK(k.params.integer("block_H") == 16);  // tiles keep their defaults
    }
    CHECK(cli::resolve_kernel("mla_decode", {"preset=MLA5"}).params.integer("seqlen_kv") == 32768);
  }

  TEST_CASE("an explicit -D value wins over the preset's") {
    cli::ResolvedKernel k = cli::resolve_kernel("gemm", {"preset=M0", "K=64"});
    CHECK(k.params.integer("M") == 4096);
    CHECK(k.params.integer("K") == 64);
  }

  TEST_CASE("an unknown preset is a usage error listing the kernel's presets") {
    CliResult r = run_tessel({"print", "gemm", "-D", "preset=M9"});
    CHECK(r.status == 2);
    CHECK(r.err.find("kernel 'gemm' has no preset 'M9'; its presets are M0, M1, M2, M3, M4, M5, "
                     "M6, M7") != std::string::npos);
  }

  TEST_CASE("a preset for a kernel without presets is a usage error saying so") {
    CliResult r = run_tessel({"print", "softmax", "-D", "preset=M0"});
    CHECK(r.status == 2);
    CHECK(r.err.find("kernel 'softmax' has no preset 'M0'; it has no presets") !=
          std::string::npos);
  }

  TEST_CASE("list shows each kernel's presets with their values, in text and JSON") {
    CliResult r = run_tessel({"list"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("    M6: M=8192 N=28672 K=8192  (paper Table 2 (GEMM))") != std::string::npos);
    CHECK(r.out.find("    FA2: heads=32 seq_len=1024 dim=128 is_causal=1") != std::string::npos);
    CHECK(r.out.find("    CC3: batch=64 nheads=64 ngroups=1 seq_len=1024 chunk_size=256 headdim=64 "
                     "dstate=128") != std::string::npos);
    CHECK(r.out.find("    CT5: batch=64 nheads=64 ngroups=1 seq_len=8192 chunk_size=256") !=
          std::string::npos);
    CHECK(r.out.find("    MLA0: batch=64 heads=128 seqlen_kv=1024 dim=512 pe_dim=64") !=
          std::string::npos);
    CliResult j = run_tessel({"list", "--json"});
    REQUIRE(j.status == 0);
    auto doc = nlohmann::json::parse(j.out);
    bool seen = false;
    for (const auto& k : doc["kernels"]) {
      if (k["name"] != "flash_attention") continue;
      seen = true;
      REQUIRE(k["presets"].size() == 5);  // FA0..FA4
      CHECK(k["presets"][0]["name"] == "FA0");
      CHECK(k["presets"][0]["values"]["seq_len"] == "512");
    }
    CHECK(seen);
  }

  TEST_CASE("a kernel file has the presets of the built-in its reference line names") {
    const std::string dir = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/";
    cli::ResolvedKernel k = cli::resolve_kernel(dir + "gemm.py", {"preset=M4"});
    CHECK(k.params.integer("M") == 8192);  // M4: m=8192, n=1024, k=8192
    CHECK(k.params.integer("N") == 1024);
    CliResult other = run_tessel({"print", dir + "softmax.py", "-D", "preset=M4"});
    CHECK(other.status == 2);
    CHECK(other.err.find("kernel 'softmax' has no preset 'M4'") != std::string::npos);
    // The same file without its reference line has no presets.
    std::ifstream in(dir + "gemm.py");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("# tessel: reference=gemm"), 24, "#");
    CHECK_THROWS_WITH_AS(cli::resolve_kernel_text(text, "<source>", {"preset=M4"}),
                         doctest::Contains("kernel file '<source>' has no presets"),
                         cli::UsageError);
  }

  TEST_CASE("every preset names only parameters of each of its kernels") {
    for (const Preset& p : presets()) {
      for (const std::string& name : p.kernels) {
        const Example* e = find_example(name);
        REQUIRE_MESSAGE(e != nullptr, "preset " << p.name << " names kernel " << name);
        for (const auto& [param, value] : p.values) {
          bool known = false;
          for (const ParamSpec& s : e->params) known = known || s.name == param;
          CHECK_MESSAGE(known, "preset " << p.name << " of " << name << " sets " << param);
        }
      }
    }
  }

}  // TEST_SUITE
