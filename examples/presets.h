// Presets: named sets of -D values (the paper's benchmark shapes), `-D preset=M3`. The table
// lives in presets.cpp; a workload gets its presets by adding rows there.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessel {

/// One named set of parameter values for one or more kernels with the same parameters.
struct Preset {
  std::vector<std::string> kernels;  ///< the built-in kernels it applies to
  std::string name;                  ///< what `-D preset=NAME` names, e.g. "M3"
  std::string source;                ///< where the values come from, e.g. "paper Table 2"
  std::vector<std::pair<std::string, std::string>> values;  ///< parameter name, value

  /// "M=4096 N=8192 K=28672".
  std::string values_text() const;
};

/// Every preset, in the order `tessel list` shows them.
const std::vector<Preset>& presets();

/// The presets of the built-in kernel `kernel` (empty when it has none), in table order.
std::vector<const Preset*> presets_of(const std::string& kernel);

/// `defines` with `preset=NAME` replaced by the values of `kernel`'s preset NAME; values given
/// explicitly in `defines` win over the preset's. `defines` unchanged when it names no preset.
/// ParamError (a usage error) naming the kernel and listing its presets when NAME is not one.
std::map<std::string, std::string> apply_preset(const std::string& kernel,
                                                std::map<std::string, std::string> defines);

}  // namespace tessel
