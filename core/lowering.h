// What layout inference and lowering share: the layout map (the result of inference), the
// context each operator's `infer_layout` writes into, and the context each operator's `lower`
// reads from. The passes themselves are in core/passes.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/analyzer.h"
#include "core/kernel.h"
#include "core/layout.h"
#include "core/target.h"
#include "core/thread_group.h"

namespace tessel {

/// The paper's three inference levels (§4.2), tried in this order: strict constraints first
/// (gemm operands and accumulators, annotated layouts), then propagation (Parallel loops,
/// reduce, copy), then free choices for whatever is still open.
enum class InferLevel : uint8_t { kStrict, kCommon, kFree };
const char* infer_level_name(InferLevel level);  ///< "strict", "common", "free"

/// A layout decision and who made it (for messages and `--print-after-all`).
template <typename L>
struct Decided {
  Buffer buffer;
  L layout;
  std::string origin;  ///< "T.gemm at gemm.py:24:17 (strict)"
};

/// The result of layout inference: a storage layout for shared buffers that are not row-major, a
/// fragment for every fragment buffer, and a loop layout (a Fragment over the iteration box) for
/// every Parallel loop, copy and fill. Loops are keyed by the statement or operator node.
struct LayoutMap {
  std::map<const BufferNode*, Decided<Layout>> shared;
  std::map<const BufferNode*, Decided<Fragment>> fragments;
  std::map<const void*, Decided<Fragment>> loops;

  const Layout* shared_layout(const Buffer& b) const;
  const Fragment* fragment(const Buffer& b) const;
  const Fragment* loop(const void* key) const;
  /// The map as text: one line per buffer and loop, with its origin.
  std::string to_string() const;
};

/// What `TileOp::infer_layout` and Parallel loops see during inference.
class LayoutInferContext {
 public:
  LayoutInferContext(const Kernel& kernel, const Target& target, LayoutMap& map)
      : kernel_(kernel), target_(target), map_(map) {}
  const Target& target() const { return target_; }
  const Kernel& kernel() const { return kernel_; }
  /// The threads the unit being inferred runs on: the block's, or those of the thread group
  /// (`with T.ws(g)`) around it.
  int threads() const { return group_threads_ > 0 ? group_threads_ : kernel_->threads; }
  /// Set by the pass before each unit: the thread count of its group (0: the whole block).
  void set_group_threads(int threads) { group_threads_ = threads; }
  const LayoutMap& map() const { return map_; }

  const Layout* shared_layout(const Buffer& b) const { return map_.shared_layout(b); }
  const Fragment* fragment(const Buffer& b) const { return map_.fragment(b); }
  const Fragment* loop(const void* key) const { return map_.loop(key); }

  /// Records a layout. When the buffer already has a different one, a user error names the
  /// buffer, both deciders, prints both layouts and suggests T.annotate_layout or a copy through
  /// another buffer. A shared layout from T.annotate_layout (`annotation`) wins over every other
  /// decision for that buffer (as in TileLang): later ones are ignored, an earlier one replaced.
  void set_shared_layout(const Buffer& b, Layout layout, const std::string& origin,
                         bool annotation = false);
  void set_fragment(const Buffer& b, Fragment fragment, const std::string& origin);
  void set_loop(const void* key, Fragment layout, const std::string& origin);
  /// True when something was recorded since the last call (the pass iterates to a fixed point).
  bool take_changed();

 private:
  const Kernel& kernel_;
  const Target& target_;
  LayoutMap& map_;
  bool changed_ = false;
  int group_threads_ = 0;
  std::set<const BufferNode*> annotated_;
};

/// What `TileOp::lower` and the Parallel-loop lowering see.
class LowerContext {
 public:
  /// Fresh names avoid the kernel's own buffer and variable names.
  LowerContext(const Kernel& kernel, const Target& target, const LayoutMap& map,
               Analyzer& analyzer);
  const Target& target() const { return target_; }
  const Kernel& kernel() const { return kernel_; }
  const LayoutMap& layouts() const { return map_; }
  /// The threads the operator is lowered for: the block's, or those of the thread group
  /// (`with T.ws(g)`) around it.
  int threads() const {
    return group_.count > 0 ? static_cast<int>(group_.count) : kernel_->threads;
  }
  /// Knows the ranges of the block, thread and enclosing loop variables (to drop edge
  /// predicates that always hold).
  Analyzer& analyzer() { return analyzer_; }
  /// The calling thread's index among threads(): the block's thread index
  /// (T.get_thread_binding()), or inside a thread group a variable in [0, group count) that
  /// the lowering pass replaces by `thread index - group first`.
  const Var& thread() const { return group_.count > 0 ? group_thread_ : kernel_->thread_var; }
  /// Lowers the next operators for `group`; returns the variable thread() is until
  /// leave_group(). Requires: no group entered.
  Var enter_group(const ThreadGroup& group);
  void leave_group() { group_ = ThreadGroup{}; }
  /// The group entered, if any (count 0: the whole block).
  const ThreadGroup& group() const { return group_; }

  /// The per-thread register array a fragment buffer becomes ("C_local" -> local "C_local" of
  /// shape [registers per thread]). Lowered code may index it directly by register; the
  /// flattening pass maps every logical access `C_local[i, j]` to it. The same Buffer is
  /// returned on every call.
  Buffer registers(const Buffer& fragment);
  /// A fresh buffer the lowering needs (a workspace, a register temporary); allocated at the
  /// top of the kernel body by the lowering pass.
  Buffer temporary(const std::string& base, std::vector<Expr> shape, DataType dtype, Scope scope);
  /// A fresh integer variable.
  Var fresh_var(const std::string& base);

  /// Set while lowering the producer copies of a software pipeline: global -> shared copies
  /// become asynchronous (cp.async) where the target has it.
  bool async_copies() const { return async_copies_; }
  void set_async_copies(bool on) { async_copies_ = on; }

  const std::map<const BufferNode*, Buffer>& register_buffers() const { return registers_; }
  const std::vector<Buffer>& temporaries() const { return temporaries_; }

 private:
  std::string fresh_name(const std::string& base);
  const Kernel& kernel_;
  const Target& target_;
  const LayoutMap& map_;
  Analyzer& analyzer_;
  std::map<const BufferNode*, Buffer> registers_;
  std::vector<Buffer> temporaries_;
  std::map<std::string, int> names_;
  bool async_copies_ = false;
  ThreadGroup group_;
  Var group_thread_;
};

}  // namespace tessel
