// A kernel (TileLang's PrimFunc): parameters, launch grid, threads per block and body.
#pragma once

#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/stmt.h"

namespace tessel {

/// Warp size on NVIDIA GPUs; kernels' thread counts must be a multiple of it.
constexpr int kNvidiaWarpSize = 32;

struct KernelNode {
  std::string name;
  std::vector<Buffer> params;      ///< global tensors, in signature order
  std::vector<Var> dynamic_vars;   ///< symbolic dimensions (T.dynamic), bound from tensor shapes
  std::vector<Expr> grid;          ///< 1 to 3 extents: blocks along x, y, z
  std::vector<Var> block_vars;     ///< bx, by, bz
  int threads = 128;               ///< threads per block
  Var thread_var;                  ///< the thread's index in its block (T.get_thread_binding())
  Stmt body;
  SourceLoc loc;
};

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
