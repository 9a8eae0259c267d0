// Global-memory request cost: 32-byte sectors and 128-byte lines per warp-wide request, as the
// Nsight Compute profiling guide defines them (REFERENCE.md, "Global memory").
#pragma once

#include <cstdint>
#include <span>

namespace tessel::sim {

/// The cost of one warp-wide global request.
struct SectorCount {
  int64_t sectors = 0;        ///< distinct `byte >> 5` over every byte of every active lane
  int64_t ideal_sectors = 0;  ///< ceil(distinct bytes / 32): the sectors a perfectly packed
                              ///< request for the same bytes would need
  int64_t lines = 0;          ///< distinct `byte >> 7`
  int64_t bytes = 0;          ///< distinct bytes
  friend bool operator==(const SectorCount&, const SectorCount&) = default;
};

/// Counts sectors and lines of a request: lane l (bit l of `mask`) touches the bytes
/// [byte_addr[l], byte_addr[l] + bytes[l]). Requires: spans at least as long as the highest
/// active lane; bytes[l] >= 1 for active lanes.
SectorCount count_sectors(std::span<const int64_t> byte_addr, std::span<const int> bytes,
                          uint64_t mask);

}  // namespace tessel::sim
