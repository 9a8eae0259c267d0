// Resolves the KERNEL argument of a command: a built-in example and its -D parameters.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "examples/registry.h"

namespace tessel::cli {

struct ResolvedKernel {
  const Example* example = nullptr;
  Params params;
};

/// Parses `-D name=value` items (UsageError when one has no '=').
std::map<std::string, std::string> parse_defines(const std::vector<std::string>& defines);

/// The example called `name` with `defines` applied. UsageError when there is no such kernel or
/// a -D name is not one of its parameters.
ResolvedKernel resolve_kernel(const std::string& name, const std::vector<std::string>& defines);

}  // namespace tessel::cli
