// Prints a kernel in the TileLang syntax of DESIGN.md: the stable, golden form of the tile IR.
#pragma once

#include <string>

#include "core/kernel.h"

namespace tessel {

/// The whole kernel: symbolic dims, `@T.prim_func`, the signature, `with T.Kernel(...)` and body,
/// four spaces per level.
std::string print_kernel(const Kernel& kernel);
/// One statement (and its children) at the given indentation level.
std::string print_stmt(const Stmt& stmt, int indent = 0);

}  // namespace tessel
