// The preset table: the paper's benchmark shapes (seed paper, Appendix A, Tables 2-4; MLA) as
// named -D values of the built-in kernels. Add a workload's presets as rows here.
#include "examples/presets.h"

#include "examples/registry.h"

namespace tessel {

namespace {

const std::vector<std::string> kGemms = {"gemm", "gemm_transpose_b", "gemm_rs"};

/// GEMM M0-M7: (M, N, K) of the paper's Table 2.
Preset gemm(const char* name, const char* m, const char* n, const char* k) {
  return {kGemms, name, "paper Table 2 (GEMM)", {{"M", m}, {"N", n}, {"K", k}}};
}

/// FlashAttention FA0-FA4 of the paper's Table 3: batch 1 (folded into heads), 32 heads,
/// head_dim 128.
Preset attention(const char* name, const char* seq_len, const char* causal) {
  return {{"flash_attention"},
          name,
          "paper Table 3 (FlashAttention, batch 1)",
          {{"heads", "32"}, {"seq_len", seq_len}, {"dim", "128"}, {"is_causal", causal}}};
}

/// The dequantising GEMMs (Fig. 17's and the low-bit family of examples/dequant_family.cpp)
/// take the GEMM shapes M0-M7; the GEMVs the paper's V0-V7 (m = 1; n, k).
const std::vector<std::string> kDequantGemms = {"dequant_gemm",      "dequant_gemm_uint4",
                                                "dequant_gemm_int4", "dequant_gemm_nf4",
                                                "dequant_gemm_fp4",  "dequant_gemm_int2"};
const std::vector<std::string> kDequantGemvs = {"dequant_gemv_uint4", "dequant_gemv_int4",
                                                "dequant_gemv_nf4", "dequant_gemv_fp4",
                                                "dequant_gemv_int2"};

/// M0-M7 for the dequantising GEMMs: (M, N, K) of the paper's Table 2.
Preset dequant_gemm(const char* name, const char* m, const char* n, const char* k) {
  return {kDequantGemms, name, "paper Table 2 (GEMM shapes)", {{"M", m}, {"N", n}, {"K", k}}};
}

/// V0-V7: (n, k) of the paper's Table 2, m = 1.
Preset dequant_gemv(const char* name, const char* n, const char* k) {
  return {kDequantGemvs, name, "paper Table 2 (GEMV, m = 1)", {{"N", n}, {"K", k}}};
}

/// Mamba-2 chunk_scan CC0-CC5 and chunk_state CT0-CT5 of the paper's Table 4: 64 heads,
/// head_dim 64, d_state 128, (batch, seq_len) as given. Table 4 does not give the chunk size
/// or the number of B/C groups; chunk_size 256 and ngroups 1 are the defaults of TileLang's
/// examples/linear_attention (example_mamba_chunk_scan.py / example_mamba_chunk_state.py).
Preset ssd(const char* kernel, const char* name, const char* batch, const char* seq_len) {
  return {{kernel},
          name,
          "paper Table 4 (linear attention; chunk_size, ngroups: TileLang's example)",
          {{"batch", batch},
           {"nheads", "64"},
           {"ngroups", "1"},
           {"seq_len", seq_len},
           {"chunk_size", "256"},
           {"headdim", "64"},
           {"dstate", "128"}}};
}

/// MLA decode MLA0-MLA5: DeepSeek's shape as the paper's Sec. 5 and Fig. 14 use it (128 query
/// heads, one latent KV head of dim 512 plus RoPE dim 64, batch 64: the paper's Fig. 14 and the
/// batch-64 figure of TileLang's examples/deepseek_mla/README.md). The paper's text does not
/// state the KV lengths (Fig. 14 is a plot); these are the sweep of TileLang's
/// examples/deepseek_mla/benchmark_mla.py (seqlen 1024, 2048, 4096, 8192, 16384, 32768).
Preset mla(const char* name, const char* seqlen_kv) {
  return {{"mla_decode", "mla_decode_split"},
          name,
          "paper Fig. 14 (MLA; KV lengths: TileLang's benchmark_mla.py)",
          {{"batch", "64"},
           {"heads", "128"},
           {"seqlen_kv", seqlen_kv},
           {"dim", "512"},
           {"pe_dim", "64"}}};
}

}  // namespace

std::string Preset::values_text() const {
  std::string text;
  for (const auto& [name, value] : values) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      gemm("M0", "4096", "1024", "8192"),
      gemm("M1", "4096", "8192", "8192"),
      gemm("M2", "4096", "28672", "8192"),
      gemm("M3", "4096", "8192", "28672"),
      gemm("M4", "8192", "1024", "8192"),
      gemm("M5", "8192", "8192", "8192"),
      gemm("M6", "8192", "28672", "8192"),
      gemm("M7", "8192", "8192", "28672"),
      attention("FA0", "512", "1"),
      attention("FA1", "512", "0"),
      attention("FA2", "1024", "1"),
      attention("FA3", "1024", "0"),
      attention("FA4", "4096", "1"),
      dequant_gemm("M0", "4096", "1024", "8192"),
      dequant_gemm("M1", "4096", "8192", "8192"),
      dequant_gemm("M2", "4096", "28672", "8192"),
      dequant_gemm("M3", "4096", "8192", "28672"),
      dequant_gemm("M4", "8192", "1024", "8192"),
      dequant_gemm("M5", "8192", "8192", "8192"),
      dequant_gemm("M6", "8192", "28672", "8192"),
      dequant_gemm("M7", "8192", "8192", "28672"),
      dequant_gemv("V0", "16384", "16384"),
      dequant_gemv("V1", "43008", "14336"),
      dequant_gemv("V2", "14336", "14336"),
      dequant_gemv("V3", "57344", "14336"),
      dequant_gemv("V4", "14336", "57344"),
      dequant_gemv("V5", "9216", "9216"),
      dequant_gemv("V6", "36864", "9216"),
      dequant_gemv("V7", "9216", "36864"),
      ssd("chunk_scan", "CC0", "1", "1024"),
      ssd("chunk_scan", "CC1", "1", "2048"),
      ssd("chunk_scan", "CC2", "1", "8192"),
      ssd("chunk_scan", "CC3", "64", "1024"),
      ssd("chunk_scan", "CC4", "64", "2048"),
      ssd("chunk_scan", "CC5", "64", "8192"),
      ssd("chunk_state", "CT0", "1", "1024"),
      ssd("chunk_state", "CT1", "1", "2048"),
      ssd("chunk_state", "CT2", "1", "8192"),
      ssd("chunk_state", "CT3", "64", "1024"),
      ssd("chunk_state", "CT4", "64", "2048"),
      ssd("chunk_state", "CT5", "64", "8192"),
      mla("MLA0", "1024"),
      mla("MLA1", "2048"),
      mla("MLA2", "4096"),
      mla("MLA3", "8192"),
      mla("MLA4", "16384"),
      mla("MLA5", "32768"),
  };
  return table;
}

std::vector<const Preset*> presets_of(const std::string& kernel) {
  std::vector<const Preset*> found;
  for (const Preset& p : presets()) {
    for (const std::string& k : p.kernels) {
      if (k == kernel) found.push_back(&p);
    }
  }
  return found;
}

std::map<std::string, std::string> apply_preset(const std::string& kernel,
                                                std::map<std::string, std::string> defines) {
  auto it = defines.find("preset");
  if (it == defines.end()) return defines;
  const std::string name = it->second;
  defines.erase(it);
  std::vector<const Preset*> mine = presets_of(kernel);
  for (const Preset* p : mine) {
    if (p->name != name) continue;
    for (const auto& [param, value] : p->values) defines.emplace(param, value);  // -D wins
    return defines;
  }
  std::string known;
  for (const Preset* p : mine) known += (known.empty() ? "" : ", ") + p->name;
  throw ParamError("kernel '" + kernel + "' has no preset '" + name + "'; " +
                   (known.empty() ? std::string("it has no presets") : "its presets are " + known) +
                   " ('tessel list' shows their values)");
}

}  // namespace tessel
