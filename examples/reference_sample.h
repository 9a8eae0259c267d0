// A reference computed on a sample of an output's elements, for sampled thread-level runs whose
// full reference would cost more than the run (Example::sampled_reference): what is asked, and
// which elements with which expected values come back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

/// What a sampled reference is asked for: the launch grid of a sampled run, the blocks it
/// simulates (their outputs are checked in full) and the seed that picks the other samples.
struct ReferenceSampleRequest {
  std::vector<int64_t> grid;       ///< the launch grid, x first
  std::vector<int64_t> simulated;  ///< linear block ids (x fastest), ascending
  uint64_t seed = 0;
  int64_t per_tile = 2;  ///< rows and columns checked of every other output tile
};

/// The reference of one output on some of its elements.
struct SampledOutput {
  std::string name;
  std::vector<int64_t> indices;  ///< flat indices into the output, ascending, distinct
  std::vector<double> expected;  ///< the reference's value at each index (before rounding)
  /// A bound on the kernel's rounding error at each index (Example::bounded_outputs), or empty.
  std::vector<double> bound;
  std::string description;  ///< which elements, in words ("the tiles of ...; 2 rows ...")
};

}  // namespace tessel
