// Shared -> fragment copies of 16-bit gemm operands as ldmatrix.x4 (core/op_copy_ldmatrix.cpp).
#pragma once

#include <optional>

#include "core/lowering.h"
#include "core/op_copy.h"

namespace tessel {

/// Whether `frag` holds, per thread and block of 8 registers, exactly what ldmatrix.x4 delivers:
/// false for the plain pattern (an mma A operand), true for .trans (an mma B operand), nullopt
/// when it does not.
std::optional<bool> ldmatrix_pattern(const Fragment& frag, int64_t threads);

/// The copy as ldmatrix.x4 (or .x4.trans) calls when the target has ldmatrix and the destination
/// fragment holds, per thread and block of 8 registers, exactly what one ldmatrix.x4 delivers;
/// nullopt otherwise.
std::optional<Stmt> lower_ldmatrix_copy(const CopyOp& op, LowerContext& ctx);

}  // namespace tessel
