// A kernel (TileLang's PrimFunc): parameters, launch grid, threads per block and body.
#pragma once

#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/stmt.h"

namespace tessel {

/// Warp size on NVIDIA GPUs.
constexpr int kNvidiaWarpSize = 32;

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

}  // namespace tessel
