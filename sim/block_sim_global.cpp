// The global-memory detectors of one block: races between threads of the block between two of
// its barriers (BlockGlobalShadow) and races between blocks of the launch (GlobalShadow). Both
// see global loads and plain stores only; atomics are exempt. A conflict of both kinds on one
// access is reported twice, once per kind of race: the fixes differ.
#include <bit>

#include "sim/block_sim.h"

namespace tessel::sim {

namespace {

/// Tells a race between threads of one block from one between blocks at the same two sites.
constexpr int kWithinBlock = 1;

}  // namespace

void BlockSim::check_global(const WarpRequest& req, const Resolved& r, const BufferDesc& d,
                            uint64_t same) {
  GlobalShadow& shadow = run_.shadow();
  const bool load = req.access == Access::kLoad;
  for (uint64_t m = r.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int t = req.first_thread + lane;
    int n = lane_vector(req, lane);
    bool lane_same = (same >> lane) & 1;
    for (int j = 0; j < n; ++j) {
      int64_t e = r.flat[lane] + j;
      if (!bulk_writes_.empty()) bulk_global_race(req, d, e, t);
      std::optional<BlockConflict> in_block =
          load ? block_global_.read(req.buffer, e, t, req.site)
               : block_global_.write(req.buffer, e, t, req.site, lane_same);
      if (in_block) global_race_in_block(req, d, e, t, *in_block);
      if (turn_ >= 0) {
        held_.push_back(
            {e, load ? 0 : read_global_(req.buffer, e), req.buffer, t, req.site, req.access});
        if (held_.size() >= kMaxHeld) commit_global();
        continue;
      }
      std::optional<GlobalConflict> across =
          load ? shadow.read(req.buffer, e, block_, t, req.site)
               : shadow.write(req.buffer, e, block_, t, req.site, lane_same);
      if (across) global_race_across_blocks(req.site, req.access, d, e, t, *across);
    }
  }
}

void BlockSim::commit_global() {
  if (turn_ < 0) return;
  if (!in_turn_) {
    run_.wait_turn(turn_);
    in_turn_ = true;
  }
  GlobalShadow& shadow = run_.shadow();
  for (const HeldAccess& h : held_) {
    std::optional<GlobalConflict> across =
        h.access == Access::kLoad
            ? shadow.read(h.buffer, h.flat, block_, h.thread, h.site)
            : shadow.write_in_turn(h.buffer, h.flat, block_, h.thread, h.site, h.value);
    if (across)
      global_race_across_blocks(h.site, h.access, run_.global(h.buffer), h.flat, h.thread, *across);
  }
  held_.clear();
}

void BlockSim::global_race_in_block(const WarpRequest& req, const BufferDesc& d, int64_t e, int t,
                                    const BlockConflict& c) {
  findings_.add(
      c.kind, c.benign, d.name, c.site, req.site,
      [&] {
        Finding f;
        f.element = d.index_string(e);
        f.threads = {c.thread, t};
        f.blocks = {block_index_};
        std::string where =
            "global " + d.name + f.element + " in block " + block_string(block_index_) + ": ";
        std::string me = thread_words(t), them = thread_words(c.thread);
        if (c.kind == FindingKind::kWriteConflict) {
          f.message = "write conflict on " + where + them + " (by " + site_words(c.site) +
                      ") and " + me + " (by " + site_words(req.site) +
                      ") write different values to it between the same two barriers; which "
                      "value remains is undefined. Let one thread write it, add "
                      "T.sync_threads() between the writes, or combine the values with an "
                      "atomic (T.atom_add)";
        } else if (c.benign) {
          f.message = "benign race on " + where + them + " (by " + site_words(c.site) + ") and " +
                      me + " (by " + site_words(req.site) +
                      ") write it between the same two barriers, with the same value";
        } else if (c.with_write) {
          f.message = "race on " + where + me + " reads it by " + site_words(req.site) + " after " +
                      them + " wrote it by " + site_words(c.site) +
                      ", with no T.sync_threads() between them; on a GPU the read may see the "
                      "old or the new value. Add T.sync_threads() between the write and the "
                      "read, or let one thread do both (an atomic for a read-modify-write)";
        } else {
          f.message = "race on " + where + me + " writes it by " + site_words(req.site) +
                      " after " + them + " read it by " + site_words(c.site) +
                      ", with no T.sync_threads() between them; on a GPU the read may see the "
                      "new value. Add T.sync_threads() between the read and the write, or let "
                      "one thread write (an atomic for a read-modify-write)";
        }
        return f;
      },
      kWithinBlock);
}

void BlockSim::global_race_across_blocks(int site, Access access, const BufferDesc& d, int64_t e,
                                         int t, const GlobalConflict& c) {
  run_.note_cross_block();
  const Toucher& o = c.other;
  findings_.add(c.kind, c.benign, d.name, o.site, site, [&] {
    Finding f;
    f.element = d.index_string(e);
    std::string other_block =
        o.several ? "several other blocks" : "block " + block_string(run_.block_index(o.block));
    f.threads = {o.several ? -1 : o.thread, t};
    f.blocks = {o.several ? std::vector<int64_t>{} : run_.block_index(o.block), block_index_};
    std::string me = "thread " + std::to_string(t) + " of block " + block_string(block_index_);
    std::string them =
        o.several ? other_block : "thread " + std::to_string(o.thread) + " of " + other_block;
    std::string their_site = o.site >= 0 ? " by " + site_words(o.site) : "";
    if (c.kind == FindingKind::kWriteConflict) {
      f.message = "write conflict on global " + d.name + f.element + ": " + me + " writes it by " +
                  site_words(site) + " and " + them + " wrote a different value" + their_site +
                  "; blocks run in no fixed order, so the result depends on scheduling. Give "
                  "each block its own output elements, or combine them with an atomic";
    } else if (c.benign) {
      f.message = "benign race on global " + d.name + f.element + ": " + me + " (by " +
                  site_words(site) + ") and " + them + their_site + " write it with the same value";
    } else if (access == Access::kLoad) {
      f.message = "race on global " + d.name + f.element + ": " + me + " reads it by " +
                  site_words(site) + " while " + them + " writes it" + their_site +
                  "; blocks of one launch run in no fixed order, so the read may see "
                  "either value. Do not read what another block writes in the same launch";
    } else {
      f.message = "race on global " + d.name + f.element + ": " + me + " writes it by " +
                  site_words(site) + " while " + them + " read" + (o.several ? "" : "s") + " it" +
                  their_site +
                  "; blocks of one launch run in no fixed order, so the read may see either "
                  "value. Do not write what another block reads in the same launch";
    }
    return f;
  });
}

}  // namespace tessel::sim
