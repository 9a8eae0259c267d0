// A T.Parallel nest as layout inference and lowering see it: iteration variables over a box of
// constant extents and a body. Copies and fills present themselves as one (a copy is the loop
// `dst[...] = src[...]` over its tile), so the partition of iterations over threads, the
// derivation of fragment layouts from a loop layout and the vectorised lowering exist once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/lowering.h"
#include "core/stmt.h"

namespace tessel {

class ParallelLoop {
 public:
  /// `key` identifies the loop in the LayoutMap (the ForNode or the operator); `origin` names it
  /// in messages ("T.Parallel at softmax.py:17:9", "T.copy at gemm.py:21:17").
  ParallelLoop(const void* key, std::string origin, std::vector<Var> vars,
               std::vector<int64_t> extents, Stmt body, SourceLoc loc);
  /// The nest of perfectly nested T.Parallel loops starting at `loop`. User error naming the
  /// loop when an extent is not a constant.
  static ParallelLoop from_for(const ForNode& loop);

  /// Common level: takes the loop layout from a fragment accessed with exactly the loop's
  /// variables; free level: partitions the box over the block's threads, vectorised. Once the
  /// loop layout is known, every fragment the body accesses without a layout gets one derived
  /// from it, and those with a layout are checked to be held by the threads that access them.
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const;
  /// The calling thread's iterations: a loop over its registers with the iteration variables
  /// given by the inverse of the loop layout (a vectorised inner loop for the free partition),
  /// or, when the layout has no inverse, a scan of the box guarded by ownership.
  Stmt lower(LowerContext& ctx) const;

  /// A copy between two fragments: their layouts may differ (the lowering converts through
  /// shared memory), so inference does not require the loop's threads to hold both.
  void set_converts_layouts(bool on) { converts_layouts_ = on; }

  /// At most `elements` per vector in the free partition (a shared layout that keeps only
  /// narrower runs contiguous). Requires: a power of two >= 1.
  void set_max_vector(int64_t elements) { max_vector_ = elements; }

  /// The vector width of the free partition: 16 bytes of the widest element, dividing the last
  /// extent, at most the set_max_vector cap.
  int64_t vector_width() const;
  const Stmt& body() const { return body_; }

 private:
  /// Free level, once everything is decided: every fragment element an iteration touches is
  /// held by the thread that runs the iteration (user error naming both layouts otherwise).
  void check_held(LayoutInferContext& ctx) const;

  const void* key_;
  std::string origin_;
  std::vector<Var> vars_;
  std::vector<int64_t> extents_;
  Stmt body_;
  SourceLoc loc_;
  bool converts_layouts_ = false;
  int64_t max_vector_ = 0;  ///< 0: no cap
  /// A T.Parallel nest (not a copy): the free partition's vector also fits the runs its shared
  /// tiles keep contiguous (copies set their own cap, set_max_vector).
  bool cap_to_shared_ = false;
};

/// True when `layout` stores every run of `w` elements along its last dimension that starts at a
/// multiple of `w` contiguously, from an offset that is a multiple of `w`, and its size (the
/// distance between pipeline stages) is a multiple of `w`: what a `w`-element cp.async into it
/// needs. Rows padded by less than a chunk (`i * (cols + 4) + j` in int8) are not.
bool keeps_chunks_aligned(const Layout& layout, int64_t w);

/// The calling thread's iterations of `body` over the box `extents` (variables `vars`)
/// partitioned by `layout`: the closed form of the free partition when `layout` is
/// default_loop_layout(extents, threads, vec) for some vec (vectorised inner loop), else a loop
/// over the registers through the layout's inverse, else a scan of the box guarded by ownership.
/// With a replicated layout, statements that write shared or global memory run in replica 0 only.
Stmt lower_over_layout(LowerContext& ctx, const Fragment& layout, const std::vector<Var>& vars,
                       const std::vector<int64_t>& extents, const Stmt& body, const SourceLoc& loc);

/// When `layout` is the free partition of `extents` with a vector width above 1: the calling
/// thread's chunks, each one statement built by `chunk` from the loop variables' values at the
/// chunk's first element and the width (a cp.async of the whole chunk). Else nullopt.
std::optional<Stmt> lower_vector_chunks(
    LowerContext& ctx, const Fragment& layout, const std::vector<int64_t>& extents,
    const std::function<Stmt(const std::vector<Expr>& first, int64_t vec)>& chunk,
    const SourceLoc& loc);

/// The vector width when `layout` is default_loop_layout(extents, threads, vec), else nullopt.
std::optional<int64_t> free_partition_width(const Fragment& layout,
                                            const std::vector<int64_t>& extents, int64_t threads);

/// The free partition of a box over `threads` threads: the box is read in row-major order in
/// chunks of `vec` consecutive elements, chunk c goes to thread c % threads, at registers
/// (c / threads) * vec + [0, vec). Requires: vec divides the last extent.
Fragment default_loop_layout(const std::vector<int64_t>& extents, int64_t threads, int64_t vec);

/// The largest vector width (elements, a power of two) for a loop over `extents` whose body
/// touches elements of `max_bits` bits: at most 16 bytes, dividing the last extent.
int64_t choose_vector_width(const std::vector<int64_t>& extents, int max_bits);

/// A fragment for buffer `shape` accessed as `buffer[indices]` inside a loop with layout `loop`
/// (indices over `loop_vars`): each element is held by exactly the threads whose iterations
/// access it. Indices may be a loop variable or a loop variable floor-divided by a constant;
/// loop variables that appear in no index make the element replicated over the threads that
/// run them (which must form an XOR-closed group of thread bits, as row reductions produce).
/// Returns the reason in `why` and nullopt when no such fragment exists.
std::optional<Fragment> derive_fragment(const Fragment& loop, const std::vector<Var>& loop_vars,
                                        const std::vector<Expr>& indices,
                                        const std::vector<int64_t>& shape, std::string* why);

/// The threads that hold element `index` of `frag` (every replica), sorted, distinct.
std::vector<int64_t> holders(const Fragment& frag, const std::vector<int64_t>& index);

}  // namespace tessel
