// wgmma.mma_async in flight (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
// each warp's operations join its open group until wgmma.commit_group; wgmma.wait_group N retires
// every committed group but the newest N. Until then the operation may still read its shared
// operands, so a write to one of them is a wgmma race, and its accumulators are not yet written.
// One still pending when its warp ends never writes them: a wgmma_unwaited finding.
#include <algorithm>
#include <bit>

#include "sim/block_sim.h"

namespace tessel::sim {

void BlockSim::wgmma_issue(int warp, int thread, int site,
                           const std::vector<std::pair<int, int64_t>>& reads,
                           std::vector<RegisterRead> a_regs, std::vector<RegisterWrite> writes) {
  WgmmaOp op;
  op.site = site;
  op.thread = thread;
  const bool detectors = run_.options().detectors;
  if (detectors) {
    if (wgmma_fenced_.empty() || !wgmma_fenced_[warp]) {
      findings_.add(FindingKind::kWgmmaFence, false, "", site, -1, [&] {
        Finding f;
        f.threads = {thread};
        f.blocks = {block_index_};
        f.message = "missing wgmma.fence: warp " + std::to_string(warp) + " of block " +
                    block_string(block_index_) + " issues its first wgmma (" + site_words(site) +
                    ") with no T.wgmma_fence() before it; PTX requires one before a "
                    "warpgroup's first wgmma.mma_async. Put T.wgmma_fence() before the wgmma";
        return f;
      });
    } else {
      check_wgmma_fence(a_regs, warp, site);
      check_wgmma_fence(writes, warp, site);
    }
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
      check_proxy_fence(b, e, thread, warp_size_, site,
                        "the wgmma of warp " + std::to_string(warp));
      ++c.wgmma;
      c.wgmma_site = site;
      c.wgmma_thread = thread;
    }
    op.reads = reads;
    for (const RegisterRead& r : a_regs) {
      BlockBuffer& b = buffers_[r.buffer - num_globals_];
      if (b.wgmma_reads.empty()) b.wgmma_reads.assign(b.init.size(), 0);
      const size_t i = b.reg(r.thread, r.flat);
      ++b.wgmma_reads[i];
      b.init[i] |= kRegWgmmaRead;
    }
    op.a_regs = std::move(a_regs);
  }
  for (const RegisterWrite& w : writes) {
    BlockBuffer& b = buffers_[w.buffer - num_globals_];
    if (b.wgmma_writes.empty()) {
      const size_t n = static_cast<size_t>(b.size) * static_cast<size_t>(threads_);
      b.wgmma_writes.assign(n, 0);
      b.wgmma_value.assign(n, 0);
    }
    const size_t i = b.reg(w.thread, w.flat);
    b.wgmma_value[i] = w.bits;
    ++b.wgmma_writes[i];
    if (detectors) b.init[i] |= kRegWgmmaWrite;
  }
  op.writes = std::move(writes);
  wgmma_[warp].open.push_back(std::move(op));
}

std::optional<uint64_t> BlockSim::wgmma_pending_value(int buffer, int thread, int64_t flat) const {
  const BlockBuffer& b = buffers_[buffer - num_globals_];
  if (b.wgmma_writes.empty()) return std::nullopt;
  const size_t i = b.reg(thread, flat);
  if (b.wgmma_writes[i] == 0) return std::nullopt;
  return b.wgmma_value[i];
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
    for (const RegisterRead& r : op.a_regs) {
      BlockBuffer& b = buffers_[r.buffer - num_globals_];
      const size_t i = b.reg(r.thread, r.flat);
      if (--b.wgmma_reads[i] == 0) b.init[i] &= static_cast<uint8_t>(~kRegWgmmaRead);
    }
    for (const RegisterWrite& w : op.writes) {
      BlockBuffer& b = buffers_[w.buffer - num_globals_];
      const size_t i = b.reg(w.thread, w.flat);
      if (--b.wgmma_writes[i] == 0 && !b.init.empty()) {
        b.init[i] &= static_cast<uint8_t>(~kRegWgmmaWrite);
      }
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

void BlockSim::wgmma_warp_end(int warp) {
  auto it = wgmma_.find(warp);
  if (it == wgmma_.end()) return;
  WgmmaWarp& w = it->second;
  auto report = [&](const WgmmaOp& op, bool committed) {
    const std::string acc = op.writes.empty() ? "" : buffer(op.writes.front().buffer).name;
    // Variant 0: committed, not waited for; 1: never committed.
    findings_.add(
        FindingKind::kWgmmaUnwaited, false, acc, op.site, -1,
        [&] {
          Finding f;
          f.threads = {op.thread};
          f.blocks = {block_index_};
          const int group = op.thread / (4 * warp_size_);
          f.message = "wgmma never waited for: warp " + std::to_string(warp) + " (warpgroup " +
                      std::to_string(group) + ") of block " + block_string(block_index_) +
                      " issues a wgmma by " + site_words(op.site) + " and ends with it pending" +
                      (committed ? ": no T.wgmma_wait_group retires its group"
                                 : ": no T.wgmma_commit_group closes its group, so no "
                                   "T.wgmma_wait_group can wait for it") +
                      ". Its results never reach the accumulators" +
                      (acc.empty() ? std::string() : " (" + acc + ")") +
                      ", which hold undefined values on a GPU. Put " +
                      (committed ? "" : "T.wgmma_commit_group() and ") +
                      "T.wgmma_wait_group(0) after the last wgmma, before the accumulators are "
                      "used and before the warp ends";
          return f;
        },
        committed ? 0 : 1);
  };
  if (run_.options().detectors) {
    for (const auto& group : w.committed) {
      for (const WgmmaOp& op : group) report(op, true);
    }
    for (const WgmmaOp& op : w.open) report(op, false);
  }
  wgmma_.erase(it);
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

void BlockSim::wgmma_register_race(const BlockBuffer& b, int64_t e, int t, int site, bool write,
                                   uint8_t flags) {
  const BufferDesc& d = b.desc;
  const bool a_operand = (flags & kRegWgmmaRead) != 0;
  // Variant 1: a read of an accumulator; 2: a write of one; 3: a write of an A register.
  const int variant = a_operand && write ? 3 : write ? 2 : 1;
  findings_.add(
      FindingKind::kWgmmaRace, false, d.name, site, -1,
      [&] {
        Finding f;
        f.element = d.index_string(e);
        f.threads = {t};
        f.blocks = {block_index_};
        const std::string head = "wgmma race on register " + d.name + f.element + ": " +
                                 thread_words(t) + " of block " + block_string(block_index_) +
                                 (write ? " writes it by " : " reads it by ") + site_words(site);
        if (variant == 1) {
          f.message = head +
                      " while a wgmma that writes it has not been waited for; the read "
                      "sees the value from before that wgmma. Put T.wgmma_wait_group(0) "
                      "before the read";
        } else if (variant == 2) {
          f.message = head +
                      " while a wgmma that writes it (its accumulator) has not been waited for; "
                      "the wgmma's result replaces the value when it completes. Put "
                      "T.wgmma_wait_group(0) before the write";
        } else {
          f.message = head +
                      " while a wgmma_rs that reads it as its A operand has not been waited "
                      "for; the wgmma may read the new value. Wait for that wgmma "
                      "(T.wgmma_wait_group) before overwriting its A registers, or give the next "
                      "A its own registers";
        }
        return f;
      },
      variant);
}

void BlockSim::wgmma_fence(int warp) {
  if (!run_.options().detectors) return;
  if (wgmma_fenced_.empty()) {
    wgmma_fenced_.assign(static_cast<size_t>((threads_ + warp_size_ - 1) / warp_size_), 0);
    for (BlockBuffer& b : buffers_) {
      if (b.desc.space == Space::kLocal) b.unfenced_site.assign(b.init.size(), -1);
    }
  }
  wgmma_fenced_[warp] = 1;
  constexpr uint8_t kClear = static_cast<uint8_t>(~(kRegUnfenced | kRegUnfencedWrite));
  const int first = warp * warp_size_, last = std::min(threads_, first + warp_size_);
  for (BlockBuffer& b : buffers_) {
    if (b.desc.space != Space::kLocal || b.init.empty()) continue;
    uint8_t* p = b.init.data() + b.reg(first, 0);
    uint8_t* end = b.init.data() + b.reg(last, 0);
    for (; p != end; ++p) *p &= kClear;
  }
}

void BlockSim::mark_unfenced(BlockBuffer& b, size_t i, int site, bool write) {
  uint8_t& f = b.init[i];
  if (write ? (f & kRegUnfencedWrite) : (f & kRegUnfenced)) return;
  f |= write ? kRegUnfenced | kRegUnfencedWrite : kRegUnfenced;
  b.unfenced_site[i] = site;
}

template <typename Regs>
void BlockSim::check_wgmma_fence(const Regs& regs, int warp, int site) {
  for (const auto& r : regs) {
    BlockBuffer& b = buffers_[r.buffer - num_globals_];
    const size_t i = b.reg(r.thread, r.flat);
    const uint8_t flags = b.init[i];
    if (!(flags & kRegUnfenced)) continue;
    const int access = b.unfenced_site[i];
    const bool write = (flags & kRegUnfencedWrite) != 0;
    // Reported once per access: the register counts as fenced for the next wgmma.
    b.init[i] = static_cast<uint8_t>(flags & ~(kRegUnfenced | kRegUnfencedWrite));
    findings_.add(FindingKind::kWgmmaFence, false, b.desc.name, access, site, [&] {
      Finding f;
      f.element = b.desc.index_string(r.flat);
      f.threads = {r.thread};
      f.blocks = {block_index_};
      f.message = "missing wgmma.fence on register " + b.desc.name + f.element + ": " +
                  thread_words(r.thread) + " of block " + block_string(block_index_) +
                  (write ? " writes it by " : " reads it by ") + site_words(access) +
                  " after its warp's last T.wgmma_fence(), and then the wgmma of warp " +
                  std::to_string(warp) + " (" + site_words(site) +
                  ") uses it as its accumulator or A operand; without a wgmma.fence between "
                  "them the wgmma may see the register from before that access (PTX ISA, "
                  "wgmma.fence). Put T.wgmma_fence() after the access, before the wgmma";
      return f;
    });
  }
}

}  // namespace tessel::sim
