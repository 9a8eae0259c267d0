// Kernel validation.
#include "core/kernel.h"

#include "core/expr_printer.h"

namespace tessel {

Kernel Kernel::make(KernelNode node) {
  std::string k = "kernel '" + node.name + "'";
  if (node.grid.empty() || node.grid.size() > 3) {
    user_error(k + ": T.Kernel takes 1 to 3 grid extents, got " + std::to_string(node.grid.size()));
  }
  for (size_t d = 0; d < node.grid.size(); ++d) {
    if (!node.grid[d].dtype().is_integral()) {
      user_error(k + ": grid extent " + std::to_string(d) + " (" + to_string(node.grid[d]) +
                 ") is not an integer");
    }
    if (auto c = as_const_int(node.grid[d]); c && *c <= 0) {
      user_error(k + ": grid extent " + std::to_string(d) + " is " + std::to_string(*c) +
                 "; every grid extent must be positive");
    }
  }
  if (node.threads <= 0 || node.threads % kNvidiaWarpSize != 0) {
    user_error(k + ": threads=" + std::to_string(node.threads) +
               " is not a positive multiple of the warp size " + std::to_string(kNvidiaWarpSize) +
               "; use e.g. " + std::to_string(std::max(1, (node.threads + 31) / 32) * 32));
  }
  if (node.threads > 1024) {
    user_error(k + ": threads=" + std::to_string(node.threads) +
               " exceeds the 1024 threads a block may have");
  }
  for (const Buffer& b : node.params) {
    if (b->scope != Scope::kGlobal) {
      internal_error("kernel parameter '" + b->name + "' is not a global buffer");
    }
  }
  if (!node.body.defined()) node.body = SeqNode::make({});
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

}  // namespace tessel
