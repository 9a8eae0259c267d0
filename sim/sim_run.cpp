// Launch-wide simulator state and the merged report.
#include "sim/sim_run.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/block_sim.h"

namespace tessel::sim {

std::string block_string(const std::vector<int64_t>& index) {
  std::string s = "(";
  for (size_t d = 0; d < index.size(); ++d) s += (d ? ", " : "") + std::to_string(index[d]);
  return s + (index.size() == 1 ? ",)" : ")");
}

SimRun::SimRun(SimOptions options, std::vector<Site> sites)
    : options_(std::move(options)),
      sites_(std::move(sites)),
      shadow_(options_.shadow_limit_bytes),
      per_site_(sites_.size()) {}

int SimRun::add_global(BufferDesc desc) {
  int id = static_cast<int>(globals_.size());
  if (options_.detectors) shadow_.add_buffer(id, desc.size(), desc.name);
  globals_.push_back(std::move(desc));
  return id;
}

std::vector<int64_t> SimRun::block_index(uint32_t linear) const {
  if (grid_.empty()) return {static_cast<int64_t>(linear)};
  std::vector<int64_t> index(grid_.size());
  int64_t rest = linear;
  for (size_t d = 0; d < grid_.size(); ++d) {
    index[d] = rest % grid_[d];
    rest /= grid_[d];
  }
  return index;
}

void SimRun::wait_turn(int64_t turn) {
  std::unique_lock<std::mutex> guard(turn_lock_);
  turn_done_.wait(guard, [&] { return next_turn_ == turn; });
}

void SimRun::finish_turn(int64_t turn) {
  {
    std::lock_guard<std::mutex> guard(turn_lock_);
    finished_turns_.insert(turn);
    while (finished_turns_.count(next_turn_)) finished_turns_.erase(next_turn_++);
  }
  turn_done_.notify_all();
}

void SimRun::absorb(const BlockSim& block) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto& counters = block.counters();
  for (size_t s = 0; s < counters.size(); ++s) per_site_[s] += counters[s];
  if (options_.bank_samples) {
    if (worst_bank_.empty()) worst_bank_.resize(sites_.size());
    const std::vector<BankSample>& samples = block.bank_samples();
    for (size_t s = 0; s < samples.size(); ++s) {
      const BankSample& mine = worst_bank_[s];
      const BankSample& theirs = samples[s];
      if (theirs.max_degree > mine.max_degree ||
          (theirs.max_degree == mine.max_degree && theirs.max_degree > 0 &&
           theirs.block < mine.block)) {
        worst_bank_[s] = theirs;
      }
    }
  }
  if (!block.findings().empty()) block_findings_[block.block_linear()].merge(block.findings());
  ++blocks_;
  barriers_ += block.barrier_rounds();
  async_bytes_ += block.async_bytes();
  max_async_in_flight_ = std::max(max_async_in_flight_, block.max_async_in_flight());
}

SimReport SimRun::report() const {
  std::lock_guard<std::mutex> guard(lock_);
  SimReport r;
  r.warp_size = options_.banks.warp_size;
  r.sites = sites_;
  r.per_site = per_site_;
  r.worst_bank = worst_bank_;
  if (options_.bank_samples) r.worst_bank.resize(sites_.size());
  for (const Counters& c : per_site_) r.total += c;
  FindingLog merged;
  for (const auto& [block, log] : block_findings_) merged.merge(log);
  r.findings = merged.findings();
  r.blocks = blocks_;
  r.barriers = barriers_;
  r.async_bytes = async_bytes_;
  r.max_async_in_flight = max_async_in_flight_;
  return r;
}

bool SimReport::has_errors() const {
  for (const Finding& f : findings) {
    if (!f.benign) return true;
  }
  return false;
}

std::vector<const Finding*> SimReport::of_kind(FindingKind kind) const {
  std::vector<const Finding*> out;
  for (const Finding& f : findings) {
    if (f.kind == kind) out.push_back(&f);
  }
  return out;
}

std::string SimReport::text() const {
  std::ostringstream os;
  char line[512];
  os << "memory traffic per instruction (warp size " << warp_size << "):\n";
  std::snprintf(line, sizeof line, "  %-60s %9s %10s %9s %9s %9s %9s\n", "instruction", "requests",
                "wavefronts", "ideal", "conflicts", "sectors", "ideal");
  os << line;
  auto row = [&](const std::string& name, const Counters& c) {
    std::string shown = name.size() > 60 ? name.substr(0, 57) + "..." : name;
    int64_t requests = c.shared_requests + c.global_requests;
    std::snprintf(line, sizeof line, "  %-60s %9lld %10lld %9lld %9lld %9lld %9lld\n",
                  shown.c_str(), static_cast<long long>(requests),
                  static_cast<long long>(c.wavefronts), static_cast<long long>(c.ideal_wavefronts),
                  static_cast<long long>(c.bank_conflicts), static_cast<long long>(c.sectors),
                  static_cast<long long>(c.ideal_sectors));
    os << line;
  };
  for (size_t s = 0; s < sites.size(); ++s) {
    const Counters& c = per_site[s];
    if (c.shared_requests + c.global_requests == 0) continue;
    const Site& site = sites[s];
    std::string where = site.loc.empty()      ? ""
                        : site.within.empty() ? " at " + site.loc
                                              : " in " + site.within + " at " + site.loc;
    row(site.access + " " + site.buffer + where, c);
  }
  row("total", total);
  os << "barriers: " << barriers << (barriers == 1 ? " round" : " rounds")
     << "; cp.async: " << async_bytes << " bytes, at most " << max_async_in_flight
     << " in flight in one block\n";
  if (findings.empty()) {
    os << "findings: none\n";
    return os.str();
  }
  os << "findings: " << findings.size() << "\n";
  for (const Finding& f : findings) {
    os << "  [" << finding_kind_name(f.kind) << (f.benign ? ", benign" : "") << "] " << f.message;
    if (f.count > 1) os << " (" << f.count << " occurrences)";
    os << "\n";
  }
  return os.str();
}

}  // namespace tessel::sim
