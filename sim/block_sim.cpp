// Per-block hardware models: bounds, bank and sector counting, barriers and async copies. The
// race, uninitialised-read and async-race checks live in block_sim_detect.cpp.
#include "sim/block_sim.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>

#include "core/bank_rules.h"
#include "core/error.h"
#include "sim/global_sectors.h"

namespace tessel::sim {

namespace {

const char* verb(Access a) {
  switch (a) {
    case Access::kLoad:
      return "reads";
    case Access::kStore:
      return "writes";
    case Access::kAtomic:
      return "updates";
    case Access::kAsyncWrite:
      return "copies into";
  }
  return "touches";
}

/// "lanes 16-31" / "lanes 3, 7" for a mask.
std::string lanes_words(uint64_t mask) {
  std::string s;
  int count = std::popcount(mask);
  for (int l = 0; l < 64;) {
    if (!((mask >> l) & 1)) {
      ++l;
      continue;
    }
    int e = l;
    while (e + 1 < 64 && ((mask >> (e + 1)) & 1)) ++e;
    s += (s.empty() ? "" : ", ") + std::to_string(l) + (e > l ? "-" + std::to_string(e) : "");
    l = e + 1;
  }
  return (count == 1 ? "lane " : "lanes ") + s;
}

std::string warps_words(const std::vector<int>& warps) {
  std::string s = warps.size() == 1 ? "warp " : "warps ";
  for (size_t i = 0; i < warps.size(); ++i) s += (i ? ", " : "") + std::to_string(warps[i]);
  return s;
}

/// "warp 0 waits" / "warps 0, 1 wait".
std::string waiting(const std::vector<int>& warps) {
  return warps_words(warps) + (warps.size() == 1 ? " waits" : " wait");
}

}  // namespace

BlockSim::BlockSim(SimRun& run, uint32_t block_linear, int threads)
    : run_(run),
      block_(block_linear),
      block_index_(run.block_index(block_linear)),
      threads_(threads),
      warp_size_(run.options().banks.warp_size),
      num_globals_(run.num_globals()),
      per_site_(run.sites().size()),
      async_(threads),
      in_flight_(threads, 0),
      peak_(threads, 0) {}

BlockSim::~BlockSim() {
  if (turn_ >= 0) run_.finish_turn(turn_);
}

void BlockSim::set_turn(int64_t turn, std::function<uint64_t(int, int64_t)> read_global) {
  turn_ = turn;
  read_global_ = std::move(read_global);
}

int BlockSim::add_buffer(BufferDesc desc) {
  internal_check(desc.space != Space::kGlobal, "global buffers are registered with SimRun");
  BlockBuffer b;
  b.size = desc.size();
  if (run_.options().detectors) {
    if (desc.space == Space::kShared)
      b.cells.resize(b.size);
    else
      b.init.assign(static_cast<size_t>(b.size) * threads_, 0);
    if (desc.space == Space::kLocal && !wgmma_fenced_.empty()) {
      b.unfenced_site.assign(b.init.size(), -1);
    }
  }
  b.desc = std::move(desc);
  buffers_.push_back(std::move(b));
  return num_globals_ + static_cast<int>(buffers_.size()) - 1;
}

std::string BlockSim::thread_words(int thread) const {
  if (thread >= threads_) {
    size_t k = static_cast<size_t>(thread - threads_);
    return "the TMA copy completing on mbarrier " +
           (k < proxy_names_.size() ? proxy_names_[k] : std::string("?"));
  }
  return "thread " + std::to_string(thread) + " (warp " + std::to_string(thread / warp_size_) +
         ", lane " + std::to_string(thread % warp_size_) + ")";
}

std::string BlockSim::site_words(int site) const {
  if (site < 0 || site >= static_cast<int>(run_.sites().size())) return "an unknown instruction";
  return run_.sites()[site].describe();
}

Resolved BlockSim::resolve(const WarpRequest& req) {
  const BufferDesc& d = buffer(req.buffer);
  Resolved r;
  const size_t rank = d.shape.size();
  const int64_t size =
      req.buffer < num_globals_ ? d.size() : buffers_[req.buffer - num_globals_].size;
  uint64_t lanes = req.mask;
  if (rank == 1 && !req.lane_vector) {
    // One dimension, one run length (registers and flattened shared tiles): a lane is in
    // bounds when its run [i, i + n) lies in [0, extent) (the rule below); the others are
    // left to the general loop, which reports them.
    const int64_t last = d.shape[0] - std::max(req.vector, 1);
    const int64_t* index = req.index[0];
    uint64_t out = 0;
    for (uint64_t m = lanes; m; m &= m - 1) {
      const int lane = std::countr_zero(m);
      const int64_t i = index[lane];
      if (i >= 0 && i <= last) {
        r.ok |= uint64_t{1} << lane;
        r.flat[lane] = i;
      } else {
        out |= uint64_t{1} << lane;
      }
    }
    lanes = out;
  }
  for (uint64_t m = lanes; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int n = lane_vector(req, lane);
    int64_t flat = 0;
    bool in = true;
    for (size_t k = 0; k < rank; ++k) {
      int64_t i = req.index[k][lane];
      in = in && i >= 0 && i < d.shape[k];
      flat = flat * d.shape[k] + i;
    }
    // A lane's run of n elements stays in the row it starts in (registers: in the array).
    if (in && n > 1) {
      in = d.space == Space::kLocal ? flat + n <= size
                                    : req.index[rank - 1][lane] + n <= d.shape[rank - 1];
    }
    if (in) {
      r.ok |= uint64_t{1} << lane;
      r.flat[lane] = flat;
      continue;
    }
    int thread = req.first_thread + lane;
    findings_.add(FindingKind::kOob, false, d.name, req.site, -1, [&] {
      std::string idx = "[";
      for (size_t k = 0; k < rank; ++k) {
        int64_t i = req.index[k][lane];
        idx += (k ? ", " : "") + std::to_string(i);
        if (k + 1 == rank && n > 1) idx += ".." + std::to_string(i + n - 1);
      }
      idx += "]";
      Finding f;
      f.element = idx;
      f.threads = {thread};
      f.blocks = {block_index_};
      f.message = "out-of-bounds access: " + thread_words(thread) + " of block " +
                  block_string(block_index_) + " " + verb(req.access) + " " + d.name + idx +
                  " by " + site_words(req.site) + ", outside " + d.name + "'s " +
                  space_name(d.space) + " shape " + d.shape_string() +
                  "; the access was "
                  "skipped" +
                  (req.access == Access::kLoad ? " (the load reads 0)" : "") +
                  ". Guard it with an `if` on the index (mask the tail) or shrink the loop";
      return f;
    });
  }
  return r;
}

void BlockSim::observe(const WarpRequest& req, const Resolved& r, uint64_t same_value) {
  if (r.ok == 0) return;
  const BufferDesc& d = buffer(req.buffer);
  per_site_[req.site].lane_accesses += std::popcount(r.ok);
  if (run_.options().counters && d.space != Space::kLocal) count(req, r, d);
  if (!run_.options().detectors) return;
  if (req.align > 1 && d.space != Space::kLocal) check_alignment(req, r, d);
  switch (d.space) {
    case Space::kShared:
      check_shared(req, r, buffers_[req.buffer - num_globals_], same_value);
      break;
    case Space::kLocal:
      check_local(req, r, buffers_[req.buffer - num_globals_]);
      break;
    case Space::kGlobal:
      if (d.read_only && req.access != Access::kLoad) {
        internal_error("a write to global buffer '" + d.name + "', which the program never writes");
      }
      if (!d.read_only && (req.access == Access::kLoad || req.access == Access::kStore)) {
        check_global(req, r, d, same_value);
      }
      break;
  }
}

void BlockSim::count(const WarpRequest& req, const Resolved& r, const BufferDesc& d) {
  std::array<int64_t, kMaxLanes> addr{};
  std::array<int, kMaxLanes> bytes{};
  for (uint64_t m = r.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    addr[lane] = d.address(r.flat[lane]);
    bytes[lane] = std::max(1, lane_vector(req, lane) * d.element_bits() / 8);
  }
  Counters& c = per_site_[req.site];
  if (d.space == Space::kShared) {
    int width = std::max(1, req.vector * d.element_bits() / 8);
    bool write = req.access == Access::kStore || req.access == Access::kAsyncWrite;
    BankCount b =
        count_wavefronts(run_.options().banks, std::span<const int64_t>(addr.data(), warp_size_),
                         r.ok, width, req.ldmatrix, write);
    c.shared_requests += 1;
    c.wavefronts += b.wavefronts;
    c.ideal_wavefronts += b.ideal_wavefronts;
    c.bank_conflicts += b.bank_conflicts;
    if (run_.options().bank_samples) keep_bank_sample(req, r, d, addr, width, write, b);
  } else {
    SectorCount s = count_sectors(addr, bytes, r.ok);
    c.global_requests += 1;
    c.sectors += s.sectors;
    c.ideal_sectors += s.ideal_sectors;
    c.lines += s.lines;
  }
}

void BlockSim::keep_bank_sample(const WarpRequest& req, const Resolved& r, const BufferDesc& d,
                                const std::array<int64_t, kMaxLanes>& addr, int width, bool write,
                                const BankCount& count) {
  if (worst_bank_.empty()) worst_bank_.resize(per_site_.size());
  BankSample& s = worst_bank_[req.site];
  if (count.max_degree <= s.max_degree) return;
  s.max_degree = count.max_degree;
  s.access_bytes = width;
  s.ldmatrix = req.ldmatrix;
  s.write = write;
  s.mask = r.ok;
  s.warp = req.warp;
  s.first_thread = req.first_thread;
  s.block = block_;
  s.buffer_base = d.base;
  s.byte_addr.assign(addr.begin(), addr.begin() + warp_size_);
}

void BlockSim::barrier(const std::vector<Arrival>& arrivals) {
  std::vector<int> finished;
  std::map<int, std::vector<int>> at_site;  // barrier site -> warps waiting there
  for (const Arrival& a : arrivals) {
    if (a.site < 0)
      finished.push_back(a.warp);
    else
      at_site[a.site].push_back(a.warp);
  }
  if (at_site.empty()) return;
  const int first_site = at_site.begin()->first;
  for (const Arrival& a : arrivals) {
    if (a.site < 0 || a.mask == a.live) continue;
    uint64_t missing = a.live & ~a.mask;
    int thread = a.warp * warp_size_ + std::countr_zero(missing);
    findings_.add(FindingKind::kBarrierDivergence, false, "", a.site, -1, [&] {
      Finding f;
      f.threads = {thread};
      f.blocks = {block_index_};
      f.message = "barrier divergence: " + site_words(a.site) + " is reached by " +
                  lanes_words(a.mask) + " of warp " + std::to_string(a.warp) + " in block " +
                  block_string(block_index_) + ", but " + lanes_words(missing) + " (from " +
                  thread_words(thread) +
                  ") skip it: the barrier sits in a branch or loop that "
                  "depends on the thread. Every thread of the block must reach the same "
                  "T.sync_threads() — move it out of the branch";
      return f;
    });
  }
  if (at_site.size() > 1) {
    auto second = std::next(at_site.begin());
    findings_.add(FindingKind::kBarrierDivergence, false, "", first_site, second->first, [&] {
      Finding f;
      f.threads = {at_site.begin()->second[0] * warp_size_, second->second[0] * warp_size_};
      f.blocks = {block_index_};
      f.message = "barrier divergence: in block " + block_string(block_index_) + ", " +
                  waiting(at_site.begin()->second) + " at " + site_words(first_site) + " while " +
                  waiting(second->second) + " at " + site_words(second->first) +
                  "; different barriers do not synchronise the same code. Make every thread "
                  "pass the same T.sync_threads() calls";
      return f;
    });
  }
  if (!finished.empty()) {
    findings_.add(
        FindingKind::kBarrierDivergence, false, "", first_site, -1,
        [&] {
          Finding f;
          f.threads = {finished[0] * warp_size_};
          f.blocks = {block_index_};
          f.message = "barrier divergence: in block " + block_string(block_index_) + ", " +
                      warps_words(finished) + " finished without reaching " +
                      site_words(first_site) + ", where " + waiting(at_site.begin()->second) +
                      " (on a GPU the block may hang). Every thread must reach every "
                      "T.sync_threads() — move it out of the branch or loop that depends on the "
                      "thread";
          return f;
        },
        /*variant=*/1);
  }
  max_in_flight_closed_ = std::max(max_in_flight_closed_, interval_in_flight());
  peak_ = in_flight_;  // the next interval starts with what is still in flight
  block_global_.barrier();
  ++epoch_;
}

int64_t BlockSim::interval_in_flight() const {
  int64_t sum = 0;
  for (int64_t p : peak_) sum += p;
  return sum;
}

int64_t BlockSim::max_async_in_flight() const {
  return std::max(max_in_flight_closed_, interval_in_flight());
}

void BlockSim::partial_warp(int warp, int site, uint64_t mask, uint64_t live, int first_thread) {
  uint64_t missing = live & ~mask;
  int thread = first_thread + std::countr_zero(missing);
  findings_.add(FindingKind::kBarrierDivergence, false, "", site, -1, [&] {
    Finding f;
    f.threads = {thread};
    f.blocks = {block_index_};
    f.message = "barrier divergence: the warp-collective " + site_words(site) + " is executed by " +
                lanes_words(mask) + " of warp " + std::to_string(warp) + " in block " +
                block_string(block_index_) + ", but " + lanes_words(missing) +
                " are inactive; .sync.aligned instructions need every lane of the warp — move "
                "it out of the thread-dependent branch";
    return f;
  });
}

void BlockSim::inactive_shuffle_source(int site, int thread, int src_lane) {
  findings_.add(FindingKind::kUninit, false, "", site, -1, [&] {
    Finding f;
    f.threads = {thread};
    f.blocks = {block_index_};
    f.message = "undefined shuffle value: " + thread_words(thread) + " of block " +
                block_string(block_index_) + " reads lane " + std::to_string(src_lane) + " by " +
                site_words(site) +
                ", but that lane is inactive there; its value is "
                "undefined. Shuffle only between lanes that execute the shuffle together";
    return f;
  });
}

std::vector<AsyncCopy> BlockSim::async_drain() { return async_.drain(); }

void BlockSim::async_commit(int thread) { async_.commit(thread); }

}  // namespace tessel::sim
