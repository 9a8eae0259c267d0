// The bank map of one warp-wide shared-memory request: its costliest phase as a grid of banks
// (columns) by lanes (rows), each cell the word the lane requests in that bank, the words that
// make a bank serve more than one wavefront marked. `tessel banks --svg` and `tessel report` draw
// it; the phases and the cost are core/bank_rules.h's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/bank_rules.h"

namespace tessel {

/// One phase of a request, as its bank map shows it.
struct BankPhaseMap {
  int phase = 0;       ///< which of the request's phases (in issue order)
  int num_phases = 0;  ///< phases of the request
  int wavefronts = 0;  ///< the most distinct words one bank delivers in this phase (0: no lane)
  int num_banks = 32;
  int bank_bytes = 4;
  std::vector<int> lanes;  ///< the phase's active lanes, in lane order
  /// words[k]: the words (byte address / bank_bytes) lane lanes[k] touches, ascending.
  std::vector<std::vector<int64_t>> words;
  std::vector<int> distinct_per_bank;  ///< per bank: distinct words it delivers in this phase

  /// The bank of a word.
  int bank_of_word(int64_t word) const;
  /// True when `word`'s bank delivers more than one distinct word in this phase.
  bool conflicting(int64_t word) const { return distinct_per_bank[bank_of_word(word)] > 1; }
};

/// The costliest phase of a request (the first of equally costly ones). Same inputs as
/// count_wavefronts; its `wavefronts` equals count_wavefronts(...).max_degree.
BankPhaseMap worst_phase(const BankModel& model, std::span<const int64_t> byte_addr,
                         uint64_t active_mask, int access_bytes, bool ldmatrix, bool write = false);

struct BankMapSvgOptions {
  std::string title;      ///< drawn above the grid
  int64_t word_base = 0;  ///< subtracted from every word shown (the buffer's first word)
  int first_thread = 0;   ///< thread index of lane 0, for the row labels
};

/// The phase as SVG: a header row of bank numbers with each bank's distinct-word count
/// ("x4" in red when it conflicts), then one row per lane ("lane 3 · T35") with the word
/// (minus word_base) in each bank the lane touches. Cells of conflicting banks are red and
/// bold, conflict-free ones green; every cell is an element of class "word" (plus "conflict"),
/// so a page or a test can find them.
std::string bank_phase_svg(const BankPhaseMap& map, const BankMapSvgOptions& options = {});

}  // namespace tessel
