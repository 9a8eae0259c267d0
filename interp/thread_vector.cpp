// T.vectorized loops at thread level: the iterations run one after another as in a serial loop,
// and the memory requests of each site are grouped into the one vector request the hardware
// issues (ld.shared.v4 / ld.global.v4 / ds_read_b128 ...), so bank wavefronts and sectors are
// counted per vector access, not per element.
#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.h"
#include "interp/thread_exec.h"

namespace tessel::thread_detail {

namespace {

/// Widths of one lane's run that are a single hardware access.
bool is_vector_width(int64_t bytes) {
  return bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

}  // namespace

void VectorGroup::begin(int extent) {
  internal_check(!active(), "nested vector groups");
  extent_ = extent;
  iteration_ = 0;
  count_ = 0;
}

void VectorGroup::hold(const sim::WarpRequest& req, const sim::Resolved& r, uint64_t same,
                       int rank) {
  if (count_ == held_.size()) held_.emplace_back();
  Held& h = held_[count_++];
  h.req = req;
  h.res = r;
  h.same = same;
  h.iteration = iteration_;
  h.rank = rank;
  h.index.resize(static_cast<size_t>(rank) * sim::kMaxLanes);
  for (int d = 0; d < rank; ++d) {
    std::memcpy(h.index.data() + d * sim::kMaxLanes, req.index[d],
                sizeof(int64_t) * sim::kMaxLanes);
  }
  h.req.index = {};  // re-pointed into h.index when presented
}

bool VectorGroup::mergeable(const std::vector<int>& at, const sim::BufferDesc& desc,
                            Misaligned* misaligned) const {
  if (static_cast<int>(at.size()) != extent_) return false;
  const Held& first = held_[at[0]];
  const int bits = desc.element_bits();
  const int64_t bytes = int64_t{extent_} * bits / 8;
  if (bits % 8 != 0 || !is_vector_width(bytes)) return false;
  const int last = first.rank - 1;
  if (last < 0) return false;
  for (int v = 0; v < extent_; ++v) {
    const Held& h = held_[at[v]];
    if (h.iteration != v || h.req.mask != first.req.mask || h.res.ok != first.res.ok) return false;
  }
  for (uint64_t m = first.res.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int64_t flat0 = first.res.flat[lane];
    int64_t col0 = first.index[last * sim::kMaxLanes + lane];
    for (int v = 1; v < extent_; ++v) {
      const Held& h = held_[at[v]];
      if (h.res.flat[lane] != flat0 + v || h.index[last * sim::kMaxLanes + lane] != col0 + v) {
        return false;
      }
    }
  }
  // A register array has no alignment; memory vectors must be aligned to their size.
  if (desc.space == sim::Space::kLocal) return true;
  for (uint64_t m = first.res.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int64_t address = desc.address(first.res.flat[lane]);
    if (address % bytes != 0) {
      *misaligned = {lane, address - desc.base, static_cast<int>(bytes)};
      return false;
    }
  }
  return true;
}

void VectorGroup::flush(sim::BlockSim& sim) {
  // Sites in order of first appearance, each with the positions of its requests.
  std::vector<std::pair<int, std::vector<int>>> sites;
  for (size_t i = 0; i < count_; ++i) {
    int site = held_[i].req.site;
    auto it =
        std::find_if(sites.begin(), sites.end(), [&](const auto& s) { return s.first == site; });
    if (it == sites.end()) {
      sites.push_back({site, {}});
      it = sites.end() - 1;
    }
    it->second.push_back(static_cast<int>(i));
  }
  std::vector<int> merged_sites;
  for (const auto& [site, at] : sites) {
    Misaligned off;
    if (mergeable(at, sim.buffer(held_[at[0]].req.buffer), &off)) {
      merged_sites.push_back(site);
    } else if (off.lane >= 0) {  // contiguous but misaligned: scalar accesses, said so
      sim.misaligned(held_[at[0]].req, off.lane, off.offset, off.bytes, /*benign=*/true);
    }
  }
  const int extent = extent_;
  extent_ = 0;  // what sim sees from here on is not held
  for (size_t i = 0; i < count_; ++i) {
    Held& h = held_[i];
    for (int d = 0; d < h.rank; ++d) h.req.index[d] = h.index.data() + d * sim::kMaxLanes;
    bool merged =
        std::find(merged_sites.begin(), merged_sites.end(), h.req.site) != merged_sites.end();
    if (!merged) {
      sim.observe(h.req, h.res, h.same);
      continue;
    }
    if (h.iteration != 0) continue;
    // A lane's run is a same-value write only when every element of it is.
    uint64_t same = ~uint64_t{0};
    for (size_t j = i; j < count_; ++j) {
      if (held_[j].req.site == h.req.site) same &= held_[j].same;
    }
    sim::WarpRequest req = h.req;
    req.vector = extent;
    sim.observe(req, h.res, same);
  }
  count_ = 0;
}

void WarpExec::exec_vectorized(const CStmt* s, uint64_t mask) {
  VectorGroup& group = block_.vectors();
  LaneValues slo, sn;
  const LaneValues& lo = eval(s->a, mask, slo);
  eval(s->b, mask, sn);  // the constant extent, counted as exec_for counts it
  std::array<int64_t, sim::kMaxLanes> start{};
  for_lanes(mask, [&](int l) { start[l] = lo.i[l]; });
  group.begin(s->vector);
  for (int v = 0; v < s->vector; ++v) {
    group.set_iteration(v);
    LaneValues& reg = warp_.write_reg(s->slot);
    for_lanes(mask, [&](int l) { reg.i[l] = start[l] + v; });
    exec(s->body[0], mask);
  }
  group.flush(block_.sim());
}

}  // namespace tessel::thread_detail
