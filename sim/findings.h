// The finding log: one entry per distinct problem (kind, buffer, the sites involved), the first
// occurrence described in full and later ones counted, so a missing barrier in a loop reads as
// one finding with "4096 occurrences", not 4096 lines.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/sim_types.h"

namespace tessel::sim {

class FindingLog {
 public:
  /// Records one occurrence. `make` builds the full description; it runs only for the first
  /// occurrence of (kind, benign, buffer, site_a, site_b, variant).
  void add(FindingKind kind, bool benign, const std::string& buffer, int site_a, int site_b,
           const std::function<Finding()>& make, int variant = 0);
  /// Appends `other`'s findings, adding counts to entries this log already has.
  void merge(const FindingLog& other);

  const std::vector<Finding>& findings() const { return findings_; }
  bool empty() const { return findings_.empty(); }
  /// True when a finding that is not benign was made.
  bool has_errors() const;

 private:
  using Key = std::tuple<FindingKind, bool, std::string, int, int, int>;
  static Key key_of(const Finding& f);
  std::map<Key, size_t> index_;
  std::vector<Finding> findings_;
};

}  // namespace tessel::sim
