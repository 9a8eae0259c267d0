// The hardware models of one thread block: its shared memory (bank wavefronts, races between
// barriers, uninitialised reads, cp.async destinations in flight), its threads' registers
// (uninitialised reads), its view of global memory (sectors, races between its threads and
// across blocks), its barriers and its asynchronous copies. The interpreter presents one
// warp-wide request per instruction:
//
//   Resolved r = sim.resolve(req);   // bounds at the logical shape -> flat element per lane
//   ... read or write the elements of the lanes in r.ok ...
//   sim.observe(req, r, same_value); // counters and detectors
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/async_copies.h"
#include "sim/block_global_shadow.h"
#include "sim/findings.h"
#include "sim/sim_run.h"
#include "sim/sim_types.h"

namespace tessel::sim {

/// A warp's state at the end of a barrier round: waiting at a barrier site, or finished.
struct Arrival {
  int warp = 0;
  int site = -1;      ///< the barrier it waits at; -1 when the warp has finished
  uint64_t mask = 0;  ///< lanes that arrived
  uint64_t live = 0;  ///< lanes the warp has
};

/// A register a wgmma writes when it is waited for: `bits` into element `flat` of local buffer
/// `buffer` of thread `thread`.
struct RegisterWrite {
  int buffer = -1;
  int thread = 0;
  int64_t flat = 0;
  uint64_t bits = 0;
};

/// A register a wgmma reads (the A fragment of wgmma_rs): element `flat` of local buffer
/// `buffer` of thread `thread`.
struct RegisterRead {
  int buffer = -1;
  int thread = 0;
  int64_t flat = 0;
};

class BlockSim {
 public:
  BlockSim(SimRun& run, uint32_t block_linear, int threads);
  ~BlockSim();  ///< finishes the block's turn, if it has one
  BlockSim(const BlockSim&) = delete;
  BlockSim& operator=(const BlockSim&) = delete;

  /// Gives the block turn `turn` (SimRun::wait_turn): its loads and stores of global memory are
  /// held and checked against other blocks' in turn order, by commit_global. `read_global` gives
  /// the value a store left in global memory (the element's cell), for the same-value rule.
  void set_turn(int64_t turn, std::function<uint64_t(int buffer, int64_t flat)> read_global);
  /// Waits for the block's turn and checks the held global accesses against the other blocks'
  /// (at the end of the block, and whenever kMaxHeld are held; from then on the block keeps
  /// its turn until it is destroyed).
  void commit_global();

  /// Registers a shared buffer (shape per block) or a local one (shape per thread); ids follow
  /// the global ones. Shared buffers start uninitialised.
  int add_buffer(BufferDesc desc);
  const BufferDesc& buffer(int id) const {
    return id < num_globals_ ? run_.global(id) : buffers_[id - num_globals_].desc;
  }

  /// Checks every active lane's run of elements against the buffer's logical shape (oob finding
  /// for those outside; they are dropped from `ok`) and computes flat element indices.
  Resolved resolve(const WarpRequest& req);
  /// Counts the request (shared: bank wavefronts; global: sectors and lines) and runs the
  /// detectors for the lanes in `r.ok`. For stores, bit l of `same_value` says lane l wrote the
  /// value the element already held (a same-value write is benign).
  void observe(const WarpRequest& req, const Resolved& r, uint64_t same_value = 0);

  /// One barrier round: every warp either waits at a barrier or has finished. Records
  /// barrier_divergence when warps wait at different barriers, lanes of a warp are missing, or
  /// some warps finished while others wait; then starts a new barrier interval.
  void barrier(const std::vector<Arrival>& arrivals);
  /// A warp-collective instruction (mma, ldmatrix) executed by only `mask` of `live` lanes.
  void partial_warp(int warp, int site, uint64_t mask, uint64_t live, int first_thread);
  /// Lane `lane` of `req` starts at byte `offset` of its buffer, not a multiple of `width`, the
  /// size its access needs aligned: cp.async and ldmatrix fault on a GPU (an error); a
  /// T.vectorized run (`benign`) is issued as scalar accesses instead of one vector.
  void misaligned(const WarpRequest& req, int lane, int64_t offset, int width, bool benign);
  /// A shuffle in which `thread` reads lane `src_lane`, which is inactive (undefined value).
  void inactive_shuffle_source(int site, int thread, int src_lane);

  /// cp.async: queues `cells` for elements [flat, flat + n) of shared buffer `buffer`, marking
  /// them in flight.
  void async_issue(int thread, int site, int buffer, int64_t flat, std::vector<uint64_t> cells);
  void async_commit(int thread);
  /// cp.async.wait_group n: the copies that land now (the caller writes their data); the
  /// detectors see them as stores by the issuing thread.
  std::vector<AsyncCopy> async_wait(int thread, int n);
  /// Every copy still in flight (end of the block); landed without detector checks.
  std::vector<AsyncCopy> async_drain();

  /// mbarriers (block_sim_mbarrier.cpp), keyed by their shared element. The first init turns on
  /// happens-before tracking: each thread keeps a vector clock, an arrive releases the thread's
  /// clock into the barrier's phase, a wait that passes acquires the completed phase's, and two
  /// accesses between the same T.sync_threads() conflict only when neither happens before the
  /// other. Kernels without mbarriers keep the barrier-interval rules alone.
  void mbar_init(int thread, int site, int buffer, int64_t flat, int64_t count);
  /// Adds `tx` expected bytes to the current phase, then one arrival when `arrive`.
  void mbar_arrive(int thread, int site, int buffer, int64_t flat, int64_t tx, bool arrive);
  /// True when the phase of parity `parity` has completed (no side effect).
  bool mbar_phase_done(int buffer, int64_t flat, int64_t parity) const;
  /// mbar_phase_done, and on success `thread` acquires the completed phase's clock. A wait on a
  /// barrier nobody initialised is an mbarrier finding (and passes, so the run goes on).
  bool mbar_try_wait(int thread, int site, int buffer, int64_t flat, int64_t parity);
  /// A TMA copy issued by `thread` lands in `flats` of shared `buffer` and completes its bytes on
  /// the mbarrier at (`bar_buffer`, `bar_flat`). The cells count as written by that barrier's
  /// async proxy in the barrier's current phase: a thread that has not waited for the phase and
  /// reads them makes a TMA race (async_race). The write itself must come after the reads and
  /// writes before it, as a store by `thread` would.
  void tma_write(int thread, int site, int buffer, const std::vector<int64_t>& flats,
                 int bar_buffer, int64_t bar_flat);
  /// wgmma.mma_async (block_sim_wgmma.cpp). Warp `warp`'s operation, issued at `site` by
  /// `thread` (its first lane), reads the shared elements `reads` (buffer, flat) through the async
  /// proxy from issue until the wgmma.wait_group that retires its group: a write to one of them
  /// meanwhile, by any thread, is a wgmma race (kWgmmaRace). Its accumulator results `writes`
  /// land in the registers at that wait. The reads are no per-lane requests: they count no bank
  /// wavefronts (the async proxy reads whole lines), but an element nobody wrote is uninit.
  /// The A registers of wgmma_rs (`a_regs`) and the accumulators are the operation's until that
  /// wait too: the thread's own code writing one of them (or reading an accumulator) meanwhile
  /// is a wgmma race on the register.
  void wgmma_issue(int warp, int thread, int site,
                   const std::vector<std::pair<int, int64_t>>& reads,
                   std::vector<RegisterRead> a_regs, std::vector<RegisterWrite> writes);
  /// fence.proxy.async by `thread`. Shared memory written through the generic proxy (stores,
  /// landed cp.async) and then read through the async proxy (a wgmma's descriptors, a TMA
  /// store's source) needs such a fence on the way from the write to the read: the writer's,
  /// after the write and ordered before the read (by a barrier or an mbarrier phase), or the
  /// reader's, after the write was ordered before it. Without one the read is a proxy_fence
  /// finding (block_sim_proxy.cpp).
  void fence_proxy_async(int thread);
  /// wgmma.fence by warp `warp`: the registers its threads' code accessed so far are ordered
  /// before the warp's next wgmma. A wgmma whose accumulator or A register the thread's code
  /// accessed after the warp's last wgmma.fence — or a warp's first wgmma with no wgmma.fence
  /// before it — is a wgmma_fence finding (PTX ISA, wgmma.fence).
  void wgmma_fence(int warp);
  /// The newest accumulator value of (buffer, thread, flat) that a pending wgmma of the thread's
  /// warp will write, or nullopt (the register holds the current value).
  std::optional<uint64_t> wgmma_pending_value(int buffer, int thread, int64_t flat) const;
  /// wgmma.commit_group: closes the warp's open group (an empty group when nothing is open).
  void wgmma_commit(int warp);
  /// wgmma.wait_group n: retires every committed group of the warp but the newest `n`; returns
  /// their register writes, oldest first, for the caller to apply.
  std::vector<RegisterWrite> wgmma_wait(int warp, int n);
  /// wgmma operations issued and not yet retired, over all warps.
  int64_t wgmma_in_flight() const;
  /// Warp `warp` has ended (finished the kernel). Each wgmma it issued that no wgmma.wait_group
  /// retired — committed and not waited for, or never committed — is a wgmma_unwaited finding
  /// (one per wgmma site and state, counted per warp and operation): its results never reach
  /// the accumulators, which hold undefined values on a GPU. The operations are dropped.
  void wgmma_warp_end(int warp);

  /// TMA stores (block_sim_bulk.cpp). `thread` issues a store whose async proxy reads `flats`
  /// of shared `buffer` until the thread's bulk wait retires its group: the reads count now as
  /// loads by `thread` (races with writes the thread is not ordered after, uninitialised
  /// cells), and a write to any of them before that wait is a TMA store race (async_race).
  void bulk_store(int thread, int site, int buffer, const std::vector<int64_t>& flats,
                  BulkStore store);
  /// cp.async.bulk.commit_group: closes the thread's open group of stores.
  void bulk_commit(int thread);
  /// cp.async.bulk.wait_group.read n: retires all but the n newest committed groups; returns
  /// their stores, whose global writes land now (the caller writes them).
  std::vector<BulkStore> bulk_wait(int thread, int n);
  /// A TMA load by `thread` read `flats` of global `buffer` at `site`: checked as loads by the
  /// thread (races with the block's other threads since its last barrier, with other blocks,
  /// and with the block's TMA stores in flight).
  void tma_global_reads(int thread, int site, int buffer, const std::vector<int64_t>& flats);
  /// Every store still in flight (end of the block), to land.
  std::vector<BulkStore> bulk_drain();
  /// A TMA store's global writes landed (the caller wrote them; `same[j]`: element j already
  /// held its value): checked as stores by the issuing thread at its site — races with the
  /// block's other threads since its last barrier and with other blocks. Until it lands, any
  /// access of the block to one of its global elements is a TMA store race (async_race).
  void bulk_landed(const BulkStore& store, const std::vector<uint8_t>& same);
  /// The barrier's state in words: "'full[1]' is in phase 2 (parity 0) with 64 of 128
  /// arrivals (threads 0-63), 0 of 0 expected transaction bytes landed".
  std::string mbar_state(int buffer, int64_t flat) const;
  /// Counts changes of any barrier's state (the interpreter's progress test).
  uint64_t mbar_changes() const { return mbar_changes_; }
  /// Records a deadlock: `message` says who waits where; `site_a`/`site_b` are two wait sites.
  void deadlock(const std::string& message, int thread, int site_a, int site_b);

  const std::vector<Counters>& counters() const { return per_site_; }
  /// With SimOptions::bank_samples: per site, this block's costliest shared request.
  const std::vector<BankSample>& bank_samples() const { return worst_bank_; }
  const FindingLog& findings() const { return findings_; }
  uint32_t block_linear() const { return block_; }
  /// Barrier intervals so far (starts at 1).
  uint32_t epoch() const { return epoch_; }
  /// Barrier rounds executed so far (rounds in which some warp waited at a barrier).
  int64_t barrier_rounds() const { return epoch_ - 1; }
  /// Bytes of cp.async copies issued so far (their shared destinations).
  int64_t async_bytes() const { return async_bytes_; }
  /// The most cp.async bytes the block can have in flight (issued, not landed) at one instant:
  /// between two barriers the warps run in any order, so per barrier interval it is the sum over
  /// threads of each thread's own peak in that interval; this is the maximum over intervals,
  /// the open one included. It does not depend on the order the simulator runs warps in.
  int64_t max_async_in_flight() const;

 private:
  /// Shadow state of one shared-memory element.
  struct Cell {
    uint32_t w_epoch = 0, r_epoch = 0;  ///< interval of the last write / read (0: never)
    int32_t writer = -1, reader = -1, reader2 = -1;
    int32_t w_site = -1, r_site = -1, r_site2 = -1;
    uint32_t w_clock = 0, r_clock = 0, r_clock2 = 0;  ///< the accessors' own clocks (mbarriers)
    uint32_t w_fences = 0;  ///< fence.proxy.async the writer had run before the write
    uint16_t pending = 0;   ///< cp.async copies in flight onto this element
    uint16_t wgmma = 0;     ///< wgmma operations in flight that read this element
    int32_t wgmma_site = -1, wgmma_thread = -1;  ///< the newest of them
    int16_t async_site = -1;
    int32_t async_thread = -1;
    bool init = false;
    /// The last generic-proxy write was a shared atomic, kept in BlockBuffer::atomic_writes (the
    /// fields above keep the last plain write, for the race rules, which exempt atomics).
    bool atomic = false;
  };
  /// A write through the generic proxy, as the proxy fence rules need it.
  struct GenericWrite {
    int32_t thread = -1, site = -1;
    uint32_t epoch = 0, clock = 0;
    uint32_t fences = 0;  ///< fence.proxy.async the writer had run before the write
  };
  /// Flags of one register (local buffers' `init`, one byte per thread and element).
  static constexpr uint8_t kRegInit = 1;        ///< written
  static constexpr uint8_t kRegWgmmaWrite = 2;  ///< a pending wgmma writes it (accumulator)
  static constexpr uint8_t kRegWgmmaRead = 4;   ///< a pending wgmma reads it (A of wgmma_rs)
  /// Accessed (read or written) by the thread's code since its warp's last wgmma.fence; only
  /// kept for warps that executed one.
  static constexpr uint8_t kRegUnfenced = 8;
  static constexpr uint8_t kRegUnfencedWrite = 16;  ///< ... and written
  struct BlockBuffer {
    BufferDesc desc;
    std::vector<Cell> cells;    ///< shared buffers
    std::vector<uint8_t> init;  ///< local buffers: [thread * size + flat], kReg* flags
    /// Local buffers a wgmma uses, per register as `init` (sized at the first wgmma): the
    /// newest value a pending wgmma writes, how many pending wgmmas write it and read it.
    std::vector<uint64_t> wgmma_value;
    std::vector<uint16_t> wgmma_writes, wgmma_reads;
    /// Per register as `init` (sized at the first wgmma.fence): the site of the access that set
    /// kRegUnfenced (the first write since the fence, else the first read).
    std::vector<int32_t> unfenced_site;
    /// Shared buffers, per cell (sized at the first atomic on the buffer): its last atomic
    /// update, which counts as a generic-proxy write while Cell::atomic is set.
    std::vector<GenericWrite> atomic_writes;
    int64_t size = 0;
    size_t reg(int thread, int64_t flat) const {
      return static_cast<size_t>(thread) * static_cast<size_t>(size) + static_cast<size_t>(flat);
    }
  };

  void count(const WarpRequest& req, const Resolved& r, const BufferDesc& desc);
  /// Keeps the request as its site's bank sample when its worst phase is the costliest yet.
  void keep_bank_sample(const WarpRequest& req, const Resolved& r, const BufferDesc& desc,
                        const std::array<int64_t, kMaxLanes>& addr, int width, bool write,
                        const BankCount& count);
  void check_shared(const WarpRequest& req, const Resolved& r, BlockBuffer& b, uint64_t same);
  void check_local(const WarpRequest& req, const Resolved& r, BlockBuffer& b);
  /// Reports the lanes whose address is not a multiple of req.align (their first only).
  void check_alignment(const WarpRequest& req, const Resolved& r, const BufferDesc& d);
  void check_global(const WarpRequest& req, const Resolved& r, const BufferDesc& desc,
                    uint64_t same);
  void global_race_in_block(const WarpRequest& req, const BufferDesc& d, int64_t e, int t,
                            const BlockConflict& c);
  void global_race_across_blocks(int site, Access access, const BufferDesc& d, int64_t e, int t,
                                 const GlobalConflict& c);
  void shared_store(BlockBuffer& b, int64_t e, int thread, int site, bool same);
  /// A shared atomic by `thread` at `site` updates element `e` of `b`: exempt from the race
  /// rules, but a generic-proxy write for the proxy fence rules.
  void shared_atomic(BlockBuffer& b, int64_t e, int thread, int site);
  /// A write by `thread` at `site` to element `e` of `b`, which a wgmma in flight reads.
  void wgmma_race(BlockBuffer& b, int64_t e, int thread, int site, bool copy);
  /// An access by thread `t` at `site` to register `e` of `b` that a pending wgmma reads (A of
  /// wgmma_rs) or writes (an accumulator).
  void wgmma_register_race(const BlockBuffer& b, int64_t e, int t, int site, bool write,
                           uint8_t flags);
  /// The async proxy reads element `e` of shared buffer `b` for `reader` (the first of `count`
  /// threads issuing it together: a wgmma's warp, a TMA store's thread) at `site`, as `what`
  /// ("the wgmma of warp 0"): a proxy_fence finding when its last generic write was not fenced.
  void check_proxy_fence(const BlockBuffer& b, int64_t e, int reader, int count, int site,
                         const std::string& what);
  /// Thread `t`'s code accesses (`write` or reads) register `i` of local buffer `b` at `site`:
  /// marks it unfenced when the thread's warp executed a wgmma.fence.
  void mark_unfenced(BlockBuffer& b, size_t i, int site, bool write);
  /// Registers of `regs` (RegisterRead or RegisterWrite) accessed by the thread's code since the
  /// warp's last wgmma.fence, which the wgmma of `warp` at `site` accesses: wgmma_fence findings.
  template <typename Regs>
  void check_wgmma_fence(const Regs& regs, int warp, int site);
  /// One wgmma operation in flight: the shared elements and registers it reads, its register
  /// results.
  struct WgmmaOp {
    int site = -1, thread = -1;  ///< where it was issued, and its warp's first thread
    std::vector<std::pair<int, int64_t>> reads;
    std::vector<RegisterRead> a_regs;
    std::vector<RegisterWrite> writes;
  };
  struct WgmmaWarp {
    std::vector<WgmmaOp> open;
    std::deque<std::vector<WgmmaOp>> committed;
  };
  void wgmma_retire(std::vector<WgmmaOp>& group, std::vector<RegisterWrite>& out);
  /// Sum over threads of their peak bytes in flight in the current barrier interval.
  int64_t interval_in_flight() const;
  /// True when thread `a`'s access at its clock `clock` happens before `t`'s next access
  /// through mbarriers (false while no mbarrier was initialised).
  bool ordered(int a, uint32_t clock, int t) const {
    return hb_ && a >= 0 && a < static_cast<int>(vc_[t].size()) && vc_[t][a] >= clock;
  }
  uint32_t own_clock(int t) const { return hb_ ? vc_[t][t] : 0; }
  /// True when every read recorded in `c` other than `t`'s own happens before `t`'s next access.
  bool read_ordered(const Cell& c, int t) const;
  struct Mbarrier {
    bool init = false;
    int init_site = -1, init_thread = -1;
    int64_t count = 0;                 ///< arrivals each phase expects
    int64_t pending = 0;               ///< arrivals the current phase still needs
    int64_t tx = 0;                    ///< transaction bytes the current phase still needs
    int64_t tx_expected = 0;           ///< bytes expected in the current phase (messages)
    uint32_t phase = 0;                ///< phases completed
    int index = 0;                     ///< its async proxy's clock: column threads_ + index
    std::vector<int> arrived;          ///< threads arrived in the current phase
    std::vector<uint32_t> clock;       ///< join of their clocks
    std::vector<uint32_t> done_clock;  ///< the last completed phase's
  };
  Mbarrier* find_mbar(int buffer, int64_t flat, int thread, int site, const char* what);
  void mbar_maybe_complete(Mbarrier& m);
  std::string thread_words(int thread) const;
  std::string site_words(int site) const;
  int lane_vector(const WarpRequest& req, int lane) const {
    return req.lane_vector ? req.lane_vector[lane] : req.vector;
  }

  SimRun& run_;
  uint32_t block_;
  std::vector<int64_t> block_index_;
  int threads_;
  int warp_size_;
  int num_globals_;
  uint32_t epoch_ = 1;
  std::vector<BlockBuffer> buffers_;
  BlockGlobalShadow block_global_;  ///< global elements touched since the last barrier
  std::vector<Counters> per_site_;
  std::vector<BankSample> worst_bank_;  ///< SimOptions::bank_samples only
  FindingLog findings_;
  /// A global access held for the block's turn.
  struct HeldAccess {
    int64_t flat;
    uint64_t value;  ///< stores: the value left in memory
    int32_t buffer, thread, site;
    Access access;
  };
  static constexpr size_t kMaxHeld = size_t{1} << 20;
  std::vector<HeldAccess> held_;
  int64_t turn_ = -1;  ///< -1: no turn, accesses are checked at once
  bool in_turn_ = false;
  std::function<uint64_t(int, int64_t)> read_global_;
  AsyncCopyEngine async_;
  int64_t async_bytes_ = 0;
  std::vector<int64_t> in_flight_;    ///< per thread: cp.async bytes issued and not landed
  std::vector<int64_t> peak_;         ///< per thread: the most of in_flight_ in this interval
  int64_t max_in_flight_closed_ = 0;  ///< the maximum over finished intervals
  std::map<std::pair<int, int64_t>, Mbarrier> mbars_;
  bool hb_ = false;                        ///< some mbarrier was initialised
  std::vector<std::vector<uint32_t>> vc_;  ///< per thread: its vector clock (hb_ only)
  uint64_t mbar_changes_ = 0;
  int mbar_count_ = 0;  ///< barriers initialised (their async-proxy clock columns)
  std::vector<std::string> proxy_names_;  ///< per column past threads_: the barrier's name
  std::map<int, WgmmaWarp> wgmma_;        ///< per warp with wgmma operations in flight
  std::vector<uint8_t> wgmma_fenced_;     ///< per warp: it executed a wgmma.fence (else empty)
  /// One fence.proxy.async of a thread: the barrier interval, the thread's own clock and the
  /// mbarrier phases it had acquired when it ran.
  struct ProxyFence {
    uint32_t epoch = 0, clock = 0, acquires = 0;
  };
  std::vector<std::vector<ProxyFence>> proxy_fences_;  ///< per thread, in order (empty: none ran)
  std::vector<uint32_t> acquires_;  ///< per thread: phases acquired since the first fence
  /// TMA stores in flight: per thread its open group and its committed groups (oldest first),
  /// and per shared cell being read (buffer << 40 | flat) the store reading it.
  struct BulkGroups {
    std::vector<BulkStore> open;
    std::vector<std::vector<BulkStore>> committed;
  };
  struct BulkRead {
    int thread = 0, site = -1, count = 0;
  };
  std::map<int, BulkGroups> bulk_;
  std::unordered_map<uint64_t, BulkRead> bulk_reads_;
  /// Per global element (buffer << 40 | flat) a TMA store in flight writes: the newest store.
  std::unordered_map<uint64_t, BulkRead> bulk_writes_;
  static uint64_t bulk_key(int buffer, int64_t flat) {
    return (static_cast<uint64_t>(buffer) << 40) | static_cast<uint64_t>(flat);
  }
  void bulk_release(const BulkStore& s);
  /// A write by `t` at `site` to an element a TMA store still reads: a TMA store race.
  void bulk_overwrite(const BlockBuffer& b, int buffer, int64_t e, int t, int site);
  /// An access of global element `e` of `d` by `t` at `site` while a TMA store of the block that
  /// writes it is in flight: a TMA store race.
  void bulk_global_race(const WarpRequest& req, const BufferDesc& d, int64_t e, int t);
};

}  // namespace tessel::sim
