// `tessel run KERNEL [--level tile|thread]`: runs on the CPU with random inputs (or the user's
// arrays, tools/data_options.h) and checks the results against the kernel's reference and the
// user's expected arrays. At thread level it also compares with the tile level on the same inputs
// and prints the simulator's report. The work is run_kernel's; this file maps flags to it.
#include <optional>

#include "core/target.h"
#include "tools/cli.h"
#include "tools/data_options.h"
#include "tools/kernel_run.h"
#include "tools/kernel_source.h"
#include "tools/progress_line.h"
#include "tools/run_device.h"
#include "tools/run_report.h"

namespace tessel::cli {

namespace {

struct RunOptions {
  std::string kernel;
  std::string level = "tile";
  uint64_t seed = 0;
  int workers = 0;
  std::string schedule = "in-order";
  std::string target = "sm80";
  std::string device = "cpu";
  int repeats = 5;
  int64_t max_steps = 0;
  double timeout = 0;
  bool progress = false;
  std::string blocks;
  std::string reference = "auto";
  bool no_warp_specialize = false;
};

/// Options that do nothing in the mode the command line picks are refused, not ignored.
void check_options(const CLI::App& sub, const RunOptions& o) {
  auto given = [&](const char* name) { return sub.count(name) > 0; };
  if (o.device == "cuda") {
    for (const char* name : {"--level", "--schedule", "--workers", "--max-steps", "--timeout",
                             "--progress", "--blocks", "--reference", "--no-warp-specialize"}) {
      if (given(name)) {
        throw UsageError(std::string(name) +
                         " applies to runs on the CPU; leave it out with --device cuda");
      }
    }
    return;
  }
  if (given("--repeats")) throw UsageError("--repeats counts timed runs of --device cuda only");
  if (o.level == "tile") {
    for (const char* name : {"--target", "--schedule", "--blocks", "--no-warp-specialize"}) {
      if (given(name)) {
        throw UsageError(std::string(name) +
                         " picks how --level thread simulates the GPU; the tile level has no "
                         "target, schedule or block sample: add --level thread or leave it out");
      }
    }
  }
}

/// Runs on the CPU through run_kernel and prints its report.
void run_cpu(Context& ctx, const ResolvedKernel& k, const RunOptions& o, const DataOptions& data) {
  RunRequest request;
  request.level = o.level;
  request.seed = o.seed;
  request.workers = o.workers;
  request.schedule = o.schedule;
  request.target = o.target;
  request.warp_specialize = !o.no_warp_specialize;
  request.blocks = o.blocks;
  request.reference = o.reference;
  load_data(data, request);
  RunControl control(o.max_steps, o.timeout);
  request.control = &control;
  KernelRun run;
  {
    std::optional<ProgressLine> progress;
    if (o.progress || ctx.err_is_terminal) progress.emplace(*ctx.err, control);
    run = run_kernel(k, request);
  }
  std::vector<std::string> saved = save_outputs(data, run);
  ctx.exit_code = run.passed ? kOk : kKernelWrong;
  if (ctx.json) {
    nlohmann::json j = run_json(run);
    if (!data.save_dir.empty()) j["saved"] = saved;
    emit_json(ctx, j);
    return;
  }
  std::string text = run_text(run);
  if (!saved.empty()) {  // before the verdict line
    std::string list;
    for (const std::string& p : saved) list += (list.empty() ? "" : ", ") + p;
    text.insert(text.rfind(run.passed ? "PASSED" : "FAILED"), "saved " + list + "\n");
  }
  *ctx.out << text;
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  CLI::App* sub =
      app.add_subcommand("run", "run a kernel on the CPU and check it against its reference");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  static RunOptions o;
  o = RunOptions{};  // an earlier in-process run (tests) must not leave its options
  auto data = std::make_shared<DataOptions>();  // fresh for every App (in-process runs)
  sub->add_option("KERNEL", o.kernel, "built-in kernel name or path to a .py kernel file")
      ->required();
  sub->add_option("--level", o.level,
                  "interpreter level: tile (reference semantics) or thread "
                  "(every thread, with the hardware models)")
      ->check(CLI::IsMember({"tile", "thread"}))
      ->default_val("tile");
  sub->add_option("--seed", o.seed, "seed of the random inputs (0 or more)")
      ->check(non_negative())
      ->default_val(0);
  sub->add_option("--workers", o.workers, "CPU threads running blocks (0: all cores; at most 1024)")
      ->check(CLI::Range(0, 1024))
      ->default_val(0);
  sub->add_option("--max-steps", o.max_steps,
                  "stop (exit 1) after this many steps: statements executed by a block (tile "
                  "level) or a warp (thread level); 0: no limit")
      ->check(non_negative())
      ->default_val(0);
  sub->add_option("--timeout", o.timeout, "stop (exit 1) after this many seconds; 0: no limit")
      ->check(non_negative())
      ->default_val(0);
  sub->add_flag("--progress", o.progress,
                "a progress line on stderr (blocks done, rate, time left); the default when "
                "stderr is a terminal");
  sub->add_option("--schedule", o.schedule,
                  "thread level: order of warps between barriers and of blocks: in-order, "
                  "reverse or random:SEED")
      ->default_val("in-order");
  sub->add_option("--blocks", o.blocks,
                  "thread level: simulate only these blocks, the others run at tile level (the "
                  "output stays complete); comma-separated all, edges, first, last, random:N "
                  "(drawn with --seed), linear ids (0,3,7) or grid coordinates ((1,2))")
      ->default_val("");
  sub->add_option("--reference", o.reference,
                  "what the built-in reference computes: full (every output element), sampled "
                  "(with --blocks: the simulated blocks' outputs in full, seeded rows and columns "
                  "of the others; GEMM examples) or auto (sampled when the full reference would "
                  "cost more than 4e11 multiply-adds)")
      ->check(CLI::IsMember({"auto", "full", "sampled"}))
      ->default_val("auto");
  sub->add_option("--target", o.target,
                  "thread level: the GPU whose warps and banks are simulated: " + target_names() +
                      "; --device cuda: the NVIDIA target to lower for (default: the GPU's own; "
                      "sm80 code runs on a 9.x GPU too)")
      ->default_val("sm80");
  sub->add_flag("--no-warp-specialize", o.no_warp_specialize,
                "thread level, sm90: keep the sm80 software pipeline (cp.async multi-buffering) "
                "instead of warp-specialising T.Pipelined loops");
  sub->add_option("--device", o.device,
                  "cpu (the interpreters) or cuda (lowered, compiled with nvcc and run on the "
                  "machine's GPU, compared with the tile level)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_val("cpu");
  sub->add_option("--repeats", o.repeats,
                  "--device cuda: timed runs (after one warm-up), 1 to 10000")
      ->check(CLI::Range(1, 10000))
      ->default_val(5);
  add_data_options(*sub, *data);
  sub->callback([&ctx, data, sub] {
    check_options(*sub, o);
    ResolvedKernel k = resolve_kernel(o.kernel, ctx.defines, ctx.kernel_choice);
    if (o.device == "cuda" && data->given()) {
      throw UsageError(
          "--input/--expect/--init/--save run on the CPU only; leave out --device cuda");
    }
    if (o.device == "cuda")
      run_on_device(ctx, k, o.seed, o.repeats, sub->count("--target") ? o.target : "");
    else
      run_cpu(ctx, k, o, *data);
  });
}

}  // namespace tessel::cli
