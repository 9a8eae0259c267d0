// TMA tensor-map facts shared by the TMA family (simulation), the proofs and codegen: where a
// swizzled box lands in shared memory (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B, CUDA driver API
// "cuTensorMapEncodeTiled"; PTX ISA "Tensor Memory Accelerator: swizzling modes").
//
// A TMA box lands densely, row-major (box dimension 0, the innermost, fastest), from the shared
// destination's address; with a swizzle mode the 16-byte chunk index inside each 128-byte
// segment is XOR-ed with the segment index modulo the pattern's period. In address bits:
//
//   mode   chunk bits   XOR-ed with   pattern repeats every   inner box row at most
//   32B    [4]          [7]           256 bytes               32 bytes
//   64B    [4, 6)       [7, 9)        512 bytes               64 bytes
//   128B   [4, 7)       [7, 10)       1024 bytes              128 bytes
//
// The pattern is a function of the absolute shared address; Tessel places every shared buffer
// that a swizzled TMA copy touches at a multiple of 1024 bytes, so offsets inside the buffer
// give the same pattern.
#pragma once

#include <cstdint>
#include <string>

namespace tessel {

/// The swizzle modes, by their span in bytes (0: CU_TENSOR_MAP_SWIZZLE_NONE).
constexpr int kTmaSwizzles[] = {0, 32, 64, 128};

/// True for 0, 32, 64 and 128.
bool is_tma_swizzle(int64_t swizzle_bytes);

/// The number of chunk-index bits the mode XORs: 0 (none), 1 (32B), 2 (64B), 3 (128B).
/// Requires: is_tma_swizzle(swizzle_bytes).
int tma_swizzle_bits(int swizzle_bytes);

/// The shared byte offset where the byte at dense offset `byte` of a box lands, for a box
/// whose destination starts at a multiple of 1024 bytes: byte ^ (((byte >> 7) & m) << 4) with
/// m = 2^bits - 1. An involution; identity for mode 0.
int64_t tma_swizzle_byte(int64_t byte, int swizzle_bytes);

/// "CU_TENSOR_MAP_SWIZZLE_128B" and so on (messages, generated host code).
std::string tma_swizzle_name(int swizzle_bytes);

}  // namespace tessel
