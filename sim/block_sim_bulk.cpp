// TMA stores in one block (cp.async.bulk.tensor shared -> global with bulk_group completion):
// per thread the open group and the committed groups of stores, and the shared elements their
// async proxy still reads. A store reads its box when it is issued (the reads are checked as
// loads by the issuing thread); the box stays read until the thread's
// cp.async.bulk.wait_group.read retires the group, so a write to it before then — by any
// thread, the issuing one included — is a TMA store race: the store may copy the new value.
// The global writes land when the group is retired (or at the end of the block); they are then
// checked as stores by the issuing thread against the block's other accesses since its last
// barrier and against other blocks, and until then any access of the block to one of the
// elements is a TMA store race on global memory.
#include "sim/block_sim.h"

namespace tessel::sim {

namespace {

/// The request of one thread (a bulk copy's issuing thread) to `buffer`, as the detectors take it.
WarpRequest one_thread_request(int buffer, Access access, int site, int thread, int warp_size) {
  WarpRequest req;
  req.buffer = buffer;
  req.access = access;
  req.site = site;
  req.mask = 1;
  req.warp = thread / warp_size;
  req.first_thread = thread;
  return req;
}

}  // namespace

void BlockSim::bulk_store(int thread, int site, int buffer, const std::vector<int64_t>& flats,
                          BulkStore store) {
  if (run_.options().detectors) {
    BlockBuffer& b = buffers_[buffer - num_globals_];
    const WarpRequest req = one_thread_request(buffer, Access::kLoad, site, thread, warp_size_);
    Resolved r;
    r.ok = 1;
    for (int64_t e : flats) {
      r.flat[0] = e;
      check_proxy_fence(b, e, thread, 1, site, "the TMA store of " + thread_words(thread));
      check_shared(req, r, b, 0);
      BulkRead& read = bulk_reads_[bulk_key(buffer, e)];
      read.thread = thread;
      read.site = site;
      ++read.count;
    }
  }
  if (run_.options().detectors && !run_.global(store.global_buffer).read_only) {
    for (int64_t g : store.gflats) {
      if (g < 0) continue;
      BulkRead& w = bulk_writes_[bulk_key(store.global_buffer, g)];
      w.thread = thread;
      w.site = store.global_site;
      ++w.count;
    }
  }
  store.shared_buffer = buffer;
  store.flats = flats;
  store.site = site;
  store.thread = thread;
  bulk_[thread].open.push_back(std::move(store));
}

void BlockSim::bulk_commit(int thread) {
  BulkGroups& g = bulk_[thread];
  g.committed.push_back(std::move(g.open));
  g.open.clear();
}

std::vector<BulkStore> BlockSim::bulk_wait(int thread, int n) {
  std::vector<BulkStore> out;
  auto it = bulk_.find(thread);
  if (it == bulk_.end()) return out;
  auto& committed = it->second.committed;
  const size_t keep = static_cast<size_t>(std::max(n, 0));
  while (committed.size() > keep) {
    for (BulkStore& s : committed.front()) {
      bulk_release(s);
      out.push_back(std::move(s));
    }
    committed.erase(committed.begin());
  }
  return out;
}

std::vector<BulkStore> BlockSim::bulk_drain() {
  std::vector<BulkStore> out;
  for (auto& [thread, g] : bulk_) {
    for (auto& group : g.committed) {
      for (BulkStore& s : group) out.push_back(std::move(s));
    }
    for (BulkStore& s : g.open) out.push_back(std::move(s));
  }
  bulk_.clear();
  bulk_reads_.clear();
  bulk_writes_.clear();
  return out;
}

void BlockSim::bulk_release(const BulkStore& s) {
  for (int64_t e : s.flats) {
    auto it = bulk_reads_.find(bulk_key(s.shared_buffer, e));
    if (it != bulk_reads_.end() && --it->second.count <= 0) bulk_reads_.erase(it);
  }
  for (int64_t g : s.gflats) {
    auto it = bulk_writes_.find(bulk_key(s.global_buffer, g));
    if (g >= 0 && it != bulk_writes_.end() && --it->second.count <= 0) bulk_writes_.erase(it);
  }
}

void BlockSim::bulk_landed(const BulkStore& s, const std::vector<uint8_t>& same) {
  const BufferDesc& d = run_.global(s.global_buffer);
  if (!run_.options().detectors || d.read_only) return;
  const WarpRequest req =
      one_thread_request(s.global_buffer, Access::kStore, s.global_site, s.thread, warp_size_);
  Resolved r;
  r.ok = 1;
  for (size_t j = 0; j < s.gflats.size(); ++j) {
    if (s.gflats[j] < 0) continue;
    r.flat[0] = s.gflats[j];
    check_global(req, r, d, same[j] ? 1 : 0);
  }
}

void BlockSim::tma_global_reads(int thread, int site, int buffer,
                                const std::vector<int64_t>& flats) {
  const BufferDesc& d = run_.global(buffer);
  if (!run_.options().detectors || d.read_only) return;
  const WarpRequest req = one_thread_request(buffer, Access::kLoad, site, thread, warp_size_);
  Resolved r;
  r.ok = 1;
  for (int64_t g : flats) {
    r.flat[0] = g;
    check_global(req, r, d, 0);
  }
}

void BlockSim::bulk_global_race(const WarpRequest& req, const BufferDesc& d, int64_t e, int t) {
  auto it = bulk_writes_.find(bulk_key(req.buffer, e));
  if (it == bulk_writes_.end()) return;
  const BulkRead store = it->second;
  const bool load = req.access == Access::kLoad;
  findings_.add(FindingKind::kAsyncRace, false, d.name, store.site, req.site, [&] {
    Finding f;
    f.element = d.index_string(e);
    f.threads = {store.thread, t};
    f.blocks = {block_index_};
    f.message = "TMA store race on global " + d.name + f.element + " in block " +
                block_string(block_index_) + ": " + thread_words(t) +
                (load ? " reads it by " : " writes it by ") + site_words(req.site) +
                " while the TMA store that " + thread_words(store.thread) + " issued (" +
                site_words(store.site) + ") writes it and has not completed; " +
                (load ? "the read may see the old value. "
                      : "the store may land after this write and replace it. ") +
                "Wait for the store (T.tma_store_wait(0) in the issuing thread, then "
                "T.sync_threads() when other threads touch its elements) first";
    return f;
  });
}

void BlockSim::bulk_overwrite(const BlockBuffer& b, int buffer, int64_t e, int t, int site) {
  auto it = bulk_reads_.find(bulk_key(buffer, e));
  if (it == bulk_reads_.end()) return;
  const BulkRead read = it->second;
  const BufferDesc& d = b.desc;
  findings_.add(FindingKind::kAsyncRace, false, d.name, read.site, site, [&] {
    Finding f;
    f.element = d.index_string(e);
    f.threads = {read.thread, t};
    f.blocks = {block_index_};
    f.message = "TMA store race on shared " + d.name + f.element + " in block " +
                block_string(block_index_) + ": " + thread_words(t) + " writes it by " +
                site_words(site) + " while the TMA store that " + thread_words(read.thread) +
                " issued (" + site_words(read.site) +
                ") may still read it; the store may copy the new value to global memory. "
                "Wait for the store (T.tma_store_wait(0) in the issuing thread, then "
                "T.sync_threads() when other threads write) before writing its source";
    return f;
  });
}

}  // namespace tessel::sim
