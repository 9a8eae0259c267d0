// `tessel lower KERNEL [--target T] [--print-after-all]`: the thread-level IR the lowering
// passes produce for a target (and, with --print-after-all, the IR after every pass), with a
// note for each T.gemm that a target with wgmma lowers another way, and why, and the lowering's
// own notes (a pipeline not warp-specialised, a producer copying without TMA).
#include "core/error.h"
#include "core/gemm_partition.h"
#include "core/instruction_family.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "core/thread_group.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

namespace {

/// "T.gemm at gemm.py:24:17: mma instead of wgmma: threads=64 is not a whole number of
/// warpgroups (128)" for each gemm of `kernel` that `target`, which has wgmma, does not lower to
/// it.
std::vector<std::string> wgmma_notes(const Kernel& kernel, const Target& target) {
  std::vector<std::string> notes;
  if (!target.has(wgmma_family())) return notes;
  for_each_stmt_with_threads(kernel, [&](const Stmt& s, int threads) {
    const auto* call = s.as<TileOpCallNode>();
    const auto* gemm = call ? dynamic_cast<const GemmOp*>(call->op.get()) : nullptr;
    if (!gemm) return;
    try {
      GemmPlan p = plan_gemm(*gemm, kernel->name, target, threads);
      if (p.path == GemmPath::kWgmma) return;
      notes.push_back(gemm->describe() + ": " + gemm_path_name(p.path) + " instead of wgmma: " +
                      (p.why_not_wgmma.empty() ? p.why_simt : p.why_not_wgmma));
    } catch (const UserError&) {
      // lower_kernel reports it
    }
  });
  return notes;
}

}  // namespace

void add_lower_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("lower", "lower a kernel to thread-level IR for a target");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  static std::string kernel_name, target = "sm80";
  static bool after_all = false, no_ws = false;
  // Fresh values for every App: an earlier in-process run (tests) must not leave its options.
  kernel_name.clear(), target = "sm80", after_all = false, no_ws = false;
  sub->add_option("KERNEL", kernel_name, "built-in kernel name or path to a .py kernel file")
      ->required();
  sub->add_option("--target", target, target_names())
      ->check(CLI::IsMember(target_name_list(false)))
      ->default_val("sm80");
  sub->add_flag("--print-after-all", after_all, "print the IR after every pass");
  sub->add_flag("--no-warp-specialize", no_ws,
                "sm90: keep the sm80 software pipeline (cp.async multi-buffering) instead of "
                "warp-specialising T.Pipelined loops");
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(kernel_name, ctx.defines, ctx.kernel_choice);
    Kernel kernel = k.example->build(k.params);
    LowerOptions options;
    options.print_after_all = after_all;
    options.warp_specialize = !no_ws;
    LoweredKernel lowered = lower_kernel(kernel, find_target(target), options);
    std::vector<std::string> notes = wgmma_notes(kernel, find_target(target));
    notes.insert(notes.end(), lowered.notes.begin(), lowered.notes.end());
    if (ctx.json) {
      nlohmann::json passes = nlohmann::json::array();
      for (const PassSnapshot& p : lowered.snapshots)
        passes.push_back({{"pass", p.pass}, {"ir", p.text}});
      emit_json(ctx, {{"kernel", kernel->name},
                      {"target", target},
                      {"layouts", lowered.layouts.to_string()},
                      {"ir", print_kernel(lowered.kernel)},
                      {"passes", passes},
                      {"notes", notes}});
      return;
    }
    for (const std::string& n : notes) *ctx.out << "# note: " << n << "\n";
    for (const PassSnapshot& p : lowered.snapshots) {
      *ctx.out << "# ---- after " << p.pass << " ----\n" << p.text << "\n";
    }
    if (!after_all) *ctx.out << lowered.layouts.to_string() << print_kernel(lowered.kernel);
  });
}

}  // namespace tessel::cli
