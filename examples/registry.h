// The built-in example kernels: each has parameters with defaults, a builder, and an
// independent reference (Eigen) that computes the expected outputs from the inputs.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/kernel.h"
#include "examples/reference_sample.h"
#include "interp/tile_interpreter.h"

namespace tessel {

/// A kernel parameter (set with -D name=value) and its default.
struct ParamSpec {
  std::string name;
  std::string default_value;
  std::string help;
};

/// A parameter value that is not of its kind or range (not an integer, not positive, not a data
/// type...): a mistake on the command line, which `tessel` reports as a usage error (exit 2).
class ParamError : public UserError {
 public:
  explicit ParamError(const std::string& message) : UserError(message) {}
};

/// Parameter values of one instantiation, with typed access and clear errors.
class Params {
 public:
  Params(std::string kernel, std::map<std::string, std::string> values)
      : kernel_(std::move(kernel)), values_(std::move(values)) {}
  /// The integer value of `name` (user error naming the kernel and parameter when not a number).
  int64_t integer(const std::string& name) const;
  /// As integer(), and at least 1 (user error naming the parameter otherwise): tile sizes,
  /// thread counts.
  int64_t positive(const std::string& name) const;
  DataType dtype(const std::string& name) const;
  bool boolean(const std::string& name) const;
  const std::string& text(const std::string& name) const;

 private:
  std::string kernel_;
  std::map<std::string, std::string> values_;
};

struct Example {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  std::vector<std::string> outputs;  ///< tensors the kernel writes and the reference computes
  /// The tolerance against the reference where the output dtype's default is too tight for the
  /// kernel's own rounding (the example's documentation derives it); unset: by dtype.
  std::optional<Tolerance> tolerance;
  /// Outputs whose reference also writes, into the tensor error_bound_name(output) of the
  /// output's shape and dtype, a bound on the kernel's rounding error derived per element (the
  /// example documents it): an element passes when |actual - expected| <= tolerance.atol +
  /// bound + tolerance.rtol * |expected|.
  std::vector<std::string> bounded_outputs;
  /// Outputs that start as zeros instead of NaN bytes (a kernel that accumulates into its output
  /// with atomics, as split-K does; the host zeroes it before the launch). `run --init` overrides.
  std::vector<std::string> zero_outputs;
  std::function<Kernel(const Params&)> build;
  /// Sizes of symbolic dimensions for a run (empty when the kernel has none).
  std::function<std::map<std::string, int64_t>(const Params&)> dynamic_dims;
  /// Fills the output tensors of `tensors` from its inputs.
  std::function<void(const Params&, TensorMap& tensors)> reference;
  /// Optional: the multiply-adds `reference` costs (an estimate), so that a sampled thread-level
  /// run can tell when the full reference would take longer than the run (tools/kernel_run.cpp).
  std::function<double(const Params&)> reference_macs;
  /// Optional: the reference on a sample of each output's elements for a sampled thread-level
  /// run (`--blocks`): the simulated blocks' outputs in full, a seeded sample of the others.
  std::function<std::vector<SampledOutput>(const Params&, const TensorMap& tensors,
                                           const ReferenceSampleRequest& request)>
      sampled_reference;
};

/// The name of the tensor in which a reference writes the error bound of `output`
/// (Example::bounded_outputs): "Output:bound".
inline std::string error_bound_name(const std::string& output) { return output + ":bound"; }

/// Every built-in example, in `tessel list` order.
const std::vector<Example>& examples();
/// The example called `name`, or nullptr.
const Example* find_example(const std::string& name);

/// Merges -D values into the example's defaults. User error (a usage error for the CLI) when a
/// name is not a parameter of the example.
Params make_params(const Example& example, const std::map<std::string, std::string>& defines);

// Registration functions, one per example file.
Example gemm_example();
Example gemm_transpose_b_example();
Example gemm_rs_example();
Example softmax_example();
Example elementwise_example();
Example dequant_gemm_example();
Example flash_attention_example();
/// The dequantising GEMM/GEMV family (examples/dequant_family.cpp), one example per format.
std::vector<Example> dequant_family_examples();
Example chunk_state_example();
Example chunk_scan_example();
Example linear_attention_example();
Example mla_decode_example();
Example mla_decode_split_example();
Example gemm_splitk_example();

}  // namespace tessel
