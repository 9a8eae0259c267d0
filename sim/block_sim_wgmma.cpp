// wgmma.mma_async in flight (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
// each warp's operations join its open group until wgmma.commit_group; wgmma.wait_group N retires
// every committed group but the newest N. Until then the operation may still read its shared
// operands, so a write to one of them is a wgmma race, and its accumulators are not yet written.
#include <bit>

#include "sim/block_sim.h"

namespace tessel::sim {

void BlockSim::wgmma_issue(int warp, int thread, int site,
                           const std::vector<std::pair<int, int64_t>>& reads,
                           std::vector<RegisterWrite> writes) {
  WgmmaOp op;
  if (run_.options().detectors) {
    for (const auto& [buffer, e] : reads) {
      BlockBuffer& b = buffers_[buffer - num_globals_];
      Cell& c = b.cells[e];
      if (!c.init && !c.pending) {
        findings_.add(FindingKind::kUninit, false, b.desc.name, site, -1, [&] {
          Finding f;
          f.element = b.desc.index_string(e);
          f.threads = {thread};
          f.blocks = {block_index_};
          f.message = "uninitialised read of shared " + b.desc.name + f.element +
                      ": the wgmma of " + thread_words(thread) + "'s warpgroup reads it by " +
                      site_words(site) +
                      " before any thread wrote it. Fill the operand tile before the wgmma";
          return f;
        });
      }
      ++c.wgmma;
      c.wgmma_site = site;
      c.wgmma_thread = thread;
    }
    op.reads = reads;
  }
  for (const RegisterWrite& w : writes) {
    auto& slot = wgmma_regs_[{w.buffer, w.thread, w.flat}];
    slot.first = w.bits;
    ++slot.second;
  }
  op.writes = std::move(writes);
  wgmma_[warp].open.push_back(std::move(op));
}

std::optional<uint64_t> BlockSim::wgmma_pending_value(int buffer, int thread, int64_t flat) const {
  auto it = wgmma_regs_.find({buffer, thread, flat});
  if (it == wgmma_regs_.end()) return std::nullopt;
  return it->second.first;
}

void BlockSim::wgmma_commit(int warp) {
  WgmmaWarp& w = wgmma_[warp];
  w.committed.push_back(std::move(w.open));
  w.open.clear();
}

void BlockSim::wgmma_retire(std::vector<WgmmaOp>& group, std::vector<RegisterWrite>& out) {
  for (WgmmaOp& op : group) {
    for (const auto& [buffer, e] : op.reads) {
      Cell& c = buffers_[buffer - num_globals_].cells[e];
      if (c.wgmma) --c.wgmma;
    }
    for (const RegisterWrite& w : op.writes) {
      auto it = wgmma_regs_.find({w.buffer, w.thread, w.flat});
      if (it != wgmma_regs_.end() && --it->second.second == 0) wgmma_regs_.erase(it);
      out.push_back(w);
    }
  }
}

std::vector<RegisterWrite> BlockSim::wgmma_wait(int warp, int n) {
  std::vector<RegisterWrite> out;
  auto it = wgmma_.find(warp);
  if (it == wgmma_.end()) return out;
  WgmmaWarp& w = it->second;
  while (static_cast<int>(w.committed.size()) > n) {
    wgmma_retire(w.committed.front(), out);
    w.committed.pop_front();
  }
  return out;
}

int64_t BlockSim::wgmma_in_flight() const {
  int64_t n = 0;
  for (const auto& [warp, w] : wgmma_) {
    n += static_cast<int64_t>(w.open.size());
    for (const auto& g : w.committed) n += static_cast<int64_t>(g.size());
  }
  return n;
}

void BlockSim::wgmma_race(BlockBuffer& b, int64_t e, int thread, int site, bool copy) {
  const BufferDesc& d = b.desc;
  const Cell& c = b.cells[e];
  const int reader = c.wgmma_thread, rsite = c.wgmma_site;
  findings_.add(FindingKind::kWgmmaRace, false, d.name, rsite, site, [&] {
    Finding f;
    f.element = d.index_string(e);
    f.threads = {reader, thread};
    f.blocks = {block_index_};
    f.message = "wgmma race on shared " + d.name + f.element + " in block " +
                block_string(block_index_) + ": " + thread_words(thread) +
                (copy ? " starts a copy into it by " : " writes it by ") + site_words(site) +
                " while the wgmma issued by warp " + std::to_string(reader / warp_size_) + " (" +
                site_words(rsite) + ", " + thread_words(reader) +
                ") may still read it: the warp has not waited for it. Wait for that wgmma "
                "(T.wgmma_wait_group) — and T.sync_threads() when other warps write — before "
                "overwriting its operands";
    return f;
  });
}

}  // namespace tessel::sim
