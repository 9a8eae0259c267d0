// `tessel run KERNEL --level tile`: runs on the CPU with random inputs and checks the results
// against the kernel's independent reference.
#include <iomanip>
#include <sstream>

#include "examples/run_example.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

namespace {

struct RunOptions {
  std::string kernel;
  std::string level = "tile";
  uint64_t seed = 0;
  int workers = 0;
};

std::string format_error(double x) {
  std::ostringstream os;
  os << std::setprecision(3) << std::scientific << x;
  return os.str();
}

void report_text(std::ostream& out, const ExampleRun& run, const RunOptions& o) {
  out << "kernel " << run.kernel->name << " at " << o.level << " level, seed " << o.seed << ": "
      << run.stats.blocks << " blocks × " << run.kernel->threads << " threads in "
      << std::fixed << std::setprecision(3) << run.stats.seconds << " s\n";
  for (const OutputCheck& c : run.outputs) {
    const Comparison& cmp = c.comparison;
    out << "  " << c.name << ": " << (cmp.passed ? "matches" : "DIFFERS FROM")
        << " the reference (max abs err " << format_error(cmp.max_abs_err) << ", max rel err "
        << format_error(cmp.max_rel_err) << "; tolerance atol " << format_error(c.tolerance.atol)
        << " rtol " << format_error(c.tolerance.rtol) << ")\n";
    if (!cmp.passed) {
      out << "    " << cmp.mismatches << " element(s) differ; first at " << c.name
          << index_string(c.shape, cmp.first_mismatch) << ": got " << cmp.first_actual
          << ", expected " << cmp.first_expected << "\n";
    }
  }
  out << (run.passed ? "PASSED" : "FAILED") << "\n";
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("run", "run a kernel on the CPU and check it against its reference");
  add_common_options(*sub, ctx);
  static RunOptions o;
  sub->add_option("KERNEL", o.kernel, "built-in kernel name")->required();
  sub->add_option("--level", o.level, "interpreter level")
      ->check(CLI::IsMember({"tile"}))
      ->default_val("tile");
  sub->add_option("--seed", o.seed, "seed of the random inputs")->default_val(0);
  sub->add_option("--workers", o.workers, "CPU threads running blocks (0: all cores)")
      ->default_val(0);
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(o.kernel, ctx.defines);
    ExampleRun run = run_example_tile(*k.example, k.params, o.seed, TileRunOptions{o.workers});
    ctx.exit_code = run.passed ? kOk : kKernelWrong;
    if (!ctx.json) {
      report_text(*ctx.out, run, o);
      return;
    }
    nlohmann::json outputs = nlohmann::json::array();
    for (const OutputCheck& c : run.outputs) {
      outputs.push_back({{"name", c.name},
                         {"passed", c.comparison.passed},
                         {"max_abs_err", c.comparison.max_abs_err},
                         {"max_rel_err", c.comparison.max_rel_err},
                         {"mismatches", c.comparison.mismatches}});
    }
    emit_json(ctx, {{"kernel", run.kernel->name},
                    {"level", o.level},
                    {"seed", o.seed},
                    {"passed", run.passed},
                    {"max_abs_err", run.max_abs_err},
                    {"max_rel_err", run.max_rel_err},
                    {"blocks", run.stats.blocks},
                    {"threads", run.kernel->threads},
                    {"seconds", run.stats.seconds},
                    {"outputs", outputs}});
  });
}

}  // namespace tessel::cli
