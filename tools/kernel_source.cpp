// KERNEL argument resolution.
#include "tools/kernel_source.h"

#include "core/error.h"
#include "tools/cli.h"

namespace tessel::cli {

std::map<std::string, std::string> parse_defines(const std::vector<std::string>& defines) {
  std::map<std::string, std::string> out;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("-D " + d + ": expected NAME=VALUE, e.g. -D M=256");
    }
    out[d.substr(0, eq)] = d.substr(eq + 1);
  }
  return out;
}

ResolvedKernel resolve_kernel(const std::string& name, const std::vector<std::string>& defines) {
  const Example* example = find_example(name);
  if (!example) {
    std::string known;
    for (const Example& e : examples()) known += (known.empty() ? "" : ", ") + e.name;
    throw UsageError("no built-in kernel named '" + name + "'; the built-in kernels are " + known +
                     " ('tessel list' describes them)");
  }
  auto values = parse_defines(defines);
  try {
    return ResolvedKernel{example, make_params(*example, values)};
  } catch (const UserError& e) {
    throw UsageError(e.what());  // an unknown -D name is a command-line mistake
  }
}

}  // namespace tessel::cli
