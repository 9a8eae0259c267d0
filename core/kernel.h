// A kernel (TileLang's PrimFunc): parameters, launch grid, threads per block and body.
#pragma once

#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/stmt.h"

namespace tessel {

/// Warp size on NVIDIA GPUs.
constexpr int kNvidiaWarpSize = 32;

class Kernel;

struct KernelNode {
  std::string name;
  std::vector<Buffer> params;     ///< global tensors, in signature order
  std::vector<Var> dynamic_vars;  ///< symbolic dimensions (T.dynamic), bound from tensor shapes
  std::vector<Expr> grid;         ///< 1 to 3 extents: blocks along x, y, z
  std::vector<Var> block_vars;    ///< bx, by, bz
  int threads = 128;              ///< threads per block (any count: the last warp may be partial)
  /// Threads per block along x, y, z (threads=(x, y[, z])); their product is `threads`. Empty
  /// before make(), which fills in {threads} for a 1-d block.
  std::vector<int> thread_dims;
  /// The thread's linear index in its block, x fastest as on a GPU: x + X * (y + Y * z).
  /// T.get_thread_binding(d) is an expression over it (see thread_binding).
  Var thread_var;
  Stmt body;
  SourceLoc loc;
  /// T.alloc_global scratch: global tensors the host allocates (uninitialised) before the first
  /// launch and frees after the last; every launch reads and writes them. Not parameters.
  std::vector<Buffer> scratch;
  /// Several `with T.Kernel(...)` launches in one kernel (split-KV decoding, split-K with a
  /// combine): the launches in the order they run, each a one-launch kernel (own grid, threads,
  /// block variables and body) whose `params` are this kernel's `params` followed by `scratch`.
  /// Empty for a one-launch kernel, whose grid, threads and body are its launch. When not empty,
  /// this node's own grid is {1} and its body empty: every consumer goes through launches_of().
  std::vector<Kernel> launches;
};

/// T.get_thread_binding(dim): the thread's index along `dim` (0 = x, 1 = y, 2 = z), an expression
/// over the linear `thread_var` (the variable itself for a 1-d block); 0 along a dimension the
/// block does not have (extent 1). Requires: thread_var is defined, 0 <= dim < 3.
Expr thread_binding(const KernelNode& kernel, int dim);

/// A handle to an immutable kernel.
class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<const KernelNode> node) : node_(std::move(node)) {}
  /// Validates grid, threads, parameters (user error naming the kernel otherwise).
  static Kernel make(KernelNode node);
  const KernelNode* operator->() const { return node_.get(); }
  const KernelNode& operator*() const { return *node_; }
  bool defined() const { return node_ != nullptr; }

 private:
  std::shared_ptr<const KernelNode> node_;
};

/// The launches of `kernel` in the order they run: its `launches`, or the kernel itself when it
/// has one launch.
std::vector<Kernel> launches_of(const Kernel& kernel);

/// True when `kernel` has several launches or global scratch (KernelNode::launches).
inline bool is_multi_launch(const Kernel& kernel) { return !kernel->launches.empty(); }

/// A kernel of several launches made from its launches (each a one-launch kernel over `params`
/// followed by `scratch`), named `name`. User error when a launch's parameters differ.
Kernel make_launch_sequence(const std::string& name, std::vector<Buffer> params,
                            std::vector<Var> dynamic_vars, std::vector<Buffer> scratch,
                            std::vector<Kernel> launches, SourceLoc loc = {});

/// `kernel` with its launches replaced by `launches` (the same count, in order): the result of a
/// pass applied to every launch. Returns launches[0] for a one-launch kernel.
Kernel with_launches(const Kernel& kernel, std::vector<Kernel> launches);

/// "launch 2 of 3 ('mla_decode_combine')": how reports name one launch of a multi-launch kernel.
std::string launch_label(const Kernel& kernel, size_t index);

}  // namespace tessel
