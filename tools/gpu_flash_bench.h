// The GPU FlashAttention benchmark (bench/bench_gpu_flash.sh, bench/bench_gpu_flash): the
// `flash_attention` example at the paper's FA0-FA4 on every code path the device runs (mma.sync;
// on compute capability 9.x also the sm90 path: wgmma, TMA producer, warp specialisation),
// beside a FlashAttention-3 baseline timed by bench/flash_baseline.py where it could be
// installed. The pure parts (presets, FLOPs, the baseline file, CSV columns) are unit-tested.
#pragma once

#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tessel::cli {

/// One FlashAttention problem (forward, fp16, head_dim `dim`).
struct FlashPreset {
  std::string name;  ///< "FA0" ... "FA4"
  int64_t batch = 1, heads = 0, seq_len = 0, dim = 0;
  bool causal = false;
};

/// FA0-FA4 from the presets table (examples/presets.cpp, the paper's Table 3).
std::vector<FlashPreset> flash_bench_presets();

/// 4 b h s^2 d (Q K^T and P V, 2 s^2 d each per head), halved when causal (only the lower
/// triangle of the scores is needed): the count FlashAttention's own benchmarks report.
double flash_flops(const FlashPreset& p);

/// One baseline row: which implementation, and its times in ms.
struct FlashBaseline {
  std::string impl;
  double median = 0, p20 = 0, p80 = 0;
};

/// The baseline file bench/flash_baseline.py writes: a header `preset,impl,ms_median,ms_p20,
/// ms_p80`, then one row per preset. nullopt with `why` set when it is malformed (names the line).
std::optional<std::map<std::string, FlashBaseline>> read_flash_baseline(std::istream& in,
                                                                        std::string* why);

/// The presets as lines for the baseline script: "FA0 1 32 512 128 1" (name, batch, heads,
/// seq_len, dim, causal).
std::string flash_presets_text();

/// The CSV header of bench/results/gpu_flash.csv (no newline).
extern const char* const kFlashBenchCsvHeader;

/// Runs the benchmark on the first CUDA device and appends one row per preset and path to
/// `csv_path`, with the baseline of `baseline` (empty: none; `baseline_note` says why). Without a
/// GPU it prints why to `out` and returns 0 having run nothing; 1 when a kernel was wrong.
int run_gpu_flash(const std::map<std::string, FlashBaseline>& baseline,
                  const std::string& baseline_note, const std::string& csv_path, std::ostream& out);

}  // namespace tessel::cli
