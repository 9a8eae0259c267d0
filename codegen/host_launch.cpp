// Launch shapes of emitted source for a host: grids placed on hardware axes, block shapes.
#include "codegen/host_launch.h"

#include "core/error.h"

namespace tessel {

namespace {

/// The most blocks a launch may have along x, y and z (CUDA and HIP alike).
constexpr std::array<int64_t, 3> kMaxGrid = {(int64_t{1} << 31) - 1, 65535, 65535};

HostLaunch place(const EmittedLaunch& l, const std::vector<int64_t>& grid) {
  HostLaunch h;
  h.entry = l.entry;
  h.grid = {1, 1, 1};
  if (grid.size() > 3) {
    user_error("launch " + l.entry + ": a grid of " + std::to_string(grid.size()) +
               " extents; a GPU launches at most 3 (x, y, z)");
  }
  for (size_t d = 0; d < grid.size(); ++d) {
    const size_t axis = d < l.grid_axes.size() ? static_cast<size_t>(l.grid_axes[d]) : d;
    h.grid[axis] = grid[d];
  }
  const char* names[3] = {"x", "y", "z"};
  for (size_t a = 0; a < 3; ++a) {
    if (h.grid[a] < 1 || h.grid[a] > kMaxGrid[a]) {
      user_error("launch " + l.entry + ": " + std::to_string(h.grid[a]) + " blocks along " +
                 names[a] + "; a GPU launches 1 to " + std::to_string(kMaxGrid[a]) +
                 " there (check the sizes the grid is computed from)");
    }
  }
  std::vector<int> dims = l.thread_dims.empty() ? std::vector<int>{l.threads} : l.thread_dims;
  dims.resize(3, 1);
  h.block = {dims[0], dims[1], dims[2]};
  h.dynamic_shared_bytes = l.dynamic_shared_bytes;
  h.tensor_maps = l.tensor_maps;
  return h;
}

}  // namespace

std::vector<std::vector<int64_t>> launch_grids(const Kernel& kernel, const IntEnv& env) {
  std::vector<std::vector<int64_t>> grids;
  for (const Kernel& launch : launches_of(kernel)) {
    std::vector<int64_t>& g = grids.emplace_back();
    for (const Expr& e : launch->grid) g.push_back(eval_int(e, env));
  }
  return grids;
}

std::vector<HostLaunch> host_launches(const EmittedSource& source,
                                      const std::vector<std::vector<int64_t>>& grids) {
  std::vector<EmittedLaunch> launches = source.launches;
  if (launches.empty()) {
    launches.push_back({source.entry, source.grid, source.grid_axes, source.threads,
                        source.thread_dims, source.dynamic_shared_bytes, source.tensor_maps});
  }
  if (grids.size() != launches.size()) {
    user_error("kernel function " + source.entry + ": " + std::to_string(grids.size()) +
               " grids for " + std::to_string(launches.size()) +
               " launches; give one grid per launch, in launch order");
  }
  std::vector<HostLaunch> out;
  for (size_t i = 0; i < launches.size(); ++i) out.push_back(place(launches[i], grids[i]));
  return out;
}

}  // namespace tessel
