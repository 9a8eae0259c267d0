// Structural equality of kernels, for round-trip tests of the front ends: two kernels are equal
// when they have the same name, parameters, launch and body, with variables and buffers matched
// by where they are defined rather than by identity. Source locations are ignored.
#pragma once

#include <optional>
#include <string>

#include "core/kernel.h"

namespace tessel {

/// The first structural difference between `a` and `b` ("body, statement 3 (T.copy): ..."), or
/// nullopt when they are equal. Variables (block indices, the thread index, symbolic dimensions,
/// loop variables, lets) and buffers (parameters, allocations) correspond by their defining
/// position and must agree in name, dtype, shape and scope; every other field compares by value.
std::optional<std::string> kernel_difference(const Kernel& a, const Kernel& b);

/// True when kernel_difference(a, b) finds none.
bool kernel_equal(const Kernel& a, const Kernel& b);

}  // namespace tessel
