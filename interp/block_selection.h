// Which blocks of a launch a sampled thread-level run simulates (`tessel run --blocks SPEC`):
// the spec's grammar, and its resolution against a concrete grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace tessel {

/// A malformed block spec, or one naming blocks outside the grid: a mistake on the command line.
class BlockSpecError : public UserError {
 public:
  explicit BlockSpecError(const std::string& message) : UserError(message) {}
};

/// A parsed --blocks spec: a comma-separated union of items
///   all                every block
///   edges              every block that is the first or last in some grid dimension of
///                      extent > 1 (those tiles touch a tensor edge); the one block of a 1-block
///                      grid
///   first, last        linear block 0, the last linear block
///   random:N           N distinct blocks drawn with the run's seed (all when N >= the grid)
///   7                  linear block id (x + gx * (y + gy * z))
///   (1, 2)             block by grid coordinates (x, y[, z]), one per grid dimension
class BlockSelection {
 public:
  /// BlockSpecError naming the spec and what is accepted when `spec` is malformed.
  static BlockSelection parse(const std::string& spec);

  /// The selected linear block ids of `grid`, ascending and distinct. BlockSpecError when an
  /// index lies outside the grid or a coordinate tuple has the wrong number of entries.
  std::vector<int64_t> resolve(const std::vector<int64_t>& grid, uint64_t seed) const;

  const std::string& spec() const { return spec_; }
  /// True when the spec is exactly `all` (no sampling).
  bool is_all() const;

  /// The accepted forms, for messages.
  static const char* accepted();

 private:
  struct Item {
    enum class Kind : uint8_t { kAll, kEdges, kFirst, kLast, kRandom, kLinear, kCoords };
    Kind kind;
    std::vector<int64_t> values;  ///< kRandom: {N}; kLinear: {id}; kCoords: the coordinates
  };
  std::string spec_;
  std::vector<Item> items_;
};

}  // namespace tessel
