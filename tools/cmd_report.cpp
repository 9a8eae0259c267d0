// `tessel report KERNEL -o report.html`: runs the kernel at thread level with the hardware
// models, lowers and verifies it, and writes one self-contained HTML page (tools/report.h).
// Exit 1 when the page shows a problem (a finding, a wrong value, a failed proof), like run.
#include <fstream>

#include "core/bank_rules.h"
#include "tools/cli.h"
#include "tools/report.h"

namespace tessel::cli {

namespace {

struct ReportArgs {
  std::string kernel;
  std::string output;
  std::string target = "sm80";
  uint64_t seed = 0;
  int workers = 0;
  std::string schedule = "in-order";
  bool no_verify = false;
  unsigned timeout_ms = 60000;
};

void run_report(const ReportArgs& a, Context& ctx) {
  if (!Schedule::parse(a.schedule)) {
    throw UsageError("unknown --schedule '" + a.schedule +
                     "'; use in-order, reverse or random:SEED");
  }
  ResolvedKernel k = resolve_kernel(a.kernel, ctx.defines, ctx.kernel_choice);
  ReportOptions options;
  options.run.target = a.target;
  options.run.seed = a.seed;
  options.run.workers = a.workers;
  options.run.schedule = a.schedule;
  options.verify = !a.no_verify;
  options.timeout_ms = a.timeout_ms;
  ReportData data = collect_report(k, a.kernel, options);
  std::string html = report_html(data);
  std::ofstream file(a.output, std::ios::binary);
  if (!file) throw UsageError("cannot write the report to '" + a.output + "'");
  file << html;
  file.close();
  if (!file) throw UsageError("could not write all of the report to '" + a.output + "'");
  ctx.exit_code = data.passed() ? kOk : kKernelWrong;
  const sim::SimReport* sim = data.run && data.run->thread ? &data.run->thread->report : nullptr;
  if (ctx.json) {
    nlohmann::json j = {{"kernel", data.tile_kernel->name},
                        {"report", a.output},
                        {"passed", data.passed()},
                        {"bytes", html.size()}};
    if (sim) {
      j["findings"] = sim->findings.size();
      j["bank_conflicts"] = sim->total.bank_conflicts;
    }
    if (data.proofs) j["proofs_failed"] = data.proofs->count("failed");
    emit_json(ctx, j);
    return;
  }
  *ctx.out << "report of " << data.tile_kernel->name << " written to " << a.output << " ("
           << html.size() / 1024 << " KiB)";
  if (sim) {
    *ctx.out << ": " << sim->findings.size() << " finding(s), " << sim->total.bank_conflicts
             << " bank conflicts";
  }
  if (data.proofs) *ctx.out << ", " << data.proofs->count("failed") << " failed proof(s)";
  *ctx.out << "\n" << (data.passed() ? "PASSED" : "FAILED") << "\n";
}

}  // namespace

void add_report_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand(
      "report",
      "write one HTML page about a kernel: its source annotated with the thread level's traffic, "
      "bank conflicts and findings, bank maps, the lowered IR, layouts and proofs");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  sub->add_option("KERNEL", a->kernel, "built-in kernel name or path to a .py kernel file")
      ->required();
  sub->add_option("-o,--output", a->output, "the HTML file to write")->required();
  sub->add_option("--target", a->target, "sm80, sm90, gfx90a or gfx942")
      ->check(CLI::IsMember({"sm80", "sm90", "gfx90a", "gfx942"}))
      ->default_val("sm80");
  sub->add_option("--seed", a->seed, "seed of the random inputs")->default_val(0);
  sub->add_option("--workers", a->workers, "CPU threads running blocks (0: all cores)")
      ->default_val(0);
  sub->add_option("--schedule", a->schedule,
                  "order of warps between barriers and of blocks: in-order, reverse or random:SEED")
      ->default_val("in-order");
  sub->add_flag("--no-verify", a->no_verify, "leave out the Z3 proofs");
  sub->add_option("--timeout-ms", a->timeout_ms, "limit of one Z3 query (undecided past it)")
      ->default_val(60000)
      ->check(positive());
  sub->callback([a, &ctx] { run_report(*a, ctx); });
}

}  // namespace tessel::cli
