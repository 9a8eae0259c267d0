// Random tile programs for differential testing (`tessel fuzz`): a small description of a kernel
// — buffers and a list of steps, each one tile operator or loop of the kinds users write — that
// the generator draws from a seed, the shrinker edits, and build_program turns into a Kernel
// with the C++ builder.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace tessel::fuzz {

/// Shape class of a buffer, in units of the program's tile sizes.
enum class Shape : uint8_t {
  kTile,  ///< (R, C)
  kRow,   ///< (R,): one value per tile row
  kCol,   ///< (C,): one value per tile column
};

enum class FScope : uint8_t { kShared, kFragment };

struct FBuffer {
  std::string name;
  FScope scope = FScope::kFragment;
  Shape shape = Shape::kTile;
  bool f16 = false;  ///< float16, else float32
  /// Shared tiles only: T.annotate_layout with a swizzle (1, padding by 1 where the shape allows
  /// none) or rows padded by 4 (2) or 8 (3) elements; 0 none.
  int annotate = 0;
};

enum class StepKind : uint8_t {
  kLoad,       ///< T.copy(X[bx * R, 0], dst): global -> tile, ragged at the tensor's edge
  kCopy,       ///< T.copy(src, dst): between tiles of any two scopes
  kFill,       ///< T.fill(dst, v) / T.clear(dst)
  kElemwise,   ///< T.Parallel: dst = a op b (+ X where inside), mixing scopes
  kLocalTmp,   ///< T.Parallel through a T.alloc_local temporary (T.fill-ed first with the flag)
  kSerialAcc,  ///< T.serial(2) around a T.Parallel that accumulates a into dst
  kReduce,     ///< T.reduce_<kind>(a, dst, dim, clear)
  kBroadcast,  ///< T.Parallel: dst[i, j] = a[i, j] op vec[i or j]
  kVecOp,      ///< 1-d T.Parallel over a vector: dst[i] = a[i] * c + d
  kGemm,       ///< T.gemm of two f16 operands loaded from GA / GB into dst (R, C) f32
  kPipeline,   ///< T.Pipelined over K tiles: copies into shared and a gemm into dst
  kPipeSum,    ///< T.Pipelined over column tiles of XK_n: a copy into shared and a T.Parallel
               ///< that accumulates it into dst (no gemm)
  kStore,      ///< T.copy(a, O_n[bx * R, 0]) (or of a[0:R/2, :]) or a guarded T.Parallel store
  kAtomic,     ///< T.atomic_add(O_n[0, 0], a), or element atomics in a T.Parallel: every block
               ///< adds into one tile
};

struct Step {
  StepKind kind = StepKind::kLoad;
  int dst = -1, a = -1, b = -1, vec = -1;  ///< buffer indices
  int op = 0;         ///< operator choice (meaning depends on the kind; gemm: the warp policy)
  int dim = 1;        ///< reduce / broadcast axis
  bool flag = false;  ///< clear (reduce/gemm), parallel store or atomic, global term
  bool trans_a = false, trans_b = false;  ///< gemm
  int a_scope = 0, b_scope = 0;           ///< gemm operands: 0 shared, 1 fragment
  int stages = 0;                         ///< pipeline stages (0-4)
  int out = -1;                           ///< output tensor index (store, atomic)
};

/// One random program.
struct Program {
  uint64_t seed = 0;
  std::string target = "sm80";
  int threads = 128;
  int grid = 1;           ///< blocks along x
  int R = 32, C = 32;     ///< tile rows and columns
  int K = 16;             ///< gemm depth of one tile
  int k_tiles = 1;        ///< pipelined loops: K tiles
  int ragged_rows = 0;    ///< the tensors have grid * R - ragged_rows rows
  int ragged_cols = 0;    ///< and C - ragged_cols columns
  int ragged_k = 0;       ///< and K * k_tiles - ragged_k gemm depth
  bool symbolic = false;  ///< the row count is T.dynamic("M")
  std::vector<FBuffer> buffers;
  std::vector<Step> steps;

  int rows() const { return grid * R - ragged_rows; }
  int cols() const { return C - ragged_cols; }
  int depth() const { return K * k_tiles - ragged_k; }
};

/// The buffers step `s` reads, its destination included when it accumulates into it.
std::vector<int> step_reads(const Step& s);

/// Draws a program from `seed` for `target` (sm80 or gfx942).
Program generate(uint64_t seed, const std::string& target);

/// Empty when `p` is a valid program: every buffer read is written first and shapes fit. Else
/// why not (the shrinker keeps only valid programs).
std::optional<std::string> invalid_reason(const Program& p);

/// The program as a tile-level kernel, with its output tensors and those that start at zero.
struct BuiltProgram {
  Kernel kernel;
  std::vector<std::string> outputs;  ///< written by the kernel (start as NaN bytes)
  std::vector<std::string> zeroed;   ///< accumulated into with atomics (start at zero)
  std::map<std::string, int64_t> dims;
};
BuiltProgram build_program(const Program& p);

/// Drops buffers no step uses and renumbers the rest (names stay).
Program drop_unused_buffers(const Program& p);

/// A one-line summary: target, threads, grid, tile sizes, steps by kind.
std::string summary(const Program& p);

}  // namespace tessel::fuzz
