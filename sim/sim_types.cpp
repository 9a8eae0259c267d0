// Names, descriptions and arithmetic of the simulator's vocabulary types.
#include "sim/sim_types.h"

namespace tessel::sim {

const char* space_name(Space space) {
  switch (space) {
    case Space::kGlobal:
      return "global";
    case Space::kShared:
      return "shared";
    case Space::kLocal:
      return "local";
  }
  return "?";
}

const char* finding_kind_name(FindingKind kind) {
  switch (kind) {
    case FindingKind::kRace:
      return "race";
    case FindingKind::kOob:
      return "oob";
    case FindingKind::kUninit:
      return "uninit";
    case FindingKind::kBarrierDivergence:
      return "barrier_divergence";
    case FindingKind::kAsyncRace:
      return "async_race";
    case FindingKind::kWriteConflict:
      return "write_conflict";
    case FindingKind::kMisaligned:
      return "misaligned";
    case FindingKind::kDeadlock:
      return "deadlock";
    case FindingKind::kMbarrier:
      return "mbarrier";
    case FindingKind::kWgmmaRace:
      return "wgmma_race";
    case FindingKind::kWgmmaFence:
      return "wgmma_fence";
    case FindingKind::kProxyFence:
      return "proxy_fence";
    case FindingKind::kWgmmaUnwaited:
      return "wgmma_unwaited";
  }
  return "?";
}

int64_t BufferDesc::size() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

std::string BufferDesc::index_string(int64_t flat) const {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string BufferDesc::shape_string() const {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string Site::describe() const {
  std::string s = access;
  if (!buffer.empty()) s += " of " + buffer;
  if (!statement.empty() && statement != access) s += " in `" + statement + "`";
  if (loc.empty()) return s;
  if (within.empty()) return s + " (at " + loc + ")";
  if (within == "kernel") return s + " (in the kernel declared at " + loc + ")";
  return s + " (in the `" + within + "` at " + loc + ")";
}

Counters& Counters::operator+=(const Counters& o) {
  shared_requests += o.shared_requests;
  wavefronts += o.wavefronts;
  ideal_wavefronts += o.ideal_wavefronts;
  bank_conflicts += o.bank_conflicts;
  global_requests += o.global_requests;
  sectors += o.sectors;
  ideal_sectors += o.ideal_sectors;
  lines += o.lines;
  lane_accesses += o.lane_accesses;
  return *this;
}

}  // namespace tessel::sim
