// Proxy fences of one block (PTX ISA, "Proxies" in the memory consistency model; wgmma "Async
// Proxy"; cp.async.bulk): shared memory that threads write through the generic proxy (stores,
// landed cp.async copies, shared atomics) and the async proxy then reads (a wgmma's operand
// descriptors, a TMA store's source box) needs a fence.proxy.async on the path from the write to
// the read; a barrier or an mbarrier phase alone orders the threads, not the two proxies. Two
// fences qualify:
//   - the writer's first fence after its write, when it is ordered before the read: the reader
//     is the writer (or shares its warp), a barrier lies between, or the reader acquired an
//     mbarrier phase the writer arrived on after the fence;
//   - the reader's latest fence, when the write was ordered before it: a barrier lies between
//     the write and the fence, or the fence is in the current barrier interval, the reader
//     acquired no mbarrier phase since, and the write happens before the read through them.
// Cells written last by a TMA copy (the async proxy itself) need no fence.
#include "sim/block_sim.h"

namespace tessel::sim {

void BlockSim::fence_proxy_async(int thread) {
  if (!run_.options().detectors) return;
  if (proxy_fences_.empty()) {
    proxy_fences_.resize(static_cast<size_t>(threads_));
    acquires_.assign(static_cast<size_t>(threads_), 0);
  }
  proxy_fences_[thread].push_back({epoch_, own_clock(thread), acquires_[thread]});
}

void BlockSim::check_proxy_fence(const BlockBuffer& b, int64_t e, int reader, int count, int site,
                                 const std::string& what) {
  const Cell& c = b.cells[e];
  const GenericWrite g = c.atomic
                             ? b.atomic_writes[e]
                             : GenericWrite{c.writer, c.w_site, c.w_epoch, c.w_clock, c.w_fences};
  const int w = g.thread;
  if (w < 0 || w >= threads_) return;  // never written, or written by the async proxy
  const bool same = w >= reader && w < reader + count;
  if (!proxy_fences_.empty()) {
    const std::vector<ProxyFence>& mine = proxy_fences_[w];
    if (g.fences < mine.size()) {
      const ProxyFence& f = mine[g.fences];
      if (same || f.epoch < epoch_ || ordered(w, f.clock, reader)) return;
    }
    const std::vector<ProxyFence>& theirs = proxy_fences_[reader];
    if (!same && !theirs.empty()) {
      const ProxyFence& f = theirs.back();
      if (g.epoch < f.epoch) return;
      if (f.epoch == epoch_ && f.acquires == acquires_[reader] && ordered(w, g.clock, reader)) {
        return;
      }
    }
  }
  const BufferDesc& d = b.desc;
  findings_.add(FindingKind::kProxyFence, false, d.name, g.site, site, [&] {
    Finding f;
    f.element = d.index_string(e);
    f.threads = {w, reader};
    f.blocks = {block_index_};
    f.message = "missing fence.proxy.async on shared " + d.name + f.element + " in block " +
                block_string(block_index_) + ": " + thread_words(w) +
                (c.atomic ? " updates it atomically by " : " writes it by ") + site_words(g.site) +
                " (the generic proxy) and " + what + " reads it by " + site_words(site) +
                " through the async proxy, with no fence.proxy.async between them; a barrier "
                "orders the threads, not the proxies, so the read may miss the write. Put "
                "T.fence_proxy_async() after the writes (before the barrier or mbarrier arrive "
                "that publishes them), or in the reading threads after it";
    return f;
  });
}

}  // namespace tessel::sim
