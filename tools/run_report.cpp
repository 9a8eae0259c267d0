// Text and JSON reports of a kernel run.
#include "tools/run_report.h"

#include <iomanip>
#include <sstream>

#include "tools/op_traffic.h"

namespace tessel::cli {

namespace {

using nlohmann::json;

std::string format_error(double x) {
  std::ostringstream os;
  os << std::setprecision(3) << std::scientific << x;
  return os.str();
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// One line per check against `what` ("the reference", "the expected array"), with the first
/// differing element of a failed one.
void report_checks(std::ostream& out, const std::vector<OutputCheck>& checks,
                   const std::string& what) {
  for (const OutputCheck& c : checks) {
    const Comparison& cmp = c.comparison;
    out << "  " << c.name << ": " << (cmp.passed ? "matches " : "DIFFERS FROM ") << what
        << (c.sampled ? " ON A SAMPLE" : "") << " (max abs err " << format_error(cmp.max_abs_err)
        << ", max rel err " << format_error(cmp.max_rel_err) << "; tolerance atol "
        << format_error(c.tolerance.atol) << " rtol " << format_error(c.tolerance.rtol) << ")\n";
    if (c.sampled) {
      const int64_t total = element_count(c.shape);
      out << "    sampled reference: " << *c.sampled << " of " << total << " elements checked ("
          << c.sample_note << "); the other " << total - *c.sampled
          << " are NOT checked against the reference (--reference full checks every one)\n";
    }
    if (!cmp.passed) {
      out << "    " << cmp.mismatches << " element(s) differ; first at " << c.name
          << index_string(c.shape, cmp.first_mismatch) << ": got " << cmp.first_actual
          << ", expected " << cmp.first_expected << "\n";
    }
  }
}

json checks_json(const std::vector<OutputCheck>& checks) {
  json list = json::array();
  for (const OutputCheck& c : checks) {
    const int64_t total = element_count(c.shape);
    json entry = {{"name", c.name},
                  {"passed", c.comparison.passed},
                  {"max_abs_err", c.comparison.max_abs_err},
                  {"max_rel_err", c.comparison.max_rel_err},
                  {"mismatches", c.comparison.mismatches},
                  {"atol", c.tolerance.atol},
                  {"rtol", c.tolerance.rtol},
                  {"elements", total},
                  {"checked", c.sampled.value_or(total)},
                  {"sampled", c.sampled.has_value()},
                  {"sample", c.sampled ? json(c.sample_note) : json(nullptr)},
                  {"note", c.note.empty() ? json(nullptr) : json(c.note)}};
    if (!c.comparison.passed) {
      json index = json::array();
      int64_t flat = c.comparison.first_mismatch;
      std::vector<int64_t> idx(c.shape.size());
      for (size_t d = c.shape.size(); d-- > 0;) {
        idx[d] = c.shape[d] ? flat % c.shape[d] : 0;
        flat = c.shape[d] ? flat / c.shape[d] : 0;
      }
      entry["first_mismatch"] = {{"index", idx},
                                 {"actual", c.comparison.first_actual},
                                 {"expected", c.comparison.first_expected}};
    }
    list.push_back(entry);
  }
  return list;
}

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
    if (f.kind == sim::FindingKind::kMisaligned) {
      findings.back()["address"] = f.address;
      findings.back()["width"] = f.width;
    }
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
json per_tile_op_json(const KernelRun& run) {
  json rows = json::array();
  if (!run.lowered) return rows;
  for (const OperatorTraffic& r : traffic_per_operator(run.kernel, run.thread->report)) {
    json row = counters_json(r.counters);
    row["op"] = r.op;
    rows.push_back(row);
  }
  return rows;
}

std::string coords_text(const BlockSample& s, int64_t id) {
  std::vector<int64_t> c;
  for (int64_t g : s.grid) {
    c.push_back(id % g);
    id /= g;
  }
  return sim::block_string(c);
}

/// "sampled: 3 of 16 blocks simulated at thread level (--blocks edges): (0, 0), ...; the other
/// 13 ran at tile level".
std::string sample_text(const BlockSample& s, const std::string& launch = "") {
  constexpr size_t kShown = 16;
  std::ostringstream out;
  out << "  sampled" << (launch.empty() ? "" : ", " + launch) << ": " << s.simulated.size()
      << " of " << s.total << " blocks simulated at thread level (--blocks " << s.spec << "):";
  for (size_t i = 0; i < s.simulated.size() && i < kShown; ++i)
    out << (i ? ", " : " ") << coords_text(s, s.simulated[i]);
  if (s.simulated.size() > kShown) out << ", ... (" << s.simulated.size() - kShown << " more)";
  out << "; the other " << s.total - static_cast<int64_t>(s.simulated.size())
      << " ran at tile level\n";
  return out.str();
}

/// The simulated blocks' counters scaled to the grid, saying so.
std::string scaled_text(const BlockSample& s, const sim::Counters& measured,
                        const std::string& launch = "") {
  sim::Counters c = s.scaled(measured);
  std::ostringstream out;
  if (!launch.empty()) out << launch << ": ";
  out << "counters above are measured over the " << s.simulated.size()
      << " simulated blocks; SCALED to the whole grid (x " << s.total << "/" << s.simulated.size()
      << " = " << std::setprecision(4) << s.scale() << "): shared requests " << c.shared_requests
      << ", wavefronts " << c.wavefronts << " (ideal " << c.ideal_wavefronts << ", conflicts "
      << c.bank_conflicts << "); global requests " << c.global_requests << ", sectors " << c.sectors
      << " (ideal " << c.ideal_sectors << ")\n";
  return out.str();
}

json sample_json(const BlockSample& s, const sim::Counters& measured) {
  json coords = json::array();
  for (int64_t id : s.simulated) {
    std::vector<int64_t> c;
    for (int64_t g : s.grid) {
      c.push_back(id % g);
      id /= g;
    }
    coords.push_back(c);
  }
  json scaled = counters_json(s.scaled(measured));
  scaled["scale"] = s.scale();
  scaled["note"] = "estimates: the simulated blocks' counters x total/simulated";
  return {{"spec", s.spec},
          {"grid", s.grid},
          {"total", s.total},
          {"simulated_count", s.simulated.size()},
          {"simulated", s.simulated},
          {"simulated_coords", coords},
          {"tile_level_blocks", s.total - static_cast<int64_t>(s.simulated.size())},
          {"scale", s.scale()},
          {"scaled", scaled}};
}

/// {"inputs": {"wall": s, "cpu": s}, ...}: where a run's time went.
json phases_json(const PhaseSeconds& p) {
  json j;
  for (const auto& [name, t] : {std::pair{"inputs", p.inputs},
                                {"reference", p.reference},
                                {"tile_rest", p.tile_rest},
                                {"run", p.run},
                                {"tile_check", p.tile_check},
                                {"checks", p.checks}}) {
    j[name] = {{"wall", t.wall}, {"cpu", t.cpu}};
  }
  return j;
}

double lane_ops_per_second(const ThreadRunResult& t) {
  return t.seconds > 0 ? static_cast<double>(t.lane_ops) / t.seconds : 0;
}

}  // namespace

std::string run_text(const KernelRun& run) {
  std::ostringstream out;
  const RunRequest& req = run.request;
  const bool thread = run.thread.has_value();
  if (thread) {
    const ThreadRunResult& t = *run.thread;
    out << "kernel " << run.kernel->name << " at thread level (target " << req.target << ", warp "
        << t.warp_size << ", schedule " << Schedule::parse(req.schedule)->name() << "), seed "
        << req.seed << ": " << t.blocks << " blocks × " << t.threads << " threads in " << std::fixed
        << std::setprecision(3) << t.seconds << " s (" << t.lane_ops << " lane-ops, "
        << std::setprecision(1) << std::scientific << lane_ops_per_second(t) << "/s)\n"
        << std::defaultfloat << std::setprecision(6);  // the values below in full
    if (run.sample) out << sample_text(*run.sample);
    for (const LaunchSample& l : run.launch_samples) out << sample_text(l.sample, l.launch);
  } else {
    out << "kernel " << run.kernel->name << " at tile level, seed " << req.seed << ": "
        << run.blocks << " blocks × " << run.threads << " threads in " << std::fixed
        << std::setprecision(3) << run.seconds << " s\n"
        << std::defaultfloat << std::setprecision(6);
  }
  report_checks(out, run.vs_reference, "the reference");
  report_checks(out, run.vs_expected, "the expected array");
  if (!run.has_reference && run.vs_expected.empty()) {
    out << (thread ? "  no reference: values are compared with the tile level only\n"
                   : "  no reference: the kernel ran, its values are not checked "
                     "(--expect NAME=file.npy checks them)\n");
  }
  if (thread) {
    if (run.tile_ran) {
      bool same = std::all_of(run.vs_tile.begin(), run.vs_tile.end(),
                              [](const OutputCheck& c) { return c.comparison.passed; });
      out << "  tile level: " << (same ? "same results" : "DIFFERENT results") << "\n";
    } else {
      out << "  tile level: " << run.tile_note << "\n";
    }
    for (const OutputCheck& c : run.vs_tile) {
      if (c.comparison.passed) continue;
      if (!c.note.empty()) {
        out << "    " << c.name << ": " << c.note << "\n";
        continue;
      }
      out << "    " << c.name << ": " << c.comparison.mismatches << " element(s) differ; first at "
          << c.name << index_string(c.shape, c.comparison.first_mismatch) << ": thread level "
          << c.comparison.first_actual << ", tile level " << c.comparison.first_expected << "\n";
    }
    if (run.lowered) out << traffic_table(traffic_per_operator(run.kernel, run.thread->report));
    out << run.thread->report.text();
    if (run.sample) out << scaled_text(*run.sample, run.thread->report.total);
    for (const LaunchSample& l : run.launch_samples)
      out << scaled_text(l.sample, l.measured, l.launch);
  }
  out << (run.passed ? "PASSED" : "FAILED") << "\n";
  return out.str();
}

json run_json(const KernelRun& run) {
  const RunRequest& req = run.request;
  json j = {{"kernel", run.kernel->name},
            {"level", req.level},
            {"seed", req.seed},
            {"passed", run.passed},
            {"max_abs_err", run.max_abs_err},
            {"max_rel_err", run.max_rel_err},
            {"blocks", run.blocks},
            {"threads", run.threads},
            {"seconds", run.seconds},
            {"phase_seconds", phases_json(run.phases)},
            {"outputs", checks_json(run.vs_reference)},
            {"expected", checks_json(run.vs_expected)}};
  if (!run.thread) return j;
  const ThreadRunResult& t = *run.thread;
  bool same = std::all_of(run.vs_tile.begin(), run.vs_tile.end(),
                          [](const OutputCheck& c) { return c.comparison.passed; });
  json tile = {{"ran", run.tile_ran},
               {"note", run.tile_note.empty() ? json(nullptr) : json(run.tile_note)},
               {"matches", run.tile_ran ? json(same) : json(nullptr)}};
  if (run.tile_ran || !run.vs_tile.empty()) tile["tensors"] = checks_json(run.vs_tile);
  j["target"] = req.target;
  j["schedule"] = Schedule::parse(req.schedule)->name();
  j["warp_size"] = t.warp_size;
  j["workers"] = t.workers;
  j["lane_ops"] = t.lane_ops;
  j["lane_ops_per_second"] = lane_ops_per_second(t);
  j["tile"] = tile;
  j["sim"] = sim_json(t.report);
  j["sim"]["measured_blocks"] = t.simulated;
  j["sampled"] = run.sample ? sample_json(*run.sample, t.report.total) : json(nullptr);
  if (!run.launch_samples.empty()) {  // a kernel of several launches: each launch's sample
    json launches = json::array();
    for (const LaunchSample& l : run.launch_samples) {
      json one = sample_json(l.sample, l.measured);
      one["launch"] = l.launch;
      launches.push_back(one);
    }
    j["sampled"] = {{"spec", req.blocks}, {"launches", launches}};
  }
  j["per_tile_op"] = per_tile_op_json(run);
  return j;
}

}  // namespace tessel::cli
