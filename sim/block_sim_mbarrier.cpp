// The mbarriers of one block (PTX ISA "mbarrier"): phases, arrival and transaction counts, and
// the happens-before order they create between threads (vector clocks), which the race
// detector of block_sim_detect.cpp consults within one barrier interval.
#include <algorithm>

#include "sim/block_sim.h"

namespace tessel::sim {

namespace {

void join(std::vector<uint32_t>& into, const std::vector<uint32_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

/// "threads 0-63, 96" for a sorted list.
std::string threads_words(std::vector<int> t) {
  std::sort(t.begin(), t.end());
  std::string s;
  for (size_t i = 0; i < t.size();) {
    size_t j = i;
    while (j + 1 < t.size() && t[j + 1] == t[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(t[i]) + (j > i ? "-" + std::to_string(t[j]) : "");
    i = j + 1;
  }
  return (t.size() == 1 ? "thread " : "threads ") + s;
}

}  // namespace

BlockSim::Mbarrier* BlockSim::find_mbar(int buffer, int64_t flat, int thread, int site,
                                        const char* what) {
  auto it = mbars_.find({buffer, flat});
  if (it != mbars_.end() && it->second.init) return &it->second;
  const BufferDesc& d = this->buffer(buffer);
  findings_.add(FindingKind::kMbarrier, false, d.name, site, -1, [&] {
    Finding f;
    f.element = d.index_string(flat);
    f.threads = {thread};
    f.blocks = {block_index_};
    f.message = "mbarrier " + d.name + f.element +
                " is used before it is initialised: " + thread_words(thread) + " " + what +
                " it by " + site_words(site) + " in block " + block_string(block_index_) +
                ", but no thread ran T.mbarrier_init on it (T.alloc_barrier initialises its "
                "barriers; a hand-made barrier buffer needs T.mbarrier_init(bar, count) by one "
                "thread, then T.sync_threads())";
    return f;
  });
  return nullptr;
}

void BlockSim::mbar_init(int thread, int site, int buffer, int64_t flat, int64_t count) {
  if (!hb_) {
    hb_ = true;
    vc_.assign(threads_, std::vector<uint32_t>(threads_, 0));
    for (int t = 0; t < threads_; ++t) vc_[t][t] = 1;
  }
  ++mbar_changes_;
  if (count < 1 || count > (int64_t{1} << 20) - 1) {
    const BufferDesc& d = this->buffer(buffer);
    findings_.add(FindingKind::kMbarrier, false, d.name, site, -1, [&] {
      Finding f;
      f.element = d.index_string(flat);
      f.threads = {thread};
      f.blocks = {block_index_};
      f.message = "mbarrier " + d.name + f.element + " is initialised by " + site_words(site) +
                  " with " + std::to_string(count) +
                  " arrivals per phase; the count must be from 1 to 2^20 - 1 (PTX ISA "
                  "mbarrier.init)";
      return f;
    });
    count = std::max<int64_t>(count, 1);
  }
  Mbarrier& m = mbars_[{buffer, flat}];
  const bool again = m.init;
  const int index = again ? m.index : mbar_count_++;
  if (!again)
    proxy_names_.push_back(this->buffer(buffer).name + this->buffer(buffer).index_string(flat));
  m = Mbarrier{};
  m.index = index;
  m.init = true;
  m.init_site = site;
  m.init_thread = thread;
  m.count = count;
  m.pending = count;
}

void BlockSim::mbar_maybe_complete(Mbarrier& m) {
  if (m.pending > 0 || m.tx != 0) return;
  ++m.phase;
  m.done_clock = m.clock;
  m.clock.clear();
  m.arrived.clear();
  m.pending = m.count;
  m.tx = 0;
  m.tx_expected = 0;
}

void BlockSim::mbar_arrive(int thread, int site, int buffer, int64_t flat, int64_t tx,
                           bool arrive) {
  Mbarrier* m = find_mbar(buffer, flat, thread, site, arrive ? "arrives on" : "expects bytes on");
  if (!m) return;
  ++mbar_changes_;
  m->tx += tx;
  m->tx_expected += tx;
  if (!arrive) return;
  // Release: everything this thread did so far happens before whoever waits for this phase.
  join(m->clock, vc_[thread]);
  ++vc_[thread][thread];
  m->arrived.push_back(thread);
  --m->pending;
  mbar_maybe_complete(*m);
}

bool BlockSim::mbar_phase_done(int buffer, int64_t flat, int64_t parity) const {
  auto it = mbars_.find({buffer, flat});
  if (it == mbars_.end() || !it->second.init) return true;  // reported when the wait runs
  return (it->second.phase & 1) != static_cast<uint32_t>(parity & 1);
}

bool BlockSim::mbar_try_wait(int thread, int site, int buffer, int64_t flat, int64_t parity) {
  Mbarrier* m = find_mbar(buffer, flat, thread, site, "waits on");
  if (!m) return true;
  if ((m->phase & 1) == static_cast<uint32_t>(parity & 1)) return false;
  join(vc_[thread], m->done_clock);  // acquire
  if (!acquires_.empty()) ++acquires_[thread];
  return true;
}

void BlockSim::tma_write(int thread, int site, int buffer, const std::vector<int64_t>& flats,
                         int bar_buffer, int64_t bar_flat) {
  Mbarrier* m = find_mbar(bar_buffer, bar_flat, thread, site, "completes a TMA copy on");
  const BufferDesc& d = this->buffer(buffer);
  const int64_t bytes = d.dtype.storage_bytes(static_cast<int64_t>(flats.size()));
  if (run_.options().detectors) {
    BlockBuffer& b = buffers_[buffer - num_globals_];
    for (int64_t e : flats) {
      shared_store(b, e, thread, site, false);
      if (m) {
        // Written by the async proxy of this barrier, in its current phase.
        Cell& c = b.cells[e];
        c.writer = threads_ + m->index;
        c.w_clock = m->phase + 1;
      }
    }
  }
  if (!m) return;
  ++mbar_changes_;
  // complete_tx: the phase's readers see the proxy's writes up to this phase.
  std::vector<uint32_t> proxy(threads_ + m->index + 1, 0);
  proxy[threads_ + m->index] = m->phase + 1;
  join(m->clock, proxy);
  m->tx -= bytes;
  mbar_maybe_complete(*m);
}

std::string BlockSim::mbar_state(int buffer, int64_t flat) const {
  const BufferDesc& d = this->buffer(buffer);
  std::string name = "'" + d.name + d.index_string(flat) + "'";
  auto it = mbars_.find({buffer, flat});
  if (it == mbars_.end() || !it->second.init) return name + " was never initialised";
  const Mbarrier& m = it->second;
  std::string s = name + " is in phase " + std::to_string(m.phase) + " (parity " +
                  std::to_string(m.phase & 1) + ") with " + std::to_string(m.count - m.pending) +
                  " of " + std::to_string(m.count) + " arrivals";
  if (!m.arrived.empty()) s += " (" + threads_words(m.arrived) + ")";
  s += ", " + std::to_string(m.tx_expected - m.tx) + " of " + std::to_string(m.tx_expected) +
       " expected transaction bytes landed";
  return s;
}

void BlockSim::deadlock(const std::string& message, int thread, int site_a, int site_b) {
  findings_.add(FindingKind::kDeadlock, false, "", site_a, site_b, [&] {
    Finding f;
    f.threads = {thread};
    f.blocks = {block_index_};
    f.message = "deadlock in block " + block_string(block_index_) + ": " + message;
    return f;
  });
}

}  // namespace tessel::sim
