// --input/--expect/--save of `tessel run`: files in, files out.
#include "tools/data_options.h"

#include <filesystem>

#include "tools/cli.h"

namespace tessel::cli {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The arrays one --input/--expect item names: NAME=file.npy, NAME=file.npz (its array NAME),
/// or file.npz (each of its arrays, by name).
std::vector<NamedArray> read_item(const std::string& option, const std::string& item) {
  size_t eq = item.find('=');
  const std::string origin = option + " " + item;
  if (eq == std::string::npos) {
    if (!ends_with(item, ".npz")) {
      throw UsageError(origin + ": expected NAME=file.npy, NAME=file.npz or file.npz (whose " +
                       "arrays are named like the kernel's parameters)");
    }
    std::vector<NamedArray> arrays;
    for (auto& [name, array] : read_npz(item, origin)) {
      arrays.push_back({name, std::move(array), origin + " (array " + name + ")"});
    }
    return arrays;
  }
  std::string name = item.substr(0, eq), path = item.substr(eq + 1);
  if (name.empty() || path.empty()) {
    throw UsageError(origin + ": expected NAME=file.npy, e.g. " + option + " A=a.npy");
  }
  if (!ends_with(path, ".npz")) return {{name, read_npy(path, origin), origin}};
  auto arrays = read_npz(path, origin);
  auto it = arrays.find(name);
  if (it == arrays.end()) {
    std::string known;
    for (const auto& [n, a] : arrays) known += (known.empty() ? "" : ", ") + n;
    throw UsageError(origin + ": the archive has no array '" + name + "'; it holds " +
                     (known.empty() ? std::string("none") : known));
  }
  return {{name, std::move(it->second), origin}};
}

}  // namespace

void add_data_options(CLI::App& run, DataOptions& o) {
  run.add_option("--input", o.inputs,
                 "a parameter's values from a .npy file: NAME=file.npy, or file.npz holding "
                 "arrays named like the parameters (repeatable; the others stay random)")
      ->type_name("NAME=FILE");
  run.add_option("--expect", o.expects,
                 "values a parameter must have after the run: NAME=file.npy or file.npz "
                 "(repeatable)")
      ->type_name("NAME=FILE");
  run.add_option("--atol", o.atol, "absolute tolerance of --expect (default: by dtype)")
      ->check(non_negative());
  run.add_option("--rtol", o.rtol, "relative tolerance of --expect (default: by dtype)")
      ->check(non_negative());
  run.add_option("--init", o.inits,
                 "a parameter's initial values: NAME=zeros, NAME=random or NAME=nan (outputs "
                 "start as NaN bytes; a kernel that accumulates into its output needs zeros); "
                 "the reference starts from the same values (repeatable)")
      ->type_name("NAME=zeros|random|nan");
  run.add_option("--save", o.save_dir,
                 "write every output as DIR/NAME.npy (thread level: also the tile level's, "
                 "DIR/NAME.tile.npy)")
      ->type_name("DIR");
}

void load_data(const DataOptions& o, RunRequest& request) {
  if ((o.atol || o.rtol) && o.expects.empty()) {
    throw UsageError("--atol/--rtol set the tolerance of --expect; give --expect NAME=file.npy");
  }
  for (const std::string& item : o.inputs) {
    for (NamedArray& a : read_item("--input", item)) request.inputs.push_back(std::move(a));
  }
  for (const std::string& item : o.expects) {
    for (NamedArray& a : read_item("--expect", item)) request.expected.push_back(std::move(a));
  }
  request.atol = o.atol;
  request.rtol = o.rtol;
  for (const std::string& item : o.inits) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq), how = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || name.empty() ||
        (how != "zeros" && how != "random" && how != "nan")) {
      throw UsageError("--init " + item + ": write NAME=zeros, NAME=random or NAME=nan");
    }
    request.init[name] = how;
  }
}

std::vector<std::string> save_outputs(const DataOptions& o, const KernelRun& run) {
  std::vector<std::string> written;
  if (o.save_dir.empty()) return written;
  std::error_code ec;
  std::filesystem::create_directories(o.save_dir, ec);
  if (ec)
    throw UsageError("--save " + o.save_dir + ": cannot create the folder (" + ec.message() + ")");
  for (const std::string& name : run.output_names()) {
    std::string path = (std::filesystem::path(o.save_dir) / (name + ".npy")).string();
    write_npy(path, tensor_array(run.tensors.at(name)));
    written.push_back(path);
    if (!run.tile_ran) continue;
    path = (std::filesystem::path(o.save_dir) / (name + ".tile.npy")).string();
    write_npy(path, tensor_array(run.tile_tensor(name)));
    written.push_back(path);
  }
  return written;
}

}  // namespace tessel::cli
