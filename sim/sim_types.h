// The vocabulary of the hardware models: memory spaces, buffers as address ranges, the sites
// (instructions) accesses come from, one warp-wide request, counters and findings. sim/ knows
// nothing of IR statements: the interpreter describes each instruction once (a Site) and then
// presents requests that name the site by number.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tessel::sim {

/// The most lanes a warp can have (AMD wave64).
constexpr int kMaxLanes = 64;

enum class Space : uint8_t {
  kGlobal,  ///< device memory, shared by every block
  kShared,  ///< per-block shared memory / LDS
  kLocal,   ///< per-thread registers (local and fragment buffers)
};
const char* space_name(Space space);

/// A buffer as the models see it: a row-major array of `dtype` at byte address `base`.
struct BufferDesc {
  std::string name;
  Space space = Space::kGlobal;
  DataType dtype;
  std::vector<int64_t> shape;  ///< the logical shape bounds are checked against
  int64_t base = 0;            ///< byte address of element 0 (shared: offset in the block's pool)
  /// Global buffers no instruction of the launch writes: a load of one can race with nothing,
  /// so the global race detectors skip its loads (and it takes no stores).
  bool read_only = false;

  int64_t size() const;
  /// Bits of one element in memory.
  int element_bits() const { return dtype.storage_bits() * dtype.lanes; }
  /// Byte address of element `flat` (4-bit types: two elements a byte).
  int64_t address(int64_t flat) const { return base + flat * element_bits() / 8; }
  /// "[3, 17]": the multi-index of element `flat`.
  std::string index_string(int64_t flat) const;
  /// "(64, 32)".
  std::string shape_string() const;
};

/// One instruction of the kernel that touches memory (or synchronises), described in words.
struct Site {
  std::string access;     ///< "load", "store", "ldmatrix", "cp.async", "mma", "T.sync_threads()"
  std::string buffer;     ///< the buffer it touches ("" for barriers)
  std::string statement;  ///< the statement as printed: `B[tx] = A_s[tx + 1]`
  std::string loc;        ///< "file:line:col" of the statement or of the nearest enclosing one
  std::string within;     ///< "" when `loc` is the statement's own, else the enclosing
                          ///< statement's keyword ("for", "if", "kernel")

  /// "load of A_s in `B[tx] = A_s[tx + 1]` (at bugs.cpp:40:3)", or "(in the `for` at ...)".
  std::string describe() const;
};

/// What a request does to the elements it names.
enum class Access : uint8_t {
  kLoad,        ///< reads
  kStore,       ///< writes
  kAtomic,      ///< read-modify-write that is atomic (exempt from race detection)
  kAsyncWrite,  ///< the shared destination of cp.async: counted now, written when it lands
};

/// One warp-wide memory instruction: the active lanes, the element each lane starts at and how
/// many consecutive elements it touches.
struct WarpRequest {
  int buffer = -1;  ///< id from BlockSim::add_buffer / SimRun::add_global
  Access access = Access::kLoad;
  int site = -1;
  uint64_t mask = 0;     ///< active lanes
  int warp = 0;          ///< warp index in the block
  int first_thread = 0;  ///< thread index (in the block) of lane 0
  int vector = 1;        ///< consecutive elements per lane (a 16-byte copy of f16: 8)
  /// Optional per-lane element counts (cp.async with src_size < bytes); overrides `vector`.
  const uint8_t* lane_vector = nullptr;
  /// index[d][lane]: the multi-index each lane starts at, one array per dimension.
  std::array<const int64_t*, 8> index{};
  bool ldmatrix = false;  ///< shared bank phases of ldmatrix (one 8-lane group per matrix)
  /// A wgmma's own register operand (A of wgmma_rs, the accumulators): the tensor core reads
  /// and writes it, not the thread's code.
  bool wgmma = false;
  /// The instruction needs each lane's first byte address to be a multiple of this (cp.async:
  /// its size; ldmatrix: 16 per row); 0 or 1: no requirement.
  int align = 0;
};

/// The result of bounds checking a request: lanes inside the logical shape and their flat index.
struct Resolved {
  uint64_t ok = 0;
  std::array<int64_t, kMaxLanes> flat{};
};

/// Memory-traffic counters (of one site, or summed).
struct Counters {
  int64_t shared_requests = 0;
  int64_t wavefronts = 0;  ///< sum over requests of sum over phases of max distinct words/bank
  int64_t ideal_wavefronts = 0;  ///< phases with an active lane
  int64_t bank_conflicts = 0;    ///< wavefronts - ideal_wavefronts
  int64_t global_requests = 0;
  int64_t sectors = 0;        ///< distinct 32-byte sectors touched
  int64_t ideal_sectors = 0;  ///< ceil(distinct bytes / 32)
  int64_t lines = 0;          ///< distinct 128-byte lines touched
  int64_t lane_accesses = 0;  ///< active lanes over all requests

  Counters& operator+=(const Counters& o);
  friend bool operator==(const Counters&, const Counters&) = default;
};

/// The costliest request of one shared-memory site, kept so reports can draw its bank map
/// (SimOptions::bank_samples): every lane's first byte address, as count_wavefronts saw them.
struct BankSample {
  int max_degree = 0;  ///< the worst phase's wavefronts; 0 when nothing was recorded
  int access_bytes = 0;
  bool ldmatrix = false;
  bool write = false;
  uint64_t mask = 0;               ///< active lanes
  int warp = 0;                    ///< warp index in its block
  int first_thread = 0;            ///< thread index of lane 0
  uint32_t block = 0;              ///< linear block id
  int64_t buffer_base = 0;         ///< byte address of the buffer's element 0
  std::vector<int64_t> byte_addr;  ///< per lane of the warp
};

enum class FindingKind : uint8_t {
  kRace,               ///< two threads, at least one write, no barrier between (or two blocks)
  kOob,                ///< an index outside the buffer's logical shape
  kUninit,             ///< a read of shared/local storage nothing wrote (or of an inactive lane)
  kBarrierDivergence,  ///< a barrier (or warp-collective instruction) not reached by everyone
  kAsyncRace,          ///< touching a cp.async destination before the wait that lands it
  kWriteConflict,      ///< two threads writing different values to one element between barriers
  kMisaligned,  ///< an address not a multiple of the access's size (cp.async, ldmatrix, vectors)
  kDeadlock,    ///< every live warp waits (mbarrier phases, barriers) and none can move
  kMbarrier,    ///< an mbarrier used before T.mbarrier_init / with a bad count
  kWgmmaRace,   ///< a write to shared memory that an issued, not yet waited-for wgmma reads
  kWgmmaFence,  ///< a register the thread's code accessed, then a wgmma's, no wgmma.fence between
  kProxyFence,  ///< shared memory written by the generic proxy, read by the async proxy, no
                ///< fence.proxy.async between
  kWgmmaUnwaited,  ///< a wgmma still pending (not retired by wgmma.wait_group) when its warp ends
};
/// "race", "oob", "uninit", "barrier_divergence", "async_race", "write_conflict", "misaligned",
/// "deadlock", "mbarrier", "wgmma_race", "wgmma_fence", "proxy_fence", "wgmma_unwaited".
const char* finding_kind_name(FindingKind kind);

/// One problem the models found, aggregated over its occurrences: the first occurrence is
/// described in full, `count` says how many there were.
struct Finding {
  FindingKind kind = FindingKind::kRace;
  bool benign = false;  ///< same-value writes: reported, but not an error
  std::string buffer;
  std::string element;                       ///< "[3, 8]" of the first occurrence
  std::string message;                       ///< a full sentence with the fix
  std::vector<int> threads;                  ///< thread indices in their blocks (1 or 2)
  std::vector<std::vector<int64_t>> blocks;  ///< block indices involved (1 or 2)
  std::vector<int> sites;                    ///< the sites involved (1 or 2)
  int64_t count = 1;
  int64_t address = -1;  ///< misaligned: the byte offset in the buffer of the first occurrence
  int width = 0;         ///< misaligned: the access's size in bytes, which the address must divide
  /// Tells apart findings of one kind at the same sites (part of the aggregation key only).
  int variant = 0;
};

}  // namespace tessel::sim
