// `tessel run KERNEL [--level tile|thread]`: runs on the CPU with random inputs and checks the
// results against the kernel's independent reference. At thread level it also runs the tile
// level on the same inputs, compares the two, and prints the simulator's report (memory traffic
// per instruction and findings).
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"
#include "tools/op_traffic.h"
#include "tools/run_device.h"

namespace tessel::cli {

namespace {

using nlohmann::json;

struct RunOptions {
  std::string kernel;
  std::string level = "tile";
  uint64_t seed = 0;
  int workers = 0;
  std::string schedule = "in-order";
  std::string target = "sm80";
  std::string device = "cpu";
  int repeats = 5;
};

std::string format_error(double x) {
  std::ostringstream os;
  os << std::setprecision(3) << std::scientific << x;
  return os.str();
}

void report_outputs(std::ostream& out, const std::vector<OutputCheck>& outputs) {
  for (const OutputCheck& c : outputs) {
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
}

json outputs_json(const std::vector<OutputCheck>& outputs) {
  json list = json::array();
  for (const OutputCheck& c : outputs) {
    list.push_back({{"name", c.name},
                    {"passed", c.comparison.passed},
                    {"max_abs_err", c.comparison.max_abs_err},
                    {"max_rel_err", c.comparison.max_rel_err},
                    {"mismatches", c.comparison.mismatches}});
  }
  return list;
}

void run_tile(Context& ctx, const ResolvedKernel& k, const RunOptions& o) {
  ExampleRun run = run_example_tile(*k.example, k.params, o.seed, TileRunOptions{o.workers});
  ctx.exit_code = run.passed ? kOk : kKernelWrong;
  if (!ctx.json) {
    std::ostream& out = *ctx.out;
    out << "kernel " << run.kernel->name << " at tile level, seed " << o.seed << ": "
        << run.stats.blocks << " blocks × " << run.kernel->threads << " threads in " << std::fixed
        << std::setprecision(3) << run.stats.seconds << " s\n";
    report_outputs(out, run.outputs);
    if (!k.has_reference) out << "  no reference: the kernel ran, its values are not checked\n";
    out << (run.passed ? "PASSED" : "FAILED") << "\n";
    return;
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
                  {"outputs", outputs_json(run.outputs)}});
}

// ---- Thread level ------------------------------------------------------------------------------

json counters_json(const sim::Counters& c) {
  return {{"shared",
           {{"requests", c.shared_requests},
            {"wavefronts", c.wavefronts},
            {"ideal_wavefronts", c.ideal_wavefronts},
            {"bank_conflicts", c.bank_conflicts}}},
          {"global",
           {{"requests", c.global_requests},
            {"sectors", c.sectors},
            {"ideal_sectors", c.ideal_sectors},
            {"lines", c.lines}}}};
}

json site_json(const sim::Site& s) {
  return {{"access", s.access},
          {"buffer", s.buffer},
          {"statement", s.statement},
          {"loc", s.loc.empty() ? json(nullptr) : json(s.loc)},
          {"loc_is_enclosing", !s.within.empty()}};
}

json sim_json(const sim::SimReport& r) {
  json j = counters_json(r.total);
  j["warp_size"] = r.warp_size;
  j["barriers"] = r.barriers;
  j["async"] = {{"bytes", r.async_bytes}, {"max_in_flight", r.max_async_in_flight}};
  json findings = json::array();
  for (const sim::Finding& f : r.findings) {
    json sites = json::array();
    for (int s : f.sites)
      sites.push_back(s >= 0 && s < static_cast<int>(r.sites.size()) ? site_json(r.sites[s])
                                                                     : json(nullptr));
    json blocks = json::array();
    for (const auto& b : f.blocks) blocks.push_back(b);
    findings.push_back({{"kind", sim::finding_kind_name(f.kind)},
                        {"benign", f.benign},
                        {"buffer", f.buffer.empty() ? json(nullptr) : json(f.buffer)},
                        {"element", f.element.empty() ? json(nullptr) : json(f.element)},
                        {"message", f.message},
                        {"threads", f.threads},
                        {"blocks", blocks},
                        {"sites", sites},
                        {"count", f.count}});
  }
  j["findings"] = findings;
  json per_op = json::array();
  for (size_t s = 0; s < r.sites.size(); ++s) {
    const sim::Counters& c = r.per_site[s];
    if (c.shared_requests + c.global_requests == 0) continue;
    json entry = counters_json(c);
    entry["op"] = r.sites[s].describe();
    entry["site"] = site_json(r.sites[s]);
    per_op.push_back(entry);
  }
  j["per_op"] = per_op;
  return j;
}

/// Traffic per tile operator of a lowered kernel (empty for thread-level kernels).
json per_tile_op_json(const Kernel& kernel, const sim::SimReport& report, bool lowered) {
  json rows = json::array();
  if (!lowered) return rows;
  for (const OperatorTraffic& r : traffic_per_operator(kernel, report)) {
    json row = counters_json(r.counters);
    row["op"] = r.op;
    rows.push_back(row);
  }
  return rows;
}

bool uses_intrinsics(const Kernel& kernel) {
  bool found = false;
  for_each_stmt(kernel->body,
                [&](const Stmt& s) { found = found || s.kind() == StmtKind::kIntrinsicCall; });
  return found;
}

std::vector<OutputCheck> compare_outputs(const TensorMap& actual, const TensorMap& expected,
                                         const std::vector<std::string>& names) {
  std::vector<OutputCheck> checks;
  for (const std::string& name : names) {
    const HostTensor& a = actual.at(name);
    OutputCheck check{name, {}, Tolerance::for_dtype(a.dtype()), a.shape()};
    check.comparison = compare(a, expected.at(name), check.tolerance);
    checks.push_back(std::move(check));
  }
  return checks;
}

void run_thread(Context& ctx, const ResolvedKernel& k, const RunOptions& o) {
  std::optional<Schedule> schedule = Schedule::parse(o.schedule);
  if (!schedule) {
    throw UsageError("--schedule " + o.schedule +
                     ": expected in-order, reverse or random:SEED "
                     "(e.g. random:7)");
  }
  if (!BankModel::for_target(o.target)) {
    throw UsageError("--target " + o.target + ": unknown target; use one of " +
                     BankModel::accepted_targets());
  }
  const Example& example = *k.example;
  Kernel kernel = example.build(k.params);
  std::map<std::string, int64_t> dims;
  if (example.dynamic_dims) dims = example.dynamic_dims(k.params);
  TensorMap tensors = make_tensors(kernel, dims, example.outputs, o.seed);
  TensorMap tile_tensors = tensors, expected = tensors;
  example.reference(k.params, expected);

  ThreadRunOptions options;
  options.target = o.target;
  options.schedule = *schedule;
  options.workers = o.workers;
  // Tile-level kernels are lowered for the target first; thread-level ones run as written.
  Kernel thread_kernel = kernel;
  const bool lowered = is_tile_level(kernel);
  if (lowered) {
    const Target* target = nullptr;
    for (const Target& t : all_targets()) {
      if (t.name == o.target) target = &t;
    }
    if (!target) {
      throw UsageError("--target " + o.target + ": tile-level kernels are lowered for one of " +
                       target_names());
    }
    thread_kernel = lower_kernel(kernel, *target).kernel;
  }
  ThreadRunResult thr = run_thread_level(thread_kernel, tensors, options);

  // The tile level on the same inputs (it does not execute intrinsics, so kernels that use them
  // are compared with the reference only).
  std::string tile_note;
  bool tile_ran = false;
  if (uses_intrinsics(kernel)) {  // written with intrinsics (lowered ones are fine)
    tile_note =
        "not run: the kernel calls instructions of the intrinsic table, which only the "
        "thread level executes";
  } else {
    try {
      run_tile_level(kernel, tile_tensors, TileRunOptions{o.workers});
      tile_ran = true;
    } catch (const UserError& e) {
      tile_note = std::string("failed: ") + e.what();
    }
  }
  std::vector<OutputCheck> vs_reference = compare_outputs(tensors, expected, example.outputs);
  std::vector<OutputCheck> vs_tile;
  if (tile_ran) {
    // Every tensor, not only the declared outputs: a kernel file may have no reference, and a
    // broken kernel may write where it should not.
    std::vector<std::string> all;
    for (const Buffer& b : kernel->params) all.push_back(b->name);
    vs_tile = compare_outputs(tensors, tile_tensors, all);
  }
  bool matches_reference = true, matches_tile = true;
  double max_abs = 0, max_rel = 0;
  for (const OutputCheck& c : vs_reference) {
    matches_reference &= c.comparison.passed;
    max_abs = std::max(max_abs, c.comparison.max_abs_err);
    max_rel = std::max(max_rel, c.comparison.max_rel_err);
  }
  for (const OutputCheck& c : vs_tile) matches_tile &= c.comparison.passed;
  const sim::SimReport& report = thr.report;
  bool passed = matches_reference && matches_tile && !report.has_errors();
  ctx.exit_code = passed ? kOk : kKernelWrong;
  double rate = thr.seconds > 0 ? static_cast<double>(thr.lane_ops) / thr.seconds : 0;

  if (ctx.json) {
    json tile = {{"ran", tile_ran},
                 {"note", tile_note.empty() ? json(nullptr) : json(tile_note)},
                 {"matches", tile_ran ? json(matches_tile) : json(nullptr)}};
    if (tile_ran) tile["tensors"] = outputs_json(vs_tile);
    emit_json(ctx, {{"kernel", kernel->name},
                    {"level", o.level},
                    {"target", o.target},
                    {"schedule", schedule->name()},
                    {"seed", o.seed},
                    {"passed", passed},
                    {"max_abs_err", max_abs},
                    {"max_rel_err", max_rel},
                    {"blocks", thr.blocks},
                    {"threads", thr.threads},
                    {"warp_size", thr.warp_size},
                    {"workers", thr.workers},
                    {"seconds", thr.seconds},
                    {"lane_ops", thr.lane_ops},
                    {"lane_ops_per_second", rate},
                    {"outputs", outputs_json(vs_reference)},
                    {"tile", tile},
                    {"sim", sim_json(report)},
                    {"per_tile_op", per_tile_op_json(kernel, report, lowered)}});
    return;
  }
  std::ostream& out = *ctx.out;
  out << "kernel " << kernel->name << " at thread level (target " << o.target << ", warp "
      << thr.warp_size << ", schedule " << schedule->name() << "), seed " << o.seed << ": "
      << thr.blocks << " blocks × " << thr.threads << " threads in " << std::fixed
      << std::setprecision(3) << thr.seconds << " s (" << thr.lane_ops << " lane-ops, "
      << std::setprecision(1) << std::scientific << rate << "/s)\n"
      << std::defaultfloat;
  report_outputs(out, vs_reference);
  if (!k.has_reference) out << "  no reference: values are compared with the tile level only\n";
  if (tile_ran) {
    out << "  tile level: " << (matches_tile ? "same results" : "DIFFERENT results") << "\n";
    for (const OutputCheck& c : vs_tile) {
      if (!c.comparison.passed) {
        out << "    " << c.name << ": " << c.comparison.mismatches
            << " element(s) differ; first at " << c.name
            << index_string(c.shape, c.comparison.first_mismatch) << ": thread level "
            << c.comparison.first_actual << ", tile level " << c.comparison.first_expected << "\n";
      }
    }
  } else {
    out << "  tile level: " << tile_note << "\n";
  }
  if (lowered) out << traffic_table(traffic_per_operator(kernel, report));
  out << report.text();
  out << (passed ? "PASSED" : "FAILED") << "\n";
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  CLI::App* sub =
      app.add_subcommand("run", "run a kernel on the CPU and check it against its reference");
  add_common_options(*sub, ctx);
  static RunOptions o;
  sub->add_option("KERNEL", o.kernel, "built-in kernel name or path to a .py kernel file")->required();
  sub->add_option("--level", o.level,
                  "interpreter level: tile (reference semantics) or thread "
                  "(every thread, with the hardware models)")
      ->check(CLI::IsMember({"tile", "thread"}))
      ->default_val("tile");
  sub->add_option("--seed", o.seed, "seed of the random inputs")->default_val(0);
  sub->add_option("--workers", o.workers, "CPU threads running blocks (0: all cores)")
      ->default_val(0);
  sub->add_option("--schedule", o.schedule,
                  "thread level: order of warps between barriers and of blocks: in-order, "
                  "reverse or random:SEED")
      ->default_val("in-order");
  sub->add_option("--target", o.target,
                  "thread level: the GPU whose warps and banks are simulated (sm80, sm90: warp 32; "
                  "gfx90a, gfx942: wave64)")
      ->default_val("sm80");
  sub->add_option("--device", o.device,
                  "cpu (the interpreters) or cuda (lowered, compiled with nvcc and run on the "
                  "machine's GPU, compared with the tile level)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_val("cpu");
  sub->add_option("--repeats", o.repeats, "--device cuda: timed runs (after one warm-up)")
      ->default_val(5);
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(o.kernel, ctx.defines);
    if (o.device == "cuda")
      run_on_device(ctx, k, o.seed, o.repeats);
    else if (o.level == "thread")
      run_thread(ctx, k, o);
    else
      run_tile(ctx, k, o);
  });
}

}  // namespace tessel::cli
