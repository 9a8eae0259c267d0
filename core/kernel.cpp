// Kernel validation.
#include "core/kernel.h"

#include <functional>
#include <numeric>

#include "core/expr_printer.h"

namespace tessel {

namespace {

constexpr int kMaxBlockThreads = 1024;
/// CUDA's and HIP's limits on blockDim.x, .y, .z.
constexpr int kMaxBlockDim[3] = {1024, 1024, 64};

std::string dims_text(const std::vector<int>& dims) {
  if (dims.size() == 1) return std::to_string(dims[0]);
  std::string s = "(";
  for (size_t d = 0; d < dims.size(); ++d) s += (d ? ", " : "") + std::to_string(dims[d]);
  return s + ")";
}

void check_thread_dims(const std::string& k, const std::vector<int>& dims) {
  if (dims.size() > 3) {
    user_error(k + ": threads= takes 1 to 3 extents (x, y, z), got " + std::to_string(dims.size()));
  }
  if (dims.size() == 1 && (dims[0] <= 0 || dims[0] > kMaxBlockThreads)) {
    user_error(k + ": threads=" + std::to_string(dims[0]) + " must be between 1 and " +
               std::to_string(kMaxBlockThreads) + " (the threads a block may have)");
  }
  static const char* kAxis[] = {"x", "y", "z"};
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] <= 0 || dims[d] > kMaxBlockDim[d]) {
      user_error(k + ": threads=" + dims_text(dims) + ": the " + kAxis[d] + " extent " +
                 std::to_string(dims[d]) + " must be between 1 and " +
                 std::to_string(kMaxBlockDim[d]));
    }
  }
}

}  // namespace

Expr thread_binding(const KernelNode& kernel, int dim) {
  internal_check(kernel.thread_var.defined() && dim >= 0 && dim < 3,
                 "thread_binding: no thread index along that dimension");
  if (dim >= static_cast<int>(kernel.thread_dims.size())) return make_int(0);  // extent 1
  Expr index = kernel.thread_var;
  int64_t below = 1;
  for (int d = 0; d < dim; ++d) below *= kernel.thread_dims[d];
  if (below > 1) index = floordiv(index, make_int(below));
  if (dim + 1 < static_cast<int>(kernel.thread_dims.size())) {
    index = floormod(index, make_int(kernel.thread_dims[dim]));
  }
  return index;
}

Kernel Kernel::make(KernelNode node) {
  std::string k = "kernel '" + node.name + "'";
  if (node.grid.empty() || node.grid.size() > 3) {
    user_error(k + ": T.Kernel takes 1 to 3 grid extents, got " + std::to_string(node.grid.size()));
  }
  for (size_t d = 0; d < node.grid.size(); ++d) {
    if (!node.grid[d].dtype().is_integral()) {
      user_error(k + ": grid extent " + std::to_string(d) + " (" + to_string(node.grid[d]) +
                 ") is not an integer");
    }
    if (auto c = as_const_int(node.grid[d]); c && *c <= 0) {
      user_error(k + ": grid extent " + std::to_string(d) + " is " + std::to_string(*c) +
                 "; every grid extent must be positive");
    }
  }
  if (node.thread_dims.empty()) node.thread_dims = {node.threads};
  check_thread_dims(k, node.thread_dims);
  node.threads =
      std::accumulate(node.thread_dims.begin(), node.thread_dims.end(), 1, std::multiplies<int>());
  if (node.threads > kMaxBlockThreads) {
    user_error(k + ": threads=" + dims_text(node.thread_dims) + " is " +
               std::to_string(node.threads) + " threads; a block may have at most " +
               std::to_string(kMaxBlockThreads));
  }
  for (const Buffer& b : node.params) {
    if (b->scope != Scope::kGlobal) {
      internal_error("kernel parameter '" + b->name + "' is not a global buffer");
    }
  }
  if (!node.body.defined()) node.body = SeqNode::make({});
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

std::vector<Kernel> launches_of(const Kernel& kernel) {
  if (kernel->launches.empty()) return {kernel};
  return kernel->launches;
}

Kernel make_launch_sequence(const std::string& name, std::vector<Buffer> params,
                            std::vector<Var> dynamic_vars, std::vector<Buffer> scratch,
                            std::vector<Kernel> launches, SourceLoc loc) {
  internal_check(!launches.empty(), "make_launch_sequence: no launch");
  std::vector<Buffer> expected = params;
  expected.insert(expected.end(), scratch.begin(), scratch.end());
  for (size_t i = 0; i < launches.size(); ++i) {
    internal_check(launches[i]->launches.empty(), "make_launch_sequence: a nested sequence");
    const auto& got = launches[i]->params;
    bool same = got.size() == expected.size();
    for (size_t p = 0; same && p < got.size(); ++p) same = got[p].get() == expected[p].get();
    if (!same) {
      internal_error("make_launch_sequence: launch " + std::to_string(i) + " of '" + name +
                     "' has other parameters than the kernel and its scratch");
    }
  }
  for (const Buffer& b : scratch) {
    if (b->scope != Scope::kGlobal) {
      internal_error("scratch tensor '" + b->name + "' of '" + name + "' is not global");
    }
  }
  KernelNode node;
  node.name = name;
  node.params = std::move(params);
  node.dynamic_vars = std::move(dynamic_vars);
  node.grid = {make_int(1)};
  node.block_vars = {Var("bx")};
  node.threads = launches[0]->threads;
  node.thread_dims = launches[0]->thread_dims;
  node.thread_var = launches[0]->thread_var;
  node.loc = loc;
  node.scratch = std::move(scratch);
  node.launches = std::move(launches);
  return Kernel::make(std::move(node));
}

Kernel with_launches(const Kernel& kernel, std::vector<Kernel> launches) {
  if (kernel->launches.empty()) {
    internal_check(launches.size() == 1, "with_launches: one launch expected");
    return launches[0];
  }
  internal_check(launches.size() == kernel->launches.size(), "with_launches: launch count");
  KernelNode node = *kernel;
  node.launches = std::move(launches);
  node.threads = node.launches[0]->threads;
  node.thread_dims = node.launches[0]->thread_dims;
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

std::string launch_label(const Kernel& kernel, size_t index) {
  const size_t n = kernel->launches.size();
  if (n == 0) return "kernel '" + kernel->name + "'";
  return "launch " + std::to_string(index + 1) + " of " + std::to_string(n) + " ('" +
         kernel->launches[index]->name + "')";
}

}  // namespace tessel
