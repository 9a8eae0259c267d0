// Seeded runs of the examples against their references.
#include "examples/run_example.h"

#include <algorithm>

#include "core/error.h"

namespace tessel {

TensorMap make_tensors(const Kernel& kernel, const std::map<std::string, int64_t>& dims,
                       const std::vector<std::string>& outputs, uint64_t seed,
                       const std::vector<std::string>* only) {
  auto made = [&](const Buffer& b) {
    return !only || std::find(only->begin(), only->end(), b->name) != only->end();
  };
  TensorMap tensors;
  auto shapes = param_shapes(kernel, dims);
  // Refuse sizes the host cannot hold before allocating anything (host_memory_budget).
  const double limit = static_cast<double>(host_memory_budget());
  double total = 0;
  for (const Buffer& b : kernel->params) {
    if (!made(b)) continue;
    double elements = 1;
    for (int64_t e : shapes.at(b->name)) elements *= static_cast<double>(e);
    total += elements * b->dtype.storage_bits() / 8;
    if (total > limit) {
      user_error("kernel '" + kernel->name + "': its tensors would need " +
                 std::to_string(static_cast<int64_t>(total / (1 << 20))) + " MiB by '" + b->name +
                 "', more than three quarters of this machine's memory (" +
                 std::to_string(static_cast<int64_t>(limit / (1 << 20))) +
                 " MiB); choose smaller sizes with -D");
    }
  }
  uint64_t stream = 0;
  for (const Buffer& b : kernel->params) {
    if (!made(b)) {
      ++stream;
      continue;
    }
    bool is_output = std::find(outputs.begin(), outputs.end(), b->name) != outputs.end();
    const uint64_t stream_seed = seed * 1000003 + stream++;
    tensors.emplace(b->name, is_output
                                 ? HostTensor(b->dtype, shapes.at(b->name), 0xFF)
                                 : HostTensor::random(b->dtype, shapes.at(b->name), stream_seed));
  }
  return tensors;
}

ExampleRun run_example_tile(const Example& example, const Params& params, uint64_t seed,
                            TileRunOptions options) {
  ExampleRun run;
  run.kernel = example.build(params);
  std::map<std::string, int64_t> dims;
  if (example.dynamic_dims) dims = example.dynamic_dims(params);
  TensorMap tensors = make_tensors(run.kernel, dims, example.outputs, seed);
  for (const std::string& name : example.zero_outputs) {
    HostTensor& t = tensors.at(name);
    for (int64_t i = 0; i < t.size(); ++i) t.set(i, 0.0);
  }
  TensorMap expected = tensors;
  run.stats = run_tile_level(run.kernel, tensors, options);
  example.reference(params, expected);
  for (const std::string& name : example.outputs) {
    const HostTensor& actual = tensors.at(name);
    OutputCheck check{name,
                      {},
                      example.tolerance.value_or(Tolerance::for_dtype(actual.dtype())),
                      actual.shape(),
                      std::nullopt,
                      ""};
    auto bound = expected.find(error_bound_name(name));
    check.comparison = compare(actual, expected.at(name), check.tolerance,
                               bound == expected.end() ? nullptr : &bound->second);
    run.passed &= check.comparison.passed;
    run.max_abs_err = std::max(run.max_abs_err, check.comparison.max_abs_err);
    run.max_rel_err = std::max(run.max_rel_err, check.comparison.max_rel_err);
    run.outputs.push_back(std::move(check));
  }
  return run;
}

}  // namespace tessel
