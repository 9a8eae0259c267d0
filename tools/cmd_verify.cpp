// `tessel verify KERNEL [--target T]`: lowers the kernel and proves what docs/verify.md lists —
// completeness, capacity, layouts, fragments, loop partitions, register definitions, shared-memory
// accesses — one line per check with its time; exit 1 when a check fails or is undecided.
#include <cstdio>

#include "core/passes.h"
#include "core/target.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"
#include "tools/kernel_views.h"
#include "verify/kernel_proofs.h"

namespace tessel::cli {

namespace {

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%8.1f ms", ms);
  return buf;
}

void print_report(std::ostream& out, const std::string& kernel, const std::string& target,
                  const KernelProofs& proofs) {
  out << "verify " << kernel << " (lowered for " << target << ")\n";
  for (const KernelCheck& c : proofs.checks) {
    std::string verdict = c.result == "proved"   ? "proved"
                          : c.result == "failed" ? "FAILED"
                                                 : "UNDECIDED";
    verdict.resize(9, ' ');
    out << verdict << " " << ms_text(c.ms) << "  " << c.what << "\n";
    if (c.counterexample) out << std::string(22, ' ') << *c.counterexample << "\n";
  }
  out << proofs.checks.size() << (proofs.checks.size() == 1 ? " check: " : " checks: ")
      << proofs.count("proved") << " proved, " << proofs.count("failed") << " failed, "
      << proofs.count("undecided") << " undecided (";
  char total[32];
  std::snprintf(total, sizeof total, "%.1f ms", proofs.total_ms());
  out << total << ")\n";
}

}  // namespace

void add_verify_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "verify", "prove every layout, fragment and shared-memory access of the lowered kernel (Z3)");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  static std::string kernel_name, target = "sm80";
  static unsigned timeout_ms = 60000;
  static bool no_ws = false;
  // Fresh values for every App: an earlier in-process run (tests) must not leave its options.
  kernel_name.clear(), target = "sm80", timeout_ms = 60000, no_ws = false;
  sub->add_option("KERNEL", kernel_name, "built-in kernel name or path to a .py kernel file")
      ->required();
  sub->add_option("--target", target, target_names())
      ->check(CLI::IsMember(target_name_list(false)))
      ->default_val("sm80");
  sub->add_option("--timeout-ms", timeout_ms, "limit of one Z3 query (undecided past it)")
      ->default_val(60000)
      ->check(positive());
  sub->add_flag("--no-warp-specialize", no_ws,
                "sm90: keep the sm80 software pipeline (cp.async multi-buffering) instead of "
                "warp-specialising T.Pipelined loops");
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(kernel_name, ctx.defines, ctx.kernel_choice);
    Kernel kernel = k.example->build(k.params);
    KernelProofs proofs = verify_kernel(kernel, find_target(target), {timeout_ms, !no_ws});
    ctx.exit_code = proofs.all_proved() ? kOk : kKernelWrong;
    if (ctx.json) {
      emit_json(ctx, verify_json(kernel, target, proofs));
      return;
    }
    print_report(*ctx.out, kernel->name, target, proofs);
  });
}

}  // namespace tessel::cli
