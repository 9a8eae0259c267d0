// wgmma descriptors against the shared layouts inference chose (issue 14): every element a
// wgmma.mma_async reads through its matrix descriptor is the element the layout stores there,
// proved with Z3 for every index of the tile (docs/verify.md, "wgmma descriptors").
#pragma once

#include <string>
#include <vector>

#include "core/families/family_util.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// The layout a descriptor `d` reads a rows x cols shared tile as, when each wgmma reads an
/// mn_extent x 16 box (A: 64 rows of M, B: the N columns) whose origin — a multiple of the box
/// in each dimension — is the descriptor's start: element (r, c) lies at the descriptor's byte
/// for its place (mn, k) in its box, from start = `layout`(box origin), over `elem_bytes`.
/// MN-major tiles are stored (K, MN), K-major ones (MN, K).
Layout wgmma_descriptor_layout(const Layout& layout, const WgmmaOperandDesc& d, int64_t elem_bytes,
                               int64_t mn_extent);

/// Proves wgmma_descriptor_layout(layout, ...) == layout for every (r, c); the check names
/// `buffer` and `operand` ("A of wgmma_ss_f16"), and on failure the element and both offsets.
KernelCheck prove_wgmma_descriptor(const std::string& buffer, const std::string& operand,
                                   const Layout& layout, const WgmmaOperandDesc& d,
                                   int64_t elem_bytes, int64_t mn_extent, unsigned timeout_ms);

/// One check per shared operand of each distinct wgmma of `lowered` (buffer, descriptor, N),
/// against the layout inference chose for the buffer.
std::vector<KernelCheck> prove_wgmma_descriptors(const LoweredKernel& lowered, unsigned timeout_ms);

}  // namespace tessel
