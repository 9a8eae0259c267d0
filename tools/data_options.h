// The data options of `tessel run`: --input NAME=file.npy (or a .npz of several), --expect
// NAME=file.npy with --atol/--rtol, --init NAME=zeros|random|nan and --save DIR.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/kernel_run.h"

namespace tessel::cli {

struct DataOptions {
  std::vector<std::string> inputs;   ///< NAME=file.npy or file.npz
  std::vector<std::string> expects;  ///< NAME=file.npy or file.npz
  std::optional<double> atol, rtol;
  std::string save_dir;
  std::vector<std::string> inits;  ///< NAME=zeros|random|nan
  bool given() const {
    return !inputs.empty() || !expects.empty() || !save_dir.empty() || !inits.empty();
  }
};

/// Adds the options to `run`, bound to `o`.
void add_data_options(CLI::App& run, DataOptions& o);

/// Reads the files of --input and --expect into `request` (UsageError naming the option and the
/// file when one cannot be read, is malformed, or a .npz has no array of that name).
void load_data(const DataOptions& o, RunRequest& request);

/// With --save DIR: writes every output of `run` as DIR/NAME.npy (at thread level also the tile
/// level's as DIR/NAME.tile.npy); returns the paths written.
std::vector<std::string> save_outputs(const DataOptions& o, const KernelRun& run);

}  // namespace tessel::cli
