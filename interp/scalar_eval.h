// Evaluates scalar expressions for one thread of a block under the tile-level interpreter.
#pragma once

#include "core/expr.h"
#include "interp/block_state.h"

namespace tessel {

struct StoreNode;

/// Evaluates `e` as thread `thread` of `block` sees it: its variables, its local buffers, the
/// block's shared and fragment buffers, global tensors. Float results are rounded to each node's
/// dtype (f16 arithmetic computes in f16); integers wrap to their dtype. Out-of-bounds loads,
/// unbound variables and division by zero are user errors naming the kernel, buffer and indices.
Value eval_scalar(const Expr& e, BlockState& block, int thread);

/// One index of `store` as eval_scalar computes it; a division by zero in it names the store's
/// buffer and indices.
int64_t eval_store_index(const Expr& index, const StoreNode* store, BlockState& block, int thread);

/// The flat index of `indices` into `tensor`, checked against its shape; a user error naming
/// the kernel, block, thread, buffer and indices when out of bounds.
int64_t checked_flat_index(const BlockState& block, int thread, const Buffer& buffer,
                           const HostTensor& tensor, const std::vector<int64_t>& indices,
                           const char* access);

}  // namespace tessel
