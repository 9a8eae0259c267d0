// The intrinsic table: every hardware instruction thread-level IR may call (mma.sync, ldmatrix,
// cp.async and its group operations, AMD MFMA, per-thread atomics), each defined ONCE, in the
// home of its instruction family (core/families/, see core/instruction_family.h), with its
// operands, the fragment layout of every register operand, its CUDA spelling and its HIP
// spelling. The thread-level interpreter executes an instruction through its home, which reads
// these layouts, and codegen prints the home's text, so the simulator and the generated code can
// never disagree about where an element lives.
//
// Register-operand layouts come from core/builtin_layouts (the PTX ISA "Matrix Fragments for
// mma.m16n8k16" and "mma.m16n8k32" tables and the AMD Matrix Instruction Calculator for CDNA3, see
// REFERENCE.md): a Fragment maps a matrix element (row, col) to (lane, register element).
//
//   instruction              | operands (PTX / builtin order)                    | lanes
//   -------------------------+---------------------------------------------------+------
//   mma_m16n8k16_f16|bf16    | D f32 x4, A x8, B x4, C f32 x4   (D = A B + C)     | 32
//   mma_m16n8k32_s8          | D i32 x4, A i8 x16, B i8 x8, C i32 x4             | 32
//   ldmatrix_x1|x2|x4[_trans]| dst x2N (registers), src (shared row address)       | 32
//   cp_async_4|8|16          | dst (shared), src (global), src_size (bytes read)  | per thread
//   cp_async_commit_group    | -                                                 | per thread
//   cp_async_wait_group      | n (immediate)                                     | per thread
//   mfma_16x16x16_f16|bf16   | D f32 x4, A x4, B x4, C f32 x4                     | 64
//   mfma_32x32x8_f16|bf16    | D f32 x16, A x4, B x4, C f32 x16                   | 64
//   mfma_16x16x16_i8 (CDNA2) | D i32 x4, A i8 x4, B i8 x4, C i32 x4                | 64
//   mfma_16x16x32_i8 (CDNA3) | D i32 x4, A i8 x8, B i8 x8, C i32 x4                | 64
//   atom_add|max|min         | dst (global or shared element), value (per lane)  | per thread
//   mbarrier_init            | bar (shared u64), count (arrivals per phase)       | per thread
//   mbarrier_arrive          | bar                                               | per thread
//   mbarrier_[arrive_]expect_tx | bar, tx (bytes the phase also waits for)        | per thread
//   mbarrier_wait_parity     | bar, parity (waits until that phase completed)    | per thread
//   fence_proxy_async        | -                                                 | per thread
//   set_max_nreg             | n (immediate), inc (immediate 1 or 0)             | warpgroup
//   tma_load_1d .. _5d       | dst (shared origin), src (global origin), bar,    | per thread
//                            | box_0 .. box_{n-1}, swizzle (immediates)          |
//   tma_store_1d .. _5d      | src (shared origin), dst (global origin),         | per thread
//                            | box_0 .. box_{n-1}, swizzle (immediates)          |
//   tma_store_arrive         | - (closes the thread's bulk group)                | per thread
//   tma_store_wait           | n (immediate: groups that may stay in flight)     | per thread
//   wgmma_ss_f16|bf16        | D f32 x N/2, A (shared start), B (shared start),  | 128
//                            | n, A and B descriptors (swizzle, lbo, sbo,        |
//                            | mn_major), scale_d (immediates)                   |
//   wgmma_rs_f16|bf16        | D f32 x N/2, A x8 (registers), B (shared start),  | 128
//                            | n, B descriptor, scale_d                          |
//   wgmma_fence|commit_group | - (wait_group: n)                                 | 128
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/layout.h"

namespace tessel {

struct IntrinsicCallNode;
class InstructionFamily;          // core/instruction_family.h
enum class AtomicKind : uint8_t;  // core/op_atomic.h

/// Every instruction of the table, as X(Id, name).
#define TESSEL_INTRINSICS(X)                             \
  X(MmaM16N8K16F16, "mma_m16n8k16_f16")                  \
  X(MmaM16N8K16BF16, "mma_m16n8k16_bf16")                \
  X(MmaM16N8K32S8, "mma_m16n8k32_s8")                    \
  X(LdmatrixX1, "ldmatrix_x1")                           \
  X(LdmatrixX2, "ldmatrix_x2")                           \
  X(LdmatrixX4, "ldmatrix_x4")                           \
  X(LdmatrixX1Trans, "ldmatrix_x1_trans")                \
  X(LdmatrixX2Trans, "ldmatrix_x2_trans")                \
  X(LdmatrixX4Trans, "ldmatrix_x4_trans")                \
  X(CpAsync4, "cp_async_4")                              \
  X(CpAsync8, "cp_async_8")                              \
  X(CpAsync16, "cp_async_16")                            \
  X(CpAsyncCommitGroup, "cp_async_commit_group")         \
  X(CpAsyncWaitGroup, "cp_async_wait_group")             \
  X(Mfma16x16x16F16, "mfma_16x16x16_f16")                \
  X(Mfma16x16x16BF16, "mfma_16x16x16_bf16")              \
  X(Mfma32x32x8F16, "mfma_32x32x8_f16")                  \
  X(Mfma32x32x8BF16, "mfma_32x32x8_bf16")                \
  X(Mfma16x16x16I8, "mfma_16x16x16_i8")                  \
  X(Mfma16x16x32I8, "mfma_16x16x32_i8")                  \
  X(AtomAdd, "atom_add")                                 \
  X(AtomMax, "atom_max")                                 \
  X(AtomMin, "atom_min")                                 \
  X(MbarrierInit, "mbarrier_init")                       \
  X(MbarrierArrive, "mbarrier_arrive")                   \
  X(MbarrierExpectTx, "mbarrier_expect_tx")              \
  X(MbarrierArriveExpectTx, "mbarrier_arrive_expect_tx") \
  X(MbarrierWaitParity, "mbarrier_wait_parity")          \
  X(FenceProxyAsync, "fence_proxy_async")                \
  X(SetMaxNreg, "set_max_nreg")                          \
  X(TmaLoad1D, "tma_load_1d")                            \
  X(TmaLoad2D, "tma_load_2d")                            \
  X(TmaLoad3D, "tma_load_3d")                            \
  X(TmaLoad4D, "tma_load_4d")                            \
  X(TmaLoad5D, "tma_load_5d")                            \
  X(WgmmaSsF16, "wgmma_ss_f16")                          \
  X(WgmmaSsBF16, "wgmma_ss_bf16")                        \
  X(WgmmaRsF16, "wgmma_rs_f16")                          \
  X(WgmmaRsBF16, "wgmma_rs_bf16")                        \
  X(WgmmaFence, "wgmma_fence")                           \
  X(WgmmaCommitGroup, "wgmma_commit_group")              \
  X(WgmmaWaitGroup, "wgmma_wait_group")                  \
  X(TmaStore1D, "tma_store_1d")                          \
  X(TmaStore2D, "tma_store_2d")                          \
  X(TmaStore3D, "tma_store_3d")                          \
  X(TmaStore4D, "tma_store_4d")                          \
  X(TmaStore5D, "tma_store_5d")                          \
  X(TmaStoreArrive, "tma_store_arrive")                  \
  X(TmaStoreWait, "tma_store_wait")

enum class IntrinsicId : uint8_t {
#define TESSEL_ENUM_(id, name) k##id,
  TESSEL_INTRINSICS(TESSEL_ENUM_)
#undef TESSEL_ENUM_
};

/// The kind of work an entry does (one family's home may declare several kinds: cp.async, its
/// commit and its wait). The lowering and tests use it to find calls; execution, checks,
/// memory accesses and text belong to the entry's home (core/instruction_family.h).
enum class IntrinsicFamily : uint8_t {
  kMma,           ///< warp-wide D = A * B + C on register fragments (mma.sync, MFMA)
  kLdmatrix,      ///< warp-wide shared -> registers, one 16-byte row address per lane
  kCpAsync,       ///< per-thread asynchronous global -> shared copy
  kCommitGroup,   ///< closes this thread's current group of cp.async copies
  kWaitGroup,     ///< waits until at most n of this thread's committed groups are pending
  kAtomic,        ///< per-thread dst = dst (op) value, atomic: lanes update one after another
  kMbarrier,      ///< per-thread mbarrier operation (init, arrive, expect_tx) on a shared barrier
  kMbarrierWait,  ///< per-thread wait for a barrier phase; the warp blocks until it completes
  kFence,         ///< a memory-ordering fence (fence.proxy.async)
  kRegAlloc,      ///< warpgroup-wide register reallocation (setmaxnreg)
  kTmaLoad,       ///< per-thread bulk tensor copy of a box, global -> shared, onto an mbarrier
  kWgmma,         ///< warpgroup-wide asynchronous D = A * B + D, B (and A) read from shared memory
  kWgmmaGroup,    ///< wgmma.fence, commit_group, wait_group: the warpgroup's wgmma ordering
  kTmaStore,      ///< per-thread bulk tensor copy of a box, shared -> global, in a bulk group
  kBulkCommit,    ///< closes this thread's current bulk group (cp.async.bulk.commit_group)
  kBulkWait,      ///< waits until at most n of this thread's bulk groups still read shared memory
};

/// How one operand is passed.
enum class OperandKind : uint8_t {
  kRegisters,  ///< a per-thread (local/fragment) buffer element: the first of `elements` registers
  kShared,     ///< a shared-memory element (an address)
  kGlobal,     ///< a global-memory element (an address)
  kMemory,     ///< a global- or shared-memory element (an address)
  kValue,      ///< an integer expression evaluated per lane
  kNumber,     ///< a number (integer or float) evaluated per lane, converted to the element
               ///< type of operand 0 when the call is made
  kImmediate,  ///< an integer constant
};

/// True for operands passed as one buffer element (kRegisters, kShared, kGlobal, kMemory);
/// false for those passed as an expression (kValue, kNumber, kImmediate).
bool is_element_operand(OperandKind kind);

/// One operand of an instruction.
struct IntrinsicOperand {
  std::string name;  ///< "D", "A", "B", "C", "dst", "src", "src_size", "n"
  OperandKind kind;
  bool written = false;
  /// Element types accepted (registers and addresses); empty: any type of `bits` bits.
  std::vector<DataType> dtypes;
  int bits = 0;      ///< element width required when `dtypes` is empty (0: any)
  int elements = 0;  ///< registers: elements per lane; addresses: elements per lane access
  /// Registers of a matrix operand: matrix element (row, col) -> (lane, element). Undefined for
  /// other operands.
  Fragment layout;
};

/// One instruction.
struct IntrinsicInfo {
  IntrinsicId id{};
  std::string name;  ///< the kernel-language spelling: T.<name>(...)
  IntrinsicFamily family{};
  int warp_size = 32;       ///< lanes that execute it together (per-thread instructions: 32)
  bool nvidia = true;       ///< NVIDIA instruction (else AMD)
  bool any_vendor = false;  ///< exists on NVIDIA and AMD alike (atomics); `nvidia` is ignored
  int m = 0, n = 0, k = 0;  ///< matrix shape (mma/MFMA: D is m x n, the reduction is k;
                            ///< ldmatrix: m = number of 8x8 matrices)
  bool trans = false;       ///< ldmatrix .trans
  AtomicKind atomic{};      ///< kAtomic: the operation
  int bytes = 0;            ///< cp.async bytes per thread
  /// Synchronisation only (mbarriers, fences, setmaxnreg): no data effect, so the tile level,
  /// whose threads run in program order, runs it as nothing, and the barrier pass sees its
  /// shared-memory operand as updated atomically.
  bool sync = false;
  /// The call may wait for other warps (mbarrier waits): the thread-level interpreter runs it
  /// where a warp can suspend, like T.sync_threads().
  bool blocking = false;
  int box_rank = 0;  ///< TMA: the dimensions of the box (1 to 5)
  /// TMA: the operands of the shared tile, of the global tensor (whose tensor map the copy
  /// reads) and of the first box extent; the box extents are followed by the swizzle (0, 32,
  /// 64 or 128 bytes: CU_TENSOR_MAP_SWIZZLE_*, core/tma_map.h).
  int tma_shared = 0, tma_global = 1, box_first = 3;
  std::vector<IntrinsicOperand> operands;
  std::string cuda;         ///< PTX / CUDA spelling ("" when there is none)
  std::string hip;          ///< HIP spelling ("" when there is none)
  std::string description;  ///< one line, with the source of its semantics
  /// The family that declares it (core/instruction_family.h), where its checks, memory
  /// accesses, CUDA/HIP text and execution live. Set for every entry of the table.
  const InstructionFamily* home = nullptr;
};

/// Every instruction, indexed by IntrinsicId.
const std::vector<IntrinsicInfo>& intrinsic_table();
/// The entry for `id`.
const IntrinsicInfo& intrinsic_info(IntrinsicId id);
/// The instruction called `name` ("ldmatrix_x4"), or nullopt.
std::optional<IntrinsicId> find_intrinsic(std::string_view name);
/// The mma / MFMA instruction for an m x n x k shape and input dtype, or nullopt.
std::optional<IntrinsicId> find_matrix_intrinsic(bool nvidia, int m, int n, int k, DataType in);

/// The atomic instruction (atom_add, atom_max, atom_min) for an operation of T.atomic_*.
IntrinsicId atomic_intrinsic(AtomicKind kind);
/// The device function codegen calls for atomic instruction `id` on `dtype` elements: the
/// runtime's own atomicAdd / atomicMax / atomicMin where CUDA (`hip` false) or HIP has that
/// overload, else the helper codegen must define, "tessel_atomic_add|max|min" — a
/// compare-and-swap loop on the element's bits (for i64 add: atomicAdd on the bits as
/// unsigned long long, which two's complement makes exact). Without a helper:
///   CUDA: add f32 f64 i32 u32, f16 (sm_70+), bf16 (sm_80+); max/min i32 u32 i64. CUDA has no
///         float overload of atomicMax/atomicMin.
///   HIP:  add f32 f64 i32 u32; max/min i32 u32 f32 f64.
/// Requires: `id` is an atomic and `dtype` one of its dst dtypes.
std::string atomic_function(IntrinsicId id, DataType dtype, bool hip);

/// The call as the printer writes it: `T.ldmatrix_x4(A_regs[0], A_shared[tx % 16, tx // 16 * 8])`.
std::string intrinsic_call_to_string(const IntrinsicCallNode& call);

}  // namespace tessel
