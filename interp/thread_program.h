// A kernel compiled for the thread-level interpreter: variables in numbered register slots,
// buffers and memory instructions (sites) numbered, expressions and statements in a compact
// tree the SIMT executor walks without looking anything up. Compiling also checks that the
// kernel is thread-level IR: tile operators, T.Parallel and T.Pipelined need the lowering pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/intrinsics.h"
#include "core/kernel.h"
#include "sim/sim_types.h"

namespace tessel {

/// Per-lane values of one warp: integers (int64) or floats (double, rounded to their dtype),
/// whichever the producing node's dtype is.
struct LaneValues {
  union {
    int64_t i[sim::kMaxLanes];
    double f[sim::kMaxLanes];
  };
  LaneValues() {}  // NOLINT: left uninitialised on purpose (hot scratch storage)
};

/// How a node's result is brought into its dtype.
enum class Rounding : uint8_t { kNone, kF32, kI32, kOther };

/// Operations of compiled expressions (one per expression node kind, builtins split out).
enum class XOp : uint8_t {
  kImm,
  kVar,
  kNot,
  kSelect,
  kCast,
  kLoad,
  kCall,
  kShuffle,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kBitAnd,
  kBitOr,
  kBitXor,
  kShl,
  kShr,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
};

struct CExpr {
  XOp op = XOp::kImm;
  DataType dtype;
  bool is_float = false;
  Rounding rounding = Rounding::kNone;
  /// Every lane that evaluates the node gets the same value: no thread index, load or shuffle
  /// below it, and only variables whose every definition is uniform (ThreadProgram::num_slots).
  /// The executor evaluates such a node (kImm and kVar aside) in one lane and copies the value.
  bool uniform = false;
  /// >= 0: the node depends only on the thread index, the block index and symbolic sizes (no
  /// loop or let variable, load, shuffle, select, `and` or `or`), so each lane's value is the
  /// same every time the block's warp evaluates it; the executor keeps it per warp in slot
  /// `cache` of ThreadProgram::num_cached. Only the outermost such node of a tree has a slot.
  int cache = -1;
  /// >= 0: a tree of arithmetic on variables and constants (no load, shuffle, select, `and` or
  /// `or`) that the program spells more than once, structurally equal trees sharing slot `reuse`
  /// of ThreadProgram::num_reused. Its value in a lane holds until a variable is written, so the
  /// executor keeps it per warp and counts a reused value's lane-operations as evaluated.
  int reuse = -1;
  int64_t nodes = 1;       ///< nodes in the tree, this one included (its lane-operations per lane)
  DataType operand_dtype;  ///< the dtype of operand `a` (casts, comparisons)
  bool operand_float = false;
  Builtin builtin = Builtin::kExp;
  int slot = -1;    ///< kVar
  int buffer = -1;  ///< kLoad
  int site = -1;    ///< kLoad, kShuffle
  const CExpr* a = nullptr;
  const CExpr* b = nullptr;
  const CExpr* c = nullptr;
  std::vector<const CExpr*> indices;  ///< kLoad
  LaneValues imm;                     ///< kImm: the value in every lane
  Expr source;                        ///< kDiv, kFloorDiv, kFloorMod, kLoad: for messages
};

enum class SOp : uint8_t {
  kSeq,
  kFor,
  kIf,
  kStore,
  kAlloc,
  kLet,
  kBarrier,
  kIntrinsic,
  kPrint,
  kNop
};

/// An operand of an intrinsic call.
struct CArg {
  int buffer = -1;  ///< an element access when >= 0
  std::vector<const CExpr*> indices;
  const CExpr* value = nullptr;  ///< a scalar operand
  int site = -1;                 ///< the memory site of this operand
};

struct CStmt {
  SOp op = SOp::kNop;
  bool has_barrier = false;           ///< this statement or one inside it is a barrier
  int site = -1;                      ///< kStore, kBarrier, kIntrinsic
  int slot = -1;                      ///< kFor, kLet: the variable
  int buffer = -1;                    ///< kStore, kAlloc
  int vector = 0;                     ///< kFor: see ThreadProgram's note on T.vectorized
  bool is_var = false;                ///< kAlloc of T.alloc_var
  const CExpr* a = nullptr;           ///< kFor: min; kIf: cond; kStore/kLet: value; kAlloc: init
  const CExpr* b = nullptr;           ///< kFor: extent
  std::vector<const CExpr*> indices;  ///< kStore
  std::vector<Expr> source_indices;   ///< kStore: the indices as written, for messages
  std::vector<const CStmt*> body;     ///< kSeq: children; kFor/kLet: {body}; kIf: {then, else?}
  const IntrinsicInfo* intrinsic = nullptr;
  std::vector<CArg> args;
  const PrintNode* print = nullptr;  ///< kPrint (its value is `a`)
};

/// A buffer of the program: a kernel parameter (global) or an allocation.
struct CBuffer {
  Buffer buffer;
  sim::Space space = sim::Space::kGlobal;
  std::vector<const CExpr*> shape;  ///< allocations: extents, evaluated when the block starts
  int param = -1;                   ///< globals: position in the signature
  /// Some statement stores to it or some instruction operand that writes names it (an atomic, a
  /// copy's destination). A global nobody writes is read-only for the whole launch.
  bool written = false;
};

/// T.vectorized: a loop with a constant extent of 2..16 and a body without barriers or intrinsic
/// calls has CStmt::vector = its extent, and the executor presents each memory site of the body
/// as one vector request where the hardware would issue one (interp/thread_exec.h, VectorGroup);
/// other vectorized loops run as serial loops.
struct ThreadProgram {
  Kernel kernel;
  int num_slots = 0;
  int thread_slot = -1;
  std::vector<int> block_slots;
  std::vector<std::pair<int, const VarNode*>> dynamic_slots;  ///< symbolic dimensions
  std::vector<CBuffer> buffers;  ///< globals first (signature order), then allocations
  int num_globals = 0;
  std::vector<sim::Site> sites;
  const CStmt* body = nullptr;
  bool uses_intrinsics = false;
  int num_cached = 0;  ///< CExpr::cache slots
  int num_reused = 0;  ///< CExpr::reuse slots

  std::vector<std::unique_ptr<CExpr>> expr_pool;
  std::vector<std::unique_ptr<CStmt>> stmt_pool;
};

/// Compiles `kernel` for the thread-level interpreter. User error, naming the operator and its
/// source location, when the kernel contains a tile operator, a T.Parallel or T.Pipelined loop
/// (thread level runs thread-level IR; those need the lowering pass), a variable used outside
/// its scope, or a buffer that is neither a parameter nor allocated.
/// `reuse`: mark the repeated trees (CExpr::reuse); off only to compare with a run without.
std::unique_ptr<ThreadProgram> compile_thread_program(const Kernel& kernel, bool reuse = true);

}  // namespace tessel
