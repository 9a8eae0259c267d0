// The detectors of one block: races between barriers and uninitialised reads in shared memory,
// async races on cp.async destinations and uninitialised registers. Global memory's are in
// block_sim_global.cpp.
//
// Shared memory keeps, per element, the barrier interval (epoch) and thread of the last write
// and of the first two distinct readers. Within one interval:
//   read  by t after a write by w != t               -> race (read-after-write)
//   write by t after a write by w != t               -> write_conflict (different values) or a
//                                                       benign race (the same value)
//   write by t after a read by r != t                -> race (write-after-read)
// Lanes of one warp count as different threads: since Volta, lanes of a warp are not
// guaranteed to run in lock-step between instructions, so they need a barrier too.
#include <bit>
#include <cstring>

#include "sim/block_sim.h"

namespace tessel::sim {

namespace {

/// True when each of the n register flags, with the bits of `ignore` cleared, is `want`; eight
/// at a time.
bool all_flags(const uint8_t* flags, int n, uint8_t want, uint8_t ignore) {
  constexpr uint64_t kBytes = 0x0101010101010101ull;
  const uint64_t keep = static_cast<uint8_t>(~ignore) * kBytes, wanted = want * kBytes;
  for (; n >= 8; n -= 8, flags += 8) {
    uint64_t w;
    std::memcpy(&w, flags, 8);
    if ((w & keep) != wanted) return false;
  }
  for (; n > 0; --n, ++flags) {
    if ((*flags & ~ignore) != want) return false;
  }
  return true;
}

}  // namespace

void BlockSim::check_shared(const WarpRequest& req, const Resolved& r, BlockBuffer& b,
                            uint64_t same) {
  const BufferDesc& d = b.desc;
  for (uint64_t m = r.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int t = req.first_thread + lane;
    int n = lane_vector(req, lane);
    bool lane_same = (same >> lane) & 1;
    for (int j = 0; j < n; ++j) {
      int64_t e = r.flat[lane] + j;
      Cell& c = b.cells[e];
      switch (req.access) {
        case Access::kLoad: {
          if (c.pending) {
            findings_.add(FindingKind::kAsyncRace, false, d.name, c.async_site, req.site, [&] {
              Finding f;
              f.element = d.index_string(e);
              f.threads = {c.async_thread, t};
              f.blocks = {block_index_};
              f.message = "async race on shared " + d.name + f.element + ": " + thread_words(t) +
                          " reads it by " + site_words(req.site) +
                          " while the cp.async that "
                          "writes it (" +
                          site_words(c.async_site) + ", " + thread_words(c.async_thread) +
                          ") has not landed. Wait for the copy "
                          "with T.cp_async_wait_group(0) — and T.sync_threads() when other "
                          "threads read it — before reading";
              return f;
            });
            break;
          }
          if (!c.init) {
            findings_.add(FindingKind::kUninit, false, d.name, req.site, -1, [&] {
              Finding f;
              f.element = d.index_string(e);
              f.threads = {t};
              f.blocks = {block_index_};
              f.message = "uninitialised read of shared " + d.name + f.element + ": " +
                          thread_words(t) + " of block " + block_string(block_index_) +
                          " reads it by " + site_words(req.site) +
                          " before any thread wrote it "
                          "(shared memory starts with undefined contents). Write every element "
                          "before reading it, or check the bounds of the loop that fills it";
              return f;
            });
          }
          if (c.w_epoch == epoch_ && c.writer >= threads_ && !ordered(c.writer, c.w_clock, t)) {
            int w = c.writer, ws = c.w_site;
            findings_.add(FindingKind::kAsyncRace, false, d.name, ws, req.site, [&] {
              Finding f;
              f.element = d.index_string(e);
              f.threads = {t};
              f.blocks = {block_index_};
              f.message = "TMA race on shared " + d.name + f.element + " in block " +
                          block_string(block_index_) + ": " + thread_words(t) + " reads it by " +
                          site_words(req.site) + ", but " + thread_words(w) + " (" +
                          site_words(ws) + ") lands it in phase " + std::to_string(c.w_clock - 1) +
                          " of that barrier, which this thread has not waited for; the read may "
                          "see the old contents. Wait for the phase (T.barrier_wait(bar, " +
                          std::to_string((c.w_clock - 1) % 2) + ")) before reading";
              return f;
            });
          } else if (c.w_epoch == epoch_ && c.writer != t && !ordered(c.writer, c.w_clock, t)) {
            int w = c.writer, ws = c.w_site;
            findings_.add(FindingKind::kRace, false, d.name, ws, req.site, [&] {
              Finding f;
              f.element = d.index_string(e);
              f.threads = {w, t};
              f.blocks = {block_index_};
              f.message = "race on shared " + d.name + f.element + " in block " +
                          block_string(block_index_) + ": " + thread_words(t) + " reads it by " +
                          site_words(req.site) + " after " + thread_words(w) + " wrote it by " +
                          site_words(ws) +
                          ", with no T.sync_threads() between them; on a GPU "
                          "the read may see the old or the new value. Put T.sync_threads() "
                          "between the write and the read";
              return f;
            });
          }
          if (hb_ && c.r_epoch == epoch_) {
            // A recorded read that happens before this one is covered by it: whatever comes
            // after this read (in happens-before) comes after that one too.
            if (c.reader2 >= 0 && ordered(c.reader2, c.r_clock2, t)) c.reader2 = -1;
            if (ordered(c.reader, c.r_clock, t)) {
              c.reader = c.reader2;
              c.r_site = c.r_site2;
              c.r_clock = c.r_clock2;
              c.reader2 = -1;
              if (c.reader < 0) c.r_epoch = 0;
            }
          }
          if (c.r_epoch != epoch_) {
            c.r_epoch = epoch_;
            c.reader = t;
            c.r_site = req.site;
            c.r_clock = own_clock(t);
            c.reader2 = -1;
          } else if (c.reader != t && c.reader2 < 0) {
            c.reader2 = t;
            c.r_site2 = req.site;
            c.r_clock2 = own_clock(t);
          }
          break;
        }
        case Access::kStore:
          shared_store(b, e, t, req.site, lane_same);
          break;
        case Access::kAtomic:
          shared_atomic(b, e, t, req.site);
          break;
        case Access::kAsyncWrite:
          if (c.wgmma) wgmma_race(b, e, t, req.site, true);
          // The data land at the wait, but the copy may write as soon as it is issued: a read
          // by another thread in this interval is a write-after-read race already.
          if (c.r_epoch == epoch_ && (c.reader != t || c.reader2 >= 0) && !read_ordered(c, t)) {
            int other = c.reader != t ? c.reader : c.reader2;
            int os = c.reader != t ? c.r_site : c.r_site2;
            findings_.add(FindingKind::kRace, false, d.name, os, req.site, [&] {
              Finding f;
              f.element = d.index_string(e);
              f.threads = {other, t};
              f.blocks = {block_index_};
              f.message = "race on shared " + d.name + f.element + " in block " +
                          block_string(block_index_) + ": " + thread_words(t) +
                          " starts a "
                          "copy into it by " +
                          site_words(req.site) + " while " + thread_words(other) + " read it by " +
                          site_words(os) +
                          " since the last barrier; the copy may land before that read. Put "
                          "T.sync_threads() between the read and the copy (or double-buffer)";
              return f;
            });
          }
          break;
      }
    }
  }
}

bool BlockSim::read_ordered(const Cell& c, int t) const {
  if (!hb_) return false;
  if (c.reader >= 0 && c.reader != t && !ordered(c.reader, c.r_clock, t)) return false;
  if (c.reader2 >= 0 && c.reader2 != t && !ordered(c.reader2, c.r_clock2, t)) return false;
  return true;
}

void BlockSim::shared_store(BlockBuffer& b, int64_t e, int t, int site, bool same) {
  const BufferDesc& d = b.desc;
  Cell& c = b.cells[e];
  if (c.wgmma) wgmma_race(b, e, t, site, false);
  if (!bulk_reads_.empty()) {
    bulk_overwrite(b, static_cast<int>(&b - buffers_.data()) + num_globals_, e, t, site);
  }
  if (c.pending) {
    findings_.add(FindingKind::kAsyncRace, false, d.name, c.async_site, site, [&] {
      Finding f;
      f.element = d.index_string(e);
      f.threads = {c.async_thread, t};
      f.blocks = {block_index_};
      f.message = "async race on shared " + d.name + f.element + ": " + thread_words(t) +
                  " writes it by " + site_words(site) + " while a cp.async into it (" +
                  site_words(c.async_site) + ", " + thread_words(c.async_thread) +
                  ") is still in flight; the copy will overwrite the store when it lands. "
                  "Wait for the copy (T.cp_async_wait_group) before writing";
      return f;
    });
  }
  if (c.w_epoch == epoch_ && c.writer != t && !ordered(c.writer, c.w_clock, t)) {
    int w = c.writer, ws = c.w_site;
    FindingKind kind = same ? FindingKind::kRace : FindingKind::kWriteConflict;
    findings_.add(kind, same, d.name, ws, site, [&] {
      Finding f;
      f.element = d.index_string(e);
      f.threads = {w, t};
      f.blocks = {block_index_};
      if (same) {
        f.message = "benign race on shared " + d.name + f.element + " in block " +
                    block_string(block_index_) + ": " + thread_words(w) + " (by " + site_words(ws) +
                    ") and " + thread_words(t) + " (by " + site_words(site) +
                    ") write it between the same two barriers, with the same value";
      } else {
        f.message = "write conflict on shared " + d.name + f.element + " in block " +
                    block_string(block_index_) + ": " + thread_words(w) + " (by " + site_words(ws) +
                    ") and " + thread_words(t) + " (by " + site_words(site) +
                    ") write different values to it between the same two barriers; which "
                    "value remains is undefined. Give each element one writer, or separate the "
                    "writes with T.sync_threads()";
      }
      return f;
    });
  } else if (c.r_epoch == epoch_ && (c.reader != t || c.reader2 >= 0) && !read_ordered(c, t)) {
    int other = c.reader != t ? c.reader : c.reader2;
    int os = c.reader != t ? c.r_site : c.r_site2;
    findings_.add(FindingKind::kRace, false, d.name, os, site, [&] {
      Finding f;
      f.element = d.index_string(e);
      f.threads = {other, t};
      f.blocks = {block_index_};
      f.message = "race on shared " + d.name + f.element + " in block " +
                  block_string(block_index_) + ": " + thread_words(t) + " writes it by " +
                  site_words(site) + " after " + thread_words(other) + " read it by " +
                  site_words(os) +
                  ", with no T.sync_threads() between them; on a GPU the read "
                  "may see the new value. Put T.sync_threads() between the read and the write";
      return f;
    });
  }
  c.w_epoch = epoch_;
  c.writer = t;
  c.w_site = site;
  c.w_clock = own_clock(t);
  c.w_fences = proxy_fences_.empty() ? 0 : static_cast<uint32_t>(proxy_fences_[t].size());
  c.init = true;
  c.atomic = false;
  // With mbarriers the reads before this write are ordered before it (or were reported): later
  // writes need only be ordered after this one, and later reads are recorded afresh.
  if (hb_) c.r_epoch = 0;
}

void BlockSim::shared_atomic(BlockBuffer& b, int64_t e, int t, int site) {
  Cell& c = b.cells[e];
  c.init = true;
  c.atomic = true;
  if (b.atomic_writes.empty()) b.atomic_writes.resize(b.cells.size());
  const uint32_t fences =
      proxy_fences_.empty() ? 0 : static_cast<uint32_t>(proxy_fences_[t].size());
  b.atomic_writes[e] = {t, site, epoch_, own_clock(t), fences};
}

void BlockSim::check_local(const WarpRequest& req, const Resolved& r, BlockBuffer& b) {
  const BufferDesc& d = b.desc;
  constexpr uint8_t kPending = kRegWgmmaWrite | kRegWgmmaRead;
  // The thread's own register accesses after its warp's first wgmma.fence are tracked until the
  // next one; a wgmma's accesses to its operands are not the thread's.
  const bool track = !req.wgmma && !wgmma_fenced_.empty() && wgmma_fenced_[req.warp];
  for (uint64_t m = r.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int t = req.first_thread + lane;
    int n = lane_vector(req, lane);
    const size_t i0 = b.reg(t, r.flat[lane]);
    uint8_t* init = b.init.data() + i0;
    if (req.access != Access::kLoad) {
      for (int j = 0; j < n; ++j) {
        // A wgmma chains its accumulators on its own (wgmma.mma_async after wgmma.mma_async):
        // only the thread's code writing a register a pending wgmma uses is a race.
        const uint8_t busy = req.wgmma ? init[j] & kRegWgmmaRead : init[j] & kPending;
        if (busy) wgmma_register_race(b, r.flat[lane] + j, t, req.site, true, busy);
        init[j] |= kRegInit;
        if (track) mark_unfenced(b, i0 + j, req.site, true);
      }
      continue;
    }
    // Registers written, in no pending wgmma's use and already marked as accessed since the
    // warp's wgmma.fence (when tracked): nothing to check or record.
    if (all_flags(init, n, track ? kRegInit | kRegUnfenced : kRegInit, kRegUnfencedWrite)) {
      continue;
    }
    for (int j = 0; j < n; ++j) {
      const int64_t e = r.flat[lane] + j;
      if (track) mark_unfenced(b, i0 + j, req.site, false);
      if (init[j] & kRegWgmmaWrite) {
        // An accumulator a wgmma of this warp writes at its wait_group: the read sees the
        // value from before the wgmma.
        wgmma_register_race(b, e, t, req.site, false, kRegWgmmaWrite);
      }
      if (init[j] & kRegInit) continue;
      findings_.add(FindingKind::kUninit, false, d.name, req.site, -1, [&] {
        Finding f;
        f.element = d.index_string(e);
        f.threads = {t};
        f.blocks = {block_index_};
        f.message = "uninitialised read of local " + d.name + f.element + ": " + thread_words(t) +
                    " of block " + block_string(block_index_) + " reads it by " +
                    site_words(req.site) +
                    " before this thread wrote it "
                    "(registers start undefined). Initialise it (an init value, or a store "
                    "before the loop) before reading it";
        return f;
      });
    }
  }
}

void BlockSim::async_issue(int thread, int site, int buffer, int64_t flat,
                           std::vector<uint64_t> cells) {
  const int64_t bytes =
      static_cast<int64_t>(cells.size()) * this->buffer(buffer).element_bits() / 8;
  async_bytes_ += bytes;
  in_flight_[thread] += bytes;
  peak_[thread] = std::max(peak_[thread], in_flight_[thread]);
  if (run_.options().detectors) {
    BlockBuffer& b = buffers_[buffer - num_globals_];
    for (size_t j = 0; j < cells.size(); ++j) {
      Cell& c = b.cells[flat + static_cast<int64_t>(j)];
      ++c.pending;
      c.async_site = static_cast<int16_t>(std::min(site, 0x7FFF));
      c.async_thread = thread;
    }
  }
  async_.issue(AsyncCopy{buffer, flat, std::move(cells), site, thread});
}

std::vector<AsyncCopy> BlockSim::async_wait(int thread, int n) {
  std::vector<AsyncCopy> landed = async_.wait(thread, n);
  for (const AsyncCopy& copy : landed) {
    in_flight_[thread] -=
        static_cast<int64_t>(copy.cells.size()) * buffer(copy.buffer).element_bits() / 8;
  }
  if (!run_.options().detectors) return landed;
  for (const AsyncCopy& copy : landed) {
    BlockBuffer& b = buffers_[copy.buffer - num_globals_];
    for (size_t j = 0; j < copy.cells.size(); ++j)
      --b.cells[copy.flat + static_cast<int64_t>(j)].pending;
  }
  for (const AsyncCopy& copy : landed) {
    BlockBuffer& b = buffers_[copy.buffer - num_globals_];
    for (size_t j = 0; j < copy.cells.size(); ++j) {
      shared_store(b, copy.flat + static_cast<int64_t>(j), copy.thread, copy.site, false);
    }
  }
  return landed;
}

}  // namespace tessel::sim
