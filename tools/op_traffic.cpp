// Memory traffic per tile operator.
#include "tools/op_traffic.h"

#include <cstdio>
#include <map>

#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel::cli {

std::vector<OperatorTraffic> traffic_per_operator(const Kernel& tile_kernel,
                                                  const sim::SimReport& report) {
  std::vector<OperatorTraffic> rows;
  std::map<std::string, size_t> by_loc;
  auto add = [&](const SourceLoc& loc, std::string name) {
    if (!loc.known() || by_loc.count(loc.str())) return;
    by_loc[loc.str()] = rows.size();
    rows.push_back({std::move(name), {}});
  };
  for_each_stmt(tile_kernel->body, [&](const Stmt& s) {
    if (const auto* call = s.as<TileOpCallNode>()) add(call->op->loc(), call->op->describe());
    if (const auto* f = s.as<ForNode>(); f && f->for_kind == ForKind::kParallel) {
      add(f->loc, "T.Parallel at " + f->loc.str());
    }
  });
  OperatorTraffic other{"other statements", {}};
  for (size_t s = 0; s < report.sites.size(); ++s) {
    auto it = by_loc.find(report.sites[s].loc);
    (it == by_loc.end() ? other : rows[it->second]).counters += report.per_site[s];
  }
  if (other.counters.shared_requests + other.counters.global_requests) rows.push_back(other);
  std::vector<OperatorTraffic> used;
  for (OperatorTraffic& r : rows) {
    if (r.counters.shared_requests + r.counters.global_requests) used.push_back(std::move(r));
  }
  return used;
}

std::string traffic_table(const std::vector<OperatorTraffic>& rows) {
  std::string out = "memory traffic per tile operator:\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-60s %9s %10s %9s %9s %9s %9s\n", "operator", "requests",
                "wavefronts", "ideal", "conflicts", "sectors", "ideal");
  out += line;
  for (const OperatorTraffic& r : rows) {
    const sim::Counters& c = r.counters;
    std::string name = r.op.size() > 60 ? r.op.substr(0, 57) + "..." : r.op;
    std::snprintf(line, sizeof line, "  %-60s %9lld %10lld %9lld %9lld %9lld %9lld\n",
                  name.c_str(), static_cast<long long>(c.shared_requests + c.global_requests),
                  static_cast<long long>(c.wavefronts), static_cast<long long>(c.ideal_wavefronts),
                  static_cast<long long>(c.bank_conflicts), static_cast<long long>(c.sectors),
                  static_cast<long long>(c.ideal_sectors));
    out += line;
  }
  return out;
}

}  // namespace tessel::cli
