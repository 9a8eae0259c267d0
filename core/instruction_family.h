// The home of each instruction family. A family (mma.sync, ldmatrix, cp.async, MFMA, atomics)
// is one class in core/families/ that declares, in one place, everything the rest of Tessel knows
// about its instructions: the intrinsic-table entries (operands and their register fragments),
// the checks a call must pass, the shared and global memory each operand accesses (read by the
// bank-conflict and alignment proofs), the CUDA and HIP text codegen prints, and the execution
// semantics, written against WarpIntrinsicExec — the services the thread-level interpreter
// provides, as core/tile_exec.h does for tile operators.
//
// Adding a family: one file core/families/<family>.cpp defining a subclass and its factory, one
// line in TESSEL_INSTRUCTION_FAMILIES below, and its instructions' ids in TESSEL_INTRINSICS
// (core/intrinsics.h). Every hook is pure virtual, so the compiler names each one the new class
// leaves out, and the intrinsic table refuses to build when an id has no entry or two.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/intrinsics.h"
#include "core/stmt.h"

namespace tessel {

class WarpIntrinsicExec;

/// The source language codegen prints.
enum class Language : uint8_t { kCuda, kHip };

/// What codegen hands a family to print one call.
struct CallText {
  Language lang = Language::kCuda;
  /// The operands, printed: register and memory operands as pointers (`&C_local[4]`), values
  /// as expressions.
  std::vector<std::string> args;
  DataType dst_type;  ///< operand 0's element type (f32 when operand 0 is no buffer element)
  std::function<std::string(DataType)> c_type;  ///< codegen's C name of an element type
  /// Per operand: the buffer's name and its printed indices ("" and none for values).
  std::vector<std::string> buffers;
  std::vector<std::vector<std::string>> indices;
  /// Per operand that is an element of a shared buffer (CUDA): floor(its byte offset from the
  /// buffer's start / 16), printed and simplified ("" for other operands). The buffer's start
  /// (`buffers[i]`) is 16-byte aligned, so its shared address >> 4 plus this is the element's
  /// address >> 4 (families that address shared memory in 16-byte units: wgmma descriptors).
  std::vector<std::string> offsets16;
  /// An upper bound of every shared-memory address of the block, in bytes (0: unknown).
  int64_t shared_address_bound = 0;
};

/// The kernel parameter holding the TMA tensor map of `tensor` for a box of extents `box`
/// (printed) and a swizzle mode (bytes, core/tma_map.h): "tmap_A_64x32", "tmap_A_64x64_sw128".
/// Codegen declares one per distinct name; a TMA call passes it.
std::string tensor_map_name(const std::string& tensor, const std::vector<std::string>& box,
                            int swizzle = 0);

/// The shared- or global-memory access one operand of a call makes, as the proofs see it (the
/// simulator sees the same through WarpIntrinsicExec::resolve).
struct OperandMemoryAccess {
  int bytes = 0;          ///< bytes each lane accesses from its element's address
  int lanes = 0;          ///< lanes that give an address (0: every lane of the warp)
  bool ldmatrix = false;  ///< ldmatrix bank phases: each 8-lane group of row addresses is one
  bool banks = true;      ///< a bank-conflict question (false: the lanes serialise, atomics)
  int align = 0;          ///< each lane's first byte must be a multiple of this (0: no need)
  std::string what;       ///< the access in messages: "ldmatrix_x4 row", "cp_async_16 source"
  /// The operand's whole buffer must start at a multiple of this many bytes (0: no need):
  /// wgmma's swizzled operands, whose swizzle XORs address bits 4-9 (1024).
  int buffer_align = 0;
};

/// One instruction family. Every hook is pure virtual: a new family must answer all of them.
class InstructionFamily {
 public:
  virtual ~InstructionFamily() = default;
  /// The family's name in messages and documentation ("ldmatrix").
  virtual std::string_view name() const = 0;
  /// Its instructions: the intrinsic-table entries, each with the id TESSEL_INTRINSICS gives it.
  virtual std::vector<IntrinsicInfo> entries() const = 0;
  /// Checks a call beyond what IntrinsicCallNode::make checks for every instruction (operand
  /// count, kinds, scopes and element types); user error starting with `where` otherwise.
  virtual void check_call(const IntrinsicInfo& info, const std::vector<IntrinsicArg>& args,
                          const std::string& where) const = 0;
  /// The memory access of operand `operand` that proofs must see, or nullopt (registers,
  /// values, and memory operands that raise no bank or alignment question).
  virtual std::optional<OperandMemoryAccess> memory_access(const IntrinsicInfo& info,
                                                           size_t operand) const = 0;
  /// The device function codegen defines for `info` in `lang` ("" when the call needs none);
  /// user error when the instruction has no spelling in that language.
  virtual std::string helper(Language lang, const IntrinsicInfo& info) const = 0;
  /// The statement that calls `info`. Adds the helpers it needs to `used` (an instruction's
  /// name stands for its helper()).
  virtual std::string call(const IntrinsicInfo& info, const CallText& text,
                           std::set<std::string>& used) const = 0;
  /// Executes one call for the active lanes of one warp.
  virtual void execute(const IntrinsicInfo& info, WarpIntrinsicExec& exec) const = 0;
};

/// Every family, as X(factory): the one line a new family adds. `factory` returns the family's
/// single instance (defined in its core/families/ file).
#define TESSEL_INSTRUCTION_FAMILIES(X) \
  X(mma_sync_family)                   \
  X(ldmatrix_family)                   \
  X(cp_async_family)                   \
  X(mfma_family)                       \
  X(atomic_family)                     \
  X(mbarrier_family)                   \
  X(tma_family)                        \
  X(wgmma_family)                      \
  X(mfma_i8_cdna2_family)              \
  X(mfma_i8_cdna3_family)

#define TESSEL_FAMILY_FACTORY_(factory) const InstructionFamily& factory();
TESSEL_INSTRUCTION_FAMILIES(TESSEL_FAMILY_FACTORY_)
#undef TESSEL_FAMILY_FACTORY_

/// Every registered family, in TESSEL_INSTRUCTION_FAMILIES order.
const std::vector<const InstructionFamily*>& instruction_families();

// ---- what the thread-level interpreter provides -------------------------------------------

/// How a request touches memory (the simulator's access kinds).
enum class LaneAccess : uint8_t { kLoad, kStore, kAsyncWrite, kAtomic };

/// A warp-wide memory request of one operand.
struct OperandRequest {
  int operand = 0;
  LaneAccess access = LaneAccess::kLoad;
  uint64_t lanes = 0;                      ///< lanes that take part
  int elements = 1;                        ///< consecutive elements per lane
  const uint8_t* lane_elements = nullptr;  ///< per-lane counts overriding `elements` (or null)
  bool ldmatrix = false;                   ///< ldmatrix bank phases
  int align = 0;                           ///< see OperandMemoryAccess::align
  /// A wgmma's own register operand (A of wgmma_rs, D): accessed by the tensor core, not by
  /// the thread's code.
  bool wgmma_registers = false;
};

/// The lanes of a request whose element is in bounds, and each one's flat element position.
struct OperandLanes {
  uint64_t ok = 0;
  std::array<int64_t, 64> flat{};
};

/// The thread-level interpreter's services for executing one call of an instruction on the
/// active lanes of one warp. Cells are 64-bit: a float's value as double bits, an integer as
/// int64 (what TileExec's raw views hold after decoding).
class WarpIntrinsicExec {
 public:
  virtual ~WarpIntrinsicExec() = default;
  virtual int warp_size() const = 0;
  /// The lanes executing the call.
  virtual uint64_t mask() const = 0;
  /// Reports a warp-collective instruction executed by only part of the warp's lanes.
  virtual void require_full_warp() = 0;
  /// The element type of a buffer operand.
  virtual DataType dtype(int operand) const = 0;
  /// True when a buffer operand is in global memory.
  virtual bool is_global(int operand) const = 0;
  /// A value operand's per-lane value (integers exact, numbers as their cell bits) for `lanes`.
  virtual std::array<int64_t, 64> values(int operand, uint64_t lanes) = 0;
  /// An immediate operand's value.
  virtual int64_t immediate(int operand) const = 0;
  /// Evaluates the operand's indices and bounds-checks the request; the result says where each
  /// lane's element lives. Every resolved request must later be observed.
  virtual OperandLanes resolve(const OperandRequest& request) = 0;
  /// Shows a resolved request to the hardware models (banks, sectors, races, ...), in the order
  /// the instruction performs its accesses.
  virtual void observe(const OperandRequest& request, const OperandLanes& lanes) = 0;
  /// A lane's cell: its own register (register operands) or the block's shared element.
  virtual uint64_t& cell(int operand, int lane, int64_t flat) = 0;
  /// A global element (lock_atomics() held for read-modify-write).
  virtual uint64_t global_cell(int operand, int64_t flat) = 0;
  virtual void set_global_cell(int operand, int64_t flat, uint64_t bits) = 0;
  virtual std::unique_lock<std::mutex> lock_atomics() = 0;
  /// Adds `n` lane operations to the run's work counter.
  virtual void count_lane_ops(int64_t n) = 0;
  /// Asynchronous copies (cp.async): queue `cells` for shared operand `operand` at `flat`,
  /// close the lane's group, or land all but the `n` newest committed groups.
  virtual void async_issue(int lane, int operand, int64_t flat, std::vector<uint64_t> cells) = 0;
  virtual void async_commit(int lane) = 0;
  virtual void async_wait(int lane, int n) = 0;
  /// mbarriers (PTX ISA "mbarrier"), each a shared element of barrier operand `operand` at
  /// `flat`: init sets the arrivals each phase expects; arrive counts one arrival of `lane`
  /// (when `arrive`) after adding `tx` bytes to the transactions the current phase waits for;
  /// try_wait is true when the phase of parity `parity` has completed (the lane then sees
  /// everything the threads that completed it did before); otherwise the caller calls block().
  virtual void mbarrier_init(int lane, int operand, int64_t flat, int64_t count) = 0;
  virtual void mbarrier_arrive(int lane, int operand, int64_t flat, int64_t tx, bool arrive) = 0;
  virtual bool mbarrier_try_wait(int lane, int operand, int64_t flat, int64_t parity) = 0;
  /// The call cannot complete yet: the warp suspends and runs the call again when the barrier
  /// lane `lane` waits on has moved (a deadlock when nothing can move it).
  virtual void block(int lane, int operand, int64_t flat, int64_t parity) = 0;
  /// fence.proxy.async by `lane`: its earlier shared-memory writes become visible to the async
  /// proxy (TMA stores, wgmma).
  virtual void fence_proxy_async(int lane) = 0;
  /// The evaluated indices of element operand `operand` in `lane`, and the operand buffer's
  /// shape (for copies of a box that may hang over a tensor's edge).
  virtual std::vector<int64_t> lane_indices(int operand, int lane) = 0;
  virtual std::vector<int64_t> shape(int operand) const = 0;
  /// A TMA copy by `lane` lands `cells` at `flats` of shared operand `operand` and completes
  /// their bytes on the mbarrier of operand `bar_operand` at `bar_flat`: the cells count as
  /// written by the async proxy, visible to threads that wait for that barrier phase.
  virtual void tma_write(int lane, int operand, const std::vector<int64_t>& flats,
                         const std::vector<uint64_t>& cells, int bar_operand, int64_t bar_flat) = 0;
  /// wgmma.mma_async (core/families/wgmma.cpp). The warp's index in its block (warp w is warp
  /// w % 4 of warpgroup w / 4).
  virtual int warp_index() const = 0;
  /// The accumulator value lane `lane` holds at `flat` of register operand `operand`, counting
  /// the results of this warp's wgmma operations not yet waited for (the hardware chains
  /// operations on one accumulator).
  virtual uint64_t wgmma_accumulator(int operand, int lane, int64_t flat) = 0;
  /// One wgmma operation joins the warp's open group: it reads the shared elements `reads`
  /// ((operand, flat) pairs) and the registers `a_regs` (A of wgmma_rs: operand, lane, flat)
  /// until it is waited for, and writes `writes` ((operand, lane, flat, bits)) into the
  /// registers then.
  struct WgmmaRegister {
    int operand = 0;
    int lane = 0;
    int64_t flat = 0;
  };
  struct WgmmaWrite {
    int operand = 0;
    int lane = 0;
    int64_t flat = 0;
    uint64_t bits = 0;
  };
  virtual void wgmma_issue(const std::vector<std::pair<int, int64_t>>& reads,
                           const std::vector<WgmmaRegister>& a_regs,
                           const std::vector<WgmmaWrite>& writes) = 0;
  /// wgmma.fence of the warp: the registers its threads accessed so far are ordered before its
  /// next wgmma.
  virtual void wgmma_fence() = 0;
  /// wgmma.commit_group and wgmma.wait_group n of the warp.
  virtual void wgmma_commit() = 0;
  virtual void wgmma_wait(int n) = 0;
  /// A TMA store by `lane` (cp.async.bulk.tensor shared -> global, bulk_group completion): it
  /// reads `flats` of shared operand `operand` until the lane's bulk wait retires its group (a
  /// write to them before is a TMA store race) and writes element j to `gflats[j]` of global
  /// operand `global_operand` (-1: past the tensor's edges, not written) when it completes.
  /// The values are those the shared cells hold now.
  virtual void tma_store(int lane, int operand, const std::vector<int64_t>& flats,
                         int global_operand, const std::vector<int64_t>& gflats) = 0;
  /// cp.async.bulk.commit_group / cp.async.bulk.wait_group.read n for `lane`'s bulk groups.
  virtual void bulk_commit(int lane) = 0;
  virtual void bulk_wait(int lane, int n) = 0;
};

}  // namespace tessel
