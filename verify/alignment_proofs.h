// Alignment of the fixed-width accesses of a thread-level kernel, a proof family of `tessel
// verify`: every cp.async source and destination (4, 8 or 16 bytes), every ldmatrix row (16
// bytes) and every vector copy codegen issues (core/vector_copy.h) starts at a byte address that
// is a multiple of its size, for every thread, block, loop iteration and symbolic size. A GPU
// faults on a misaligned cp.async or ldmatrix.
//
// Buffers are assumed to start 16-byte aligned: codegen aligns every shared buffer to 16 bytes
// and device allocations are aligned to at least 256; so the byte offset of the first element in
// its buffer decides. Each offset is tried with the Analyzer first (the common case: every term
// a multiple of the size), then with Z3.
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per buffer that has fixed-width accesses, in program order of their first access.
std::vector<KernelCheck> prove_alignment(const Kernel& kernel, int warp_size, unsigned timeout_ms);

/// User error naming the access and a misaligned address when a check of prove_alignment is not
/// proved (codegen must not print an instruction that faults). `action`: "emit", "run".
void require_alignment(const Kernel& kernel, const Target& target, const std::string& action);

}  // namespace tessel
