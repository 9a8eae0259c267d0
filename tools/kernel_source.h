// Resolves the KERNEL argument of a command: a built-in example or a kernel file (.py in
// TileLang syntax), with its -D parameters, as one Example every command can build and run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/registry.h"

namespace tessel::cli {

/// A kernel ready to build: `example->build(params)` gives the IR either way. For a kernel file,
/// `example` is made from the file: its parameters are the enclosing def's parameters (defaults
/// from the file) plus one per symbolic dimension (T.dynamic: the size a run uses), `build`
/// parses the file, and the reference, outputs and dimension sizes are those of the built-in
/// named by `# tessel: reference=NAME`. Without that directive the file has no reference:
/// `outputs` are the file's (T.empty returns, out_idx) and `reference` changes nothing, so a run
/// executes the kernel (reporting every runtime error with its file:line:column) and checks no
/// values against a reference. Asserts of the file on symbolic sizes are checked by
/// `dynamic_dims`, before a run.
struct ResolvedKernel {
  const Example* example = nullptr;
  Params params;
  std::string path;                             ///< the kernel file; "" for a built-in
  bool has_reference = true;                    ///< false for a file without a reference
  std::shared_ptr<const Example> file_example;  ///< owns `example` for a kernel file
};

/// Parses `-D name=value` items (UsageError when one has no '=' or a name comes twice).
std::map<std::string, std::string> parse_defines(const std::vector<std::string>& defines);

/// The sizes of `k`'s symbolic dimensions for a run (from -D and the defaults; empty when it has
/// none). UsageError naming the dimension when a size is not a positive integer.
std::map<std::string, int64_t> run_dims(const ResolvedKernel& k);

/// True when KERNEL is a path rather than a built-in name: it ends in ".py" or contains a '/'.
bool is_kernel_path(const std::string& kernel);

/// The built-in example called `name`, or the kernel file at that path, with `defines` applied.
/// UsageError (exit 2) when there is no such kernel, the file cannot be read or is malformed
/// (syntax, unsupported construct, unknown name, wrong arguments), a -D name is not a parameter,
/// or the reference directive names no built-in or one whose tensors differ from the file's.
/// Errors of the kernel itself (an invalid gemm, a bad thread count) stay UserErrors (exit 1).
/// `choice` (--kernel NAME) picks one kernel of a file that defines several.
ResolvedKernel resolve_kernel(const std::string& name, const std::vector<std::string>& defines,
                              const std::string& choice = "");

/// As resolve_kernel for a kernel file whose contents are `text`; `origin` stands for the file's
/// path in messages (e.g. "<source>").
ResolvedKernel resolve_kernel_text(const std::string& text, const std::string& origin,
                                   const std::vector<std::string>& defines,
                                   const std::string& choice = "");

}  // namespace tessel::cli
